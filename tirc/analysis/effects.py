"""Whether an expression reads memory or has an effect: the question passes ask before they
move, repeat or drop an expression."""

from __future__ import annotations

from tirc.ir import expr as E
from tirc.ir.functor import walk
from tirc.ir.intrinsics import Effect, lookup


def reads_no_memory(expr: object, exempt: tuple[str, ...] = ()) -> bool:
    """Whether `expr` neither loads a buffer nor calls anything but pure intrinsics; calls
    named in `exempt` (e.g. `tvm_access_ptr`, an address the caller reads through) are
    looked into like any other expression."""
    found = True

    def visit(node: object) -> None:
        nonlocal found
        if isinstance(node, E.BufferLoad):
            found = False
        elif isinstance(node, E.Call) and node.op not in exempt:
            intrinsic = lookup(node.op)
            found = found and intrinsic is not None and intrinsic.effect is Effect.PURE

    walk(expr, visit)
    return found
