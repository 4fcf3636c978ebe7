"""Calls: every `T.name(...)` names an intrinsic of the registry and passes it as many
arguments as it takes, so that the interpreter and every backend know what the call means;
every `Module.name(...)` names a function of the module.

Counts are the text's: an intrinsic whose result type is written as its first argument
(`T.reinterpret("float32", x)`) keeps that type in the Call's dtype, not among its args.
"""

from __future__ import annotations

from tirc.analysis.well_formed.checker import Checker
from tirc.diagnostics import Diagnostic
from tirc.ir import intrinsics
from tirc.ir.expr import Call, subroutine_name
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.intrinsics import FIXED_RESULTS, Intrinsic, Result


class CallChecker(Checker):
    def __init__(self, functions: frozenset[str] | None = None) -> None:
        super().__init__()
        self.functions = functions  # the module's, when the whole module is checked

    def visit_Call(self, call: Call) -> None:
        intrinsic = intrinsics.lookup(call.op)
        callee = subroutine_name(call)
        if callee is not None:
            if self.functions is not None and callee not in self.functions:
                self.error(f"the module has no function '{callee}' to call", call)
        elif intrinsic is None:
            self.error(f"unknown intrinsic 'T.{call.op}'", call)
        else:
            count = len(call.args) + (1 if has_dtype_argument(intrinsic) else 0)
            most = intrinsic.max_args
            if count < intrinsic.min_args or (most is not None and count > most):
                self.error(
                    f"T.{call.op} takes {arity(intrinsic.min_args, most)}, {count} given", call
                )
        self.generic_visit(call)


def has_dtype_argument(intrinsic: Intrinsic) -> bool:
    """Whether the text writes the result dtype as the first argument."""
    return intrinsic.result is Result.EXPLICIT and intrinsic.name not in FIXED_RESULTS


def arity(least: int, most: int | None) -> str:
    if most is None:
        return f"at least {least} argument{'s' if least != 1 else ''}"
    if least == most:
        return f"{least} argument{'s' if least != 1 else ''}"
    return f"{least} to {most} arguments"


def check_calls(func: PrimFunc) -> list[Diagnostic]:
    checker = CallChecker()
    checker.visit(func)
    return checker.diagnostics


def check_module_calls(mod: IRModule) -> list[Diagnostic]:
    """Calls of other functions (`Module.name(...)`) name a function of the module."""
    checker = CallChecker(frozenset(mod.names()))
    for _, func in mod.functions:
        checker.visit(func)
    return [d for d in checker.diagnostics if "the module has no function" in d.message]
