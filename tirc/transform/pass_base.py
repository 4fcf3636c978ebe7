"""What a pass is: a frozen dataclass whose fields are its options, with a `run` from module to
module and the dialects it expects and leaves. Passes are pure: they never mutate their input.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import ClassVar

from tirc.ir.function import IRModule, PrimFunc


class Dialect(enum.Enum):
    """How far lowering has got; each stage admits everything a later stage does."""

    S_TIR = "s-tir"  # blocks with iteration variables, init, match_buffer
    OPAQUE_BLOCKS = "tir-opaque-blocks"  # blocks without iteration variables or init
    TIR = "tir"  # no blocks: loops, AllocBuffer, N-d buffer accesses
    FLAT = "tir-flat"  # every buffer access has one index
    C_ABI = "tir-c-abi"  # and every function but a kernel has its C signature (no buffer_map)
    HOST_DEVICE = "tir-host-device"  # and GPU threads are launched in kernels only

    @property
    def rank(self) -> int:
        return list(Dialect).index(self)


@dataclasses.dataclass(frozen=True)
class ModulePass:
    """Base of every pass. Subclasses set `name`, `expects` and `leaves` and define `run`;
    their dataclass fields are the options a pipeline may set."""

    name: ClassVar[str] = ""
    expects: ClassVar[Dialect] = Dialect.S_TIR
    leaves: ClassVar[Dialect] = Dialect.S_TIR

    def run(self, module: IRModule) -> IRModule:
        raise NotImplementedError

    def spelling(self) -> str:
        """`name{opt=value,...}` with the options that differ from their defaults."""
        changed = [
            f"{field.name}={_option_text(getattr(self, field.name))}"
            for field in dataclasses.fields(self)
            if getattr(self, field.name) != field.default
        ]
        return f"{self.name}{{{','.join(changed)}}}" if changed else self.name


def _option_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


@dataclasses.dataclass(frozen=True)
class FunctionPass(ModulePass):
    """A pass that rewrites each function on its own."""

    def run(self, module: IRModule) -> IRModule:
        functions = tuple((name, self.run_function(func)) for name, func in module.functions)
        if all(new is old for (_, new), (_, old) in zip(functions, module.functions, strict=False)):
            return module
        return IRModule(functions, module.attrs, module.is_bare, span=module.span)

    def run_function(self, func: PrimFunc) -> PrimFunc:
        raise NotImplementedError
