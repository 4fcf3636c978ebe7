"""A host function's launch of a kernel of its module: split-host-device's
`T.call_extern("int32", "f_kernel", args...)`, where `f_kernel` is a `tirc.kernel` function.

The kernel runs to the end, all its threads, before the host goes on (as launches on one
CUDA stream do); its arguments bind its parameters in order. Faults inside it are reported
at the kernel's own nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tirc.diagnostics import DiagnosticError
from tirc.interp.threads.context import Code
from tirc.ir.abi import is_kernel
from tirc.ir.expr import Call
from tirc.ir.function import PrimFunc

if TYPE_CHECKING:
    from tirc.interp.threads.call import CallCompiler
    from tirc.interp.threads.function import CompiledFunction


def launched_kernel(compiler: CallCompiler, name: str) -> PrimFunc | None:
    """The kernel function `name` of the module being run, if it has one."""
    module = compiler.ctx.module
    if module is None or name not in module:
        return None
    func = module[name]
    return func if is_kernel(func) else None


def compile_launch(compiler: CallCompiler, call: Call, name: str, kernel: PrimFunc) -> Code:
    from tirc.interp.threads.function import compile_function

    args = [compiler.exprs.compile(arg) for arg in call.args[1:]]  # type: ignore[arg-type]
    if len(args) != len(kernel.params):
        raise DiagnosticError.at(
            call.span,
            f"{name} takes {len(kernel.params)} arguments, but the call gives {len(args)}",
        )
    compiled = compile_function(kernel, name, compiler.ctx.module)
    launch = compiler.ctx.constant(_Launch(compiled), f"launch_{name}")
    return Code(f"{launch}({', '.join(arg.text for arg in args)})")


@dataclass(frozen=True)
class _Launch:
    compiled: CompiledFunction

    def __call__(self, *args: object) -> int:
        from tirc.interp.runner import execute

        execute(self.compiled, list(args))
        return 0
