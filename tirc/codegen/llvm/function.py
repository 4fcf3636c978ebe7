"""One PrimFunc as one exported LLVM function with the C ABI of `tirc.codegen.abi`: buffer
pointers carry noalias (when the function says `tirx.noalias`), their declared alignment and,
for constant shapes, how many bytes may be read."""

from __future__ import annotations

from llvmlite import ir

from tirc.codegen.abi import ParamKind, function_abi
from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.casts import emit_cast
from tirc.codegen.llvm.emitter import Emitter
from tirc.codegen.llvm.stmt import free_all
from tirc.codegen.llvm.streaming import emit_fence, streaming_buffers
from tirc.ir.function import PrimFunc
from tirc.transform.passes.make_c_abi import c_abi_function

FAILED = -1


def emit_function(
    module: ir.Module, symbol: str, func: PrimFunc, exported: bool, cache_bytes: int = 0
) -> ir.Function:
    """`cache_bytes`: the target's last-level cache, above which outputs may stream."""
    func = c_abi_function(func)  # a no-op after the pipeline's make-c-abi
    abi = function_abi(func)
    arg_types = [T.value_type(param.abi_dtype) for param in abi]
    function = ir.Function(module, ir.FunctionType(T.I32, arg_types), symbol)
    if not exported:
        function.linkage = "internal"
    noalias = bool(func.attrs.get("tirx.noalias", False))
    function.append_basic_block("entry")
    builder = ir.IRBuilder(function.append_basic_block("start"))

    def fail(em: Emitter) -> None:
        em.builder.ret(ir.Constant(T.I32, FAILED))

    em = Emitter(module, function, builder, fail, symbol=symbol)
    em.streaming = streaming_buffers(func, cache_bytes)
    for param, arg in zip(abi, function.args, strict=True):
        arg.name = param.name
        if param.kind is ParamKind.BUFFER:
            assert param.buffer is not None
            if noalias:
                arg.add_attribute("noalias")
            arg.attributes.align = param.buffer.data_alignment
            em.alignment[param.buffer.data] = param.buffer.data_alignment
            size = T.constant_bytes(param.buffer)
            if size:
                arg.attributes.dereferenceable = size
            em.env[param.var] = arg
            em.env[param.buffer.data] = arg
        elif param.kind is ParamKind.HANDLE:
            em.env[param.var] = arg
        else:
            em.env[param.var] = emit_cast(builder, arg, param.abi_dtype, param.dtype)
    em.frees.append([])
    em.stmt(func.body)
    free_all(em, em.frees.pop())
    if not em.builder.block.is_terminated:
        em.builder.ret(ir.Constant(T.I32, 0))
    if em.streamed:
        emit_fence(module, function)
    em.finish()
    return function
