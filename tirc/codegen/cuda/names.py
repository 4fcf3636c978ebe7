"""C identifiers for IR variables: the source name where it is free, a numbered one otherwise.

Names are unique per kernel or launcher, so one scope never declares a name twice and a
variable never shadows another that the code after it still needs.
"""

from __future__ import annotations

import re

from tirc.ir.expr import Var

# C++ keywords and CUDA built-ins that a source name must not become
RESERVED = frozenset(
    """auto bool break case char const continue default do double else enum extern float for
    goto if inline int long register return short signed sizeof static struct switch typedef
    union unsigned void volatile while class delete new namespace operator private protected
    public template this throw try catch typename using virtual true false nullptr asm
    threadIdx blockIdx blockDim gridDim warpSize half nv_bfloat16 stream main min max""".split()
)
_INVALID = re.compile(r"[^A-Za-z0-9_]")


class NameTable:
    """Var -> identifier, assigned on first request."""

    def __init__(self, taken: frozenset[str] = frozenset()) -> None:
        self.names: dict[Var, str] = {}
        self.used: set[str] = set(RESERVED) | set(taken)

    def __call__(self, var: Var) -> str:
        name = self.names.get(var)
        if name is None:
            name = self.fresh(var.name)
            self.names[var] = name
        return name

    def fresh(self, hint: str) -> str:
        """A new identifier based on `hint`, never handed out before."""
        base = _INVALID.sub("_", hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        if base.startswith("__"):
            base = base.lstrip("_") or "v"  # names with __ are reserved to the implementation
        name, number = base, 0
        while name in self.used:
            number += 1
            name = f"{base}_{number}"
        self.used.add(name)
        return name
