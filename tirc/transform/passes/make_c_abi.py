"""make-c-abi: each function's signature becomes its C signature (docs/abi.md), written out.

Expects flat tir; leaves flat tir in which no function has a buffer_map. Every buffer
parameter becomes a typed pointer parameter of the same name (`A: T.handle("float32")`: C's
`float *A`) that the body declares its buffer over (`A_1 = T.decl_buffer(shape, data=A)`), and
every shape, stride or offset variable that no parameter gives becomes a parameter after the
others, in order of first appearance (named `BUFFER_VAR` when its own name is taken). Integer
and bool parameters are passed as C `int64_t` and truncated to their own type on entry, as
docs/abi.md says; float32 and float64 ones as `float` and `double`; a parameter of any other
scalar type has no C spelling and is an error. Kernels (split-host-device's `tirc.kernel`
functions) keep their device signature. A function already in this form is left as it is.

    @T.prim_func                                   @T.prim_func
    def f(a: T.handle):                            def f(a: T.handle("float32", "global"),
        A = T.match_buffer(a, (n,), "float32")  ->       n: T.int32):
        A[0] = T.float32(1)                            A = T.decl_buffer((n,), data=a)
                                                       A[0] = T.float32(1)
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.abi import has_c_type, is_kernel, layout_vars
from tirc.ir.buffer import Buffer
from tirc.ir.function import PrimFunc
from tirc.ir.substitute import rebind
from tirc.transform.pass_base import Dialect, FunctionPass


@dataclass(frozen=True)
class MakeCAbi(FunctionPass):
    name = "make-c-abi"
    expects = Dialect.FLAT
    leaves = Dialect.C_ABI

    def run_function(self, func: PrimFunc) -> PrimFunc:
        return func if is_kernel(func) else c_abi_function(func)


def c_abi_function(func: PrimFunc) -> PrimFunc:
    """`func` with its C signature explicit; `func` itself when it already is."""
    for param in func.params:
        if func.buffer_of(param) is None and not param.dtype.is_handle:
            if not has_c_type(param.dtype):
                raise DiagnosticError.at(
                    param.span,
                    f"the C ABI has no way to pass a {param.dtype} scalar ({param.name})",
                )
    if not func.buffer_map:
        return func
    renamed: dict[E.Var, E.Var] = {}
    params: list[E.Var] = []
    declared: list[Buffer] = []
    for param in func.params:
        buffer = func.buffer_of(param)
        if buffer is None:
            params.append(param)
            continue
        handle = buffer.data
        if handle.name != param.name or handle.pointer is None:
            pointer = handle.pointer or E.PointerType(buffer.dtype, buffer.scope)
            handle = E.Var(param.name, dt.HANDLE, pointer, span=param.span)
            renamed[buffer.data] = handle
        params.append(handle)
        declared.append(buffer)
    names = {param.name for param in params}
    given: set[E.Var] = set(func.params) | {buffer.data for buffer in declared}
    for buffer in declared:
        for var in layout_vars(buffer):
            if var in given:
                continue
            given.add(var)
            if var.name in names:
                fresh = E.Var(f"{buffer.name}_{var.name}", var.dtype, var.pointer, var.is_size_var)
                renamed[var] = fresh
                var = fresh
            names.add(var.name)
            params.append(var)
    declarations = [S.DeclBuffer(buffer, buffer.data) for buffer in declared]
    body = rebind(S.seq(*declarations, func.body), renamed)
    return PrimFunc(
        tuple(params),
        (),
        body,
        func.ret_type,
        func.attrs,
        func.is_s_tir,
        func.is_private,
        span=func.span,
    )
