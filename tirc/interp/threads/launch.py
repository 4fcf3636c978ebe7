"""A host function's launch of a kernel of its module: split-host-device's
`T.call_extern("int32", "f_kernel", args...)`, where `f_kernel` is a `tirc.kernel` function.

The kernel runs to the end, all its threads, before the host goes on (as launches on one
CUDA stream do); its arguments bind its parameters in order. Faults inside it are reported
at the kernel's own nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tirc.diagnostics import DiagnosticError
from tirc.interp.threads.compilers import Calls
from tirc.interp.threads.context import Code
from tirc.ir.abi import is_kernel, returned_type
from tirc.ir.expr import Call, PrimExpr
from tirc.ir.function import PrimFunc


def launched_kernel(compiler: Calls, name: str) -> PrimFunc | None:
    """The function `name` of the module being run, if it has one that an extern call can
    launch: a kernel, or a function without buffer parameters (split-host-device's for the
    CPU, `-> T.int32` returning its status)."""
    module = compiler.ctx.module
    if module is None or name not in module:
        return None
    func = module[name]
    return func if is_kernel(func) or not func.buffer_map else None


def _arguments(
    compiler: Calls, call: Call, name: str, func: PrimFunc, given: Sequence[PrimExpr]
) -> list[Code]:
    """The call's arguments to `func`, compiled; a located error where their count is not its
    parameters'."""
    args = [compiler.exprs.compile(arg) for arg in given]
    if len(args) != len(func.params):
        raise DiagnosticError.at(
            call.span, f"{name} takes {len(func.params)} arguments, but the call gives {len(args)}"
        )
    return args


def compile_launch(compiler: Calls, call: Call, name: str, kernel: PrimFunc) -> Code:
    args = _arguments(compiler, call, name, kernel, call.expr_args(1))
    launcher = compiler.ctx.launcher
    if launcher is None:
        raise DiagnosticError.at(call.span, f"{name} is a kernel: run the module to launch it")
    launch = compiler.ctx.constant(launcher(kernel, name, compiler.ctx.module), f"launch_{name}")
    return Code(f"{launch}({', '.join(arg.text for arg in args)})")


def compile_subroutine_call(compiler: Calls, call: Call, name: str) -> Code:
    """`Module.f(args...)`: function `f` of the module runs on `args` (pointers and scalars)
    until it returns, as a kernel's launch does; the call's value is what `f` returns
    (`T.ret`), or 0 for a function that returns none."""
    module = compiler.ctx.module
    if module is None or name not in module:
        raise DiagnosticError.at(call.span, f"the module has no function {name} to call")
    callee = module[name]
    if callee.buffer_map:
        raise DiagnosticError.at(
            call.span,
            f"the interpreter does not call {name}, which takes buffers (a call passes pointers "
            "and scalars)",
        )
    result = returned_type(callee)
    if not call.dtype.is_void and result != call.dtype:
        returns = f"returns {result}" if result is not None else "returns no value"
        raise DiagnosticError.at(
            call.span, f"the call takes a {call.dtype} from {name}, which {returns}"
        )
    args = _arguments(compiler, call, name, callee, call.expr_args())
    launcher = compiler.ctx.launcher
    if launcher is None:
        raise DiagnosticError.at(call.span, f"run the module to call {name}")
    compiled: list[Callable[..., object]] = []

    def run(*values: object) -> object:
        # compiled at the first call, not with the caller: a function may call itself
        if not compiled:
            compiled.append(launcher(callee, name, module))
        return compiled[0](*values)

    function = compiler.ctx.constant(run, f"call_{name}")
    return Code(f"{function}({', '.join(arg.text for arg in args)})")
