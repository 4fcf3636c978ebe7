"""One PrimFunc as one exported LLVM function with the C ABI of `tirc.codegen.abi`: buffer
pointers carry noalias (when the function says `tirx.noalias`), their declared alignment and,
for constant shapes, how many bytes may be read. The entry checks that alignment first and
returns MISALIGNED when a pointer misses it, rather than fault on an aligned vector load. The
result is an int32 status, or for a function that returns a value (`T.ret`) that value."""

from __future__ import annotations

from collections.abc import Mapping

from llvmlite import ir

from tirc.codegen.abi import AbiParam, ParamKind, function_abi

# The rule modules fill the emitter's EXPR_RULES and STMT_RULES as they load; this is the one
# place that loads them.
from tirc.codegen.llvm import calls, expr, memory, stmt  # noqa: F401
from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.casts import emit_cast
from tirc.codegen.llvm.emitter import Emitter, free_all
from tirc.codegen.llvm.register_tile import RegisterFile
from tirc.codegen.llvm.streaming import emit_fence, streaming_buffers
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir.abi import has_c_type, returned_type
from tirc.ir.dtype import DataType
from tirc.ir.function import PrimFunc

FAILED = -1  # an assert of the program failed
MISALIGNED = -2  # a buffer pointer is not at its buffer's data_alignment


def emit_function(
    module: ir.Module,
    symbol: str,
    func: PrimFunc,
    exported: bool,
    cache_bytes: int = 0,
    registers: RegisterFile | None = None,
    symbols: Mapping[str, str] | None = None,
    assume_aligned: bool = True,
    results: Mapping[str, DataType | None] | None = None,
) -> ir.Function:
    """`cache_bytes`: the target's last-level cache, above which outputs may stream;
    `registers`: its vector registers, which accumulator tiles are fitted to; `symbols`:
    those of the module's functions, which its subroutine calls call, and `results` the
    types they return (ir.abi.returned_type). Unless
    `assume_aligned` (a subroutine's caller passes pointers into buffers, `&A[1]`), the code
    assumes no more of a buffer pointer's alignment than its element type's."""
    abi = function_abi(func)
    result = function_result(func)
    arg_types = [T.value_type(param.abi_dtype) for param in abi]
    checked = [i for i, param in enumerate(abi) if assume_aligned and _needs_check(param)]
    function_type = ir.FunctionType(T.I32 if result is None else T.value_type(result), arg_types)
    function = ir.Function(module, function_type, f"{symbol}.aligned" if checked else symbol)
    _extend_result(function, result)
    if checked:
        function.linkage = "internal"
        function.attributes.add("noinline")  # inlined, the pointers' alignment would be lost
        _emit_entry(module, symbol, function, abi, checked, exported, result)
    elif not exported:
        function.linkage = "internal"
    noalias = bool(func.attrs.get("tirx.noalias", False))
    function.append_basic_block("entry")
    builder = ir.IRBuilder(function.append_basic_block("start"))

    def fail(em: Emitter) -> None:
        em.builder.ret(result_constant(result, FAILED))

    em = Emitter(module, function, builder, fail, symbol=symbol, result=result)
    em.streaming = streaming_buffers(func, cache_bytes)
    em.registers = registers
    em.symbols = symbols or {}
    em.results = results or {}
    for param, arg in zip(abi, function.args, strict=True):
        arg.name = param.name
        if param.kind is ParamKind.BUFFER:
            assert param.buffer is not None
            if noalias:
                arg.add_attribute("noalias")
            if assume_aligned:
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
        em.builder.ret(result_constant(result, 0))
    if em.streamed:
        emit_fence(module, function)
    em.finish()
    return function


def function_result(func: PrimFunc) -> DataType | None:
    """The type of the C result of a function that returns a value (`T.ret`), its own C type
    (docs/abi.md); None for one whose result is the int32 status."""
    result = returned_type(func)
    if result is not None and not has_c_type(result):
        raise DiagnosticError.at(
            func.span,
            f"the C ABI has no way to return a {result} value: a function compiled for the CPU "
            "returns an integer, a bool, a float32 or a float64",
        )
    return result


def result_constant(result: DataType | None, status: int) -> ir.Constant:
    """A status (0, FAILED, MISALIGNED) as the function returns it: an int32, or converted to
    the type of the value it returns (-1 as a uint8 is 255, as a bool true, as a float -1.0)."""
    if result is None:
        return ir.Constant(T.I32, status)
    if result.is_float:
        return ir.Constant(T.value_type(result), float(status))
    if result.is_bool:
        return ir.Constant(T.I1, int(status != 0))
    return ir.Constant(T.value_type(result), status)


def _extend_result(function: ir.Function, result: DataType | None) -> None:
    """A narrow integer result is extended to a register as C's callers expect (clang's
    zeroext and signext)."""
    if result is not None and not result.is_float and result.bits < 32:
        function.return_value.add_attribute("signext" if result.is_int else "zeroext")


def _needs_check(param: AbiParam) -> bool:
    """Whether the code assumes more of a buffer pointer's alignment than C's own for its
    element type."""
    if param.kind is not ParamKind.BUFFER or param.buffer is None:
        return False
    return param.buffer.data_alignment > T.element_bytes(param.buffer.dtype.element)


def _emit_entry(
    module: ir.Module,
    symbol: str,
    body: ir.Function,
    abi: list[AbiParam],
    checked: list[int],
    exported: bool,
    result: DataType | None,
) -> None:
    """The function `symbol`: returns MISALIGNED when a buffer pointer is not at its buffer's
    `data_alignment`, else calls `body`, which assumes it (aligned vector loads fault on a
    misaligned address). The check cannot sit in `body` itself: LLVM folds it away there,
    knowing the pointers aligned. It costs a few instructions per buffer and a call per call,
    nothing measurable on the bench kernels."""
    entry = ir.Function(module, body.function_type, symbol)
    _extend_result(entry, result)
    if not exported:
        entry.linkage = "internal"
    for param, arg in zip(abi, entry.args, strict=True):
        arg.name = param.name
    builder = ir.IRBuilder(entry.append_basic_block("entry"))
    misaligned: ir.Value = ir.Constant(T.I1, 0)
    for position in checked:
        buffer = abi[position].buffer
        assert buffer is not None
        address = builder.ptrtoint(entry.args[position], T.I64)
        low = builder.and_(address, ir.Constant(T.I64, buffer.data_alignment - 1))
        misaligned = builder.or_(misaligned, builder.icmp_unsigned("!=", low, T.zero(dt.INT64)))
    fail, call = entry.append_basic_block("misaligned"), entry.append_basic_block("call")
    builder.cbranch(misaligned, fail, call)
    builder.position_at_end(fail)
    builder.ret(result_constant(result, MISALIGNED))
    builder.position_at_end(call)
    result = builder.call(body, list(entry.args))
    builder.ret(result)
