"""Calls of intrinsics (`tirc.ir.intrinsics`), one rule per name.

`if_then_else` evaluates only the branch it takes; math functions compute in float64 and
round to the call's dtype; GPU collectives (barriers, warp shuffles, all-reduce) become
`yield` points of the thread coroutine (see scheduler); anything else must be registered in
`tirc.interp.semantics.extensions`.
"""

from __future__ import annotations

from collections.abc import Callable

from tirc.diagnostics import DiagnosticError
from tirc.interp.memory.storage import Pointer, Storage, access_type
from tirc.interp.semantics import arith, interval
from tirc.interp.semantics.bits import reinterpret
from tirc.interp.semantics.extensions import INTRINSICS, extern_function
from tirc.interp.semantics.llvm_intrinsics import llvm_intrinsic_of
from tirc.interp.semantics.math_functions import LANEWISE, lane_function, nextafter
from tirc.interp.semantics.operators import BITWISE, DIVISIONS, SHIFTS
from tirc.interp.semantics.warp import SHUFFLES
from tirc.interp.threads.allreduce import compile_allreduce
from tirc.interp.threads.cluster_calls import RULES as CLUSTER_RULES
from tirc.interp.threads.compilers import Exprs
from tirc.interp.threads.context import Code, Context
from tirc.interp.threads.launch import compile_launch, compile_subroutine_call, launched_kernel
from tirc.interp.threads.ptx_calls import RULES as PTX_RULES
from tirc.interp.threads.scheduler import WARP_OP, sync_warp
from tirc.interp.threads.tma_calls import RULES as TMA_RULES
from tirc.interp.threads.wmma_calls import RULES as WMMA_RULES
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType, parse_dtype
from tirc.ir.expr import BufferLoad, Call, Cast, Mod, PrimExpr, StringImm, subroutine_name
from tirc.ir.integer import int_range

CallRule = Callable[["CallCompiler", Call], Code]


class CallCompiler:
    def __init__(self, ctx: Context, exprs: Exprs):
        self.ctx = ctx
        self.exprs = exprs

    def compile(self, call: Call) -> Code:
        rule = _RULES.get(call.op)
        if rule is not None:
            return rule(self, call)
        callee = subroutine_name(call)
        if callee is not None:
            return compile_subroutine_call(self, call, callee)
        if call.op in ("call_llvm_intrin", "call_llvm_pure_intrin"):
            return self.runtime_call(call, llvm_intrinsic_of(call), "llvm_intrinsic")
        if call.op in INTRINSICS:
            return self.runtime_call(call, INTRINSICS[call.op], call.op)
        raise DiagnosticError.at(call.span, f"the interpreter has no implementation of T.{call.op}")

    def args(self, call: Call) -> list[Code]:
        return [self.argument(arg) for arg in call.args]

    def argument(self, arg: object) -> Code:
        if isinstance(arg, PrimExpr):
            return self.exprs.compile(arg)
        if isinstance(arg, DataType):
            return Code(f"_dtype({str(arg)!r})")
        if isinstance(arg, Buffer):
            return Code(self.ctx.names.get(arg.data, "None"))
        return Code(repr(arg))

    def runtime_call(self, call: Call, function: Callable[..., object], hint: str) -> Code:
        name = self.ctx.constant(function, hint)
        args = ", ".join(code.text for code in self.args(call))
        if not call.dtype.is_float:
            return Code(f"{name}({args})")
        if call.dtype.lanes == 1:
            return self.exprs.round_float(f"{name}({args})", call.dtype)
        lane = self.ctx.temp()
        rounded = self.exprs.round_float(lane, call.dtype.element)
        return Code(self.ctx.lanes_of(rounded.text, lane, f"{name}({args})"))

    def lanewise(self, call: Call, lane: Callable[[list[Code], DataType], Code]) -> Code:
        """Applies a scalar rule to each lane when the arguments are vectors."""
        args = self.args(call)
        arg_types = [a.dtype for a in call.args if isinstance(a, PrimExpr)]
        if all(t.is_scalar for t in arg_types):
            return lane(args, arg_types[0] if arg_types else call.dtype)
        names = [self.ctx.temp() for _ in args]
        lanes = call.dtype.lanes
        sources = [
            code.text if t.is_vector else f"({code.text},) * {lanes}"
            for code, t in zip(args, arg_types, strict=True)
        ]
        inner = lane([Code(n) for n in names], arg_types[0].element)
        targets = ", ".join(names) + ("," if len(names) == 1 else "")
        return Code(self.ctx.lanes_of(inner.text, targets, f"zip({', '.join(sources)})"))


def _lanewise(compiler: CallCompiler, call: Call) -> Code:
    """An intrinsic of math_functions.LANEWISE: its one-lane function applied to each lane."""
    first = call.args[0]
    assert isinstance(first, PrimExpr)  # the parser checks intrinsic arguments
    source, result = first.dtype.element, call.dtype.element
    if call.op == "fabs" and source.is_integer:
        return compiler.lanewise(
            call, lambda a, t: compiler.exprs.fit_int(f"abs({a[0].text})", (None, None), t)
        )
    name = compiler.ctx.constant(lane_function(call.op, source, result), call.op)

    def lane(args: list[Code], dtype: DataType) -> Code:
        text = f"{name}({', '.join(a.text for a in args)})"
        return (
            compiler.exprs.round_float(text, result)
            if result.is_float
            else Code(text, *int_range(result))
        )

    return compiler.lanewise(call, lane)


def _fmod(compiler: CallCompiler, call: Call) -> Code:
    modulo = DIVISIONS[Mod]  # fmod is Mod: C's remainder, on integers and on floats

    def lane(args: list[Code], dtype: DataType) -> Code:
        if dtype.is_integer:
            site = compiler.ctx.site(call, "fmod")
            helper = compiler.ctx.constant(modulo.one_lane, "truncmod")
            return Code(f"{helper}({args[0].text}, {args[1].text}, {site})")
        helper = compiler.ctx.constant(modulo.float_one_lane, "fmod")
        text = f"{helper}({args[0].text}, {args[1].text})"
        return compiler.exprs.round_float(text, call.dtype.element)

    return compiler.lanewise(call, lane)


def _nextafter(compiler: CallCompiler, call: Call) -> Code:
    name = compiler.ctx.constant(nextafter(call.dtype.element), "nextafter")
    return compiler.lanewise(call, lambda args, _: Code(f"{name}({args[0].text}, {args[1].text})"))


def _shift(symbol: str) -> CallRule:
    """Shifts by a negative amount or by the bit width or more are undefined: an error."""

    def rule(compiler: CallCompiler, call: Call) -> Code:
        def lane(args: list[Code], dtype: DataType) -> Code:
            amount = args[1]
            if (
                amount.low is None
                or amount.high is None
                or not 0 <= amount.low <= amount.high < dtype.bits
            ):
                site = compiler.ctx.site(call, "shift")
                first, later = compiler.exprs.atom(amount)
                message = repr(arith.bad_shift(dtype.bits))
                amount = Code(
                    f"({later} if 0 <= {first} < {dtype.bits} else _fault({site}, {message}))",
                    0,
                    dtype.bits - 1,
                )
            text = f"({args[0].text} {symbol} {amount.text})"
            if symbol == ">>":
                return Code(text, *int_range(dtype))
            return compiler.exprs.fit_int(text, (None, None), dtype)

        return compiler.lanewise(call, lane)

    return rule


def _bitwise(symbol: str) -> CallRule:
    def rule(compiler: CallCompiler, call: Call) -> Code:
        def lane(args: list[Code], dtype: DataType) -> Code:
            # on two's-complement values in range, &, | and ^ stay in range
            return Code(f"({args[0].text} {symbol} {args[1].text})", *int_range(dtype))

        return compiler.lanewise(call, lane)

    return rule


def _bitwise_not(compiler: CallCompiler, call: Call) -> Code:
    def lane(args: list[Code], dtype: DataType) -> Code:
        if dtype.is_bool:
            return Code(f"(not {args[0].text})", 0, 1)
        if dtype.is_uint:
            return Code(f"({args[0].text} ^ {(1 << dtype.bits) - 1})", *int_range(dtype))
        return Code(f"(~{args[0].text})", *int_range(dtype))

    return compiler.lanewise(call, lane)


def _if_then_else(compiler: CallCompiler, call: Call) -> Code:
    operands = call.expr_args()
    condition, true_value, false_value = (compiler.exprs.compile(a) for a in operands)
    if call.dtype.is_scalar and operands[0].dtype.is_scalar:
        value = interval.union(
            (true_value.low, true_value.high), (false_value.low, false_value.high)
        )
        return Code(f"({true_value.text} if {condition.text} else {false_value.text})", *value)
    lanes = call.dtype.lanes
    sources = [
        code.text if arg.dtype.is_vector else f"({code.text},) * {lanes}"
        for code, arg in zip((condition, true_value, false_value), operands, strict=True)
    ]
    if operands[0].dtype.is_scalar:
        # one condition for every lane: only the vector it picks is evaluated (its loads may
        # be out of bounds exactly when it is not picked)
        return Code(f"({sources[1]} if {condition.text} else {sources[2]})")
    # per lane, a vector if_then_else still needs both vectors: evaluated whole, then picked
    c, t, f = compiler.ctx.temp(), compiler.ctx.temp(), compiler.ctx.temp()
    return Code(
        compiler.ctx.lanes_of(
            f"({t} if {c} else {f})", f"{c}, {t}, {f}", f"zip({', '.join(sources)})"
        )
    )


def _identity(compiler: CallCompiler, call: Call) -> Code:
    return compiler.exprs.compile(call.expr_arg(0))


def _true(compiler: CallCompiler, call: Call) -> Code:
    return Code("True", 1, 1)


def _zero(compiler: CallCompiler, call: Call) -> Code:
    return compiler.exprs.literal(0, call.dtype)


def _reinterpret(compiler: CallCompiler, call: Call) -> Code:
    value_arg = call.expr_arg(-1)
    source = value_arg.dtype
    if source.is_handle or call.dtype.is_handle:
        return compiler.exprs.compile(value_arg)
    function = compiler.ctx.constant(reinterpret, "reinterpret")
    value = compiler.exprs.compile(value_arg)
    types = [compiler.ctx.constant(dtype, str(dtype)) for dtype in (source, call.dtype)]
    code = f"{function}({value.text}, {', '.join(types)})"
    if call.dtype.is_integer:
        return Code(code, *int_range(call.dtype.element))
    return Code(code)


def _extern(compiler: CallCompiler, call: Call) -> Code:
    """call_extern("float32", "expf", x): C math by name, a registered Python function, or
    the launch of a kernel function of the module (see launch)."""
    name_arg = call.args[0]
    if not isinstance(name_arg, StringImm):
        raise DiagnosticError.at(
            call.span, "the first argument of an extern call must name the function"
        )
    name = name_arg.value
    kernel = launched_kernel(compiler, name)
    if kernel is not None:
        return compile_launch(compiler, call, name, kernel)
    operands = call.expr_args(1)
    args = [compiler.exprs.compile(a) for a in operands]
    arg_types = [a.dtype for a in operands]
    implementation = extern_function(name, arg_types, call.dtype)
    if implementation is not None:
        function = compiler.ctx.constant(implementation, name)
        text = f"{function}({', '.join(a.text for a in args)})"
        return compiler.exprs.round_float(text, call.dtype) if call.dtype.is_float else Code(text)
    raise DiagnosticError.at(
        call.span,
        f"the interpreter does not know the extern function '{name}' "
        "(register one in tirc.interp.EXTERNS)",
    )


def _type_annotation(compiler: CallCompiler, call: Call) -> Code:
    return Code(f"_dtype({str(call.dtype)!r})")


def _access_ptr(compiler: CallCompiler, call: Call) -> Code:
    """tvm_access_ptr(type, data, offset, extent, rw): a pointer `offset` elements into data."""
    element = pointer_element(call)
    data = compiler.argument(call.args[1])
    offset = compiler.argument(call.args[2])
    function = compiler.ctx.constant(_pointer_into, "pointer_into")
    return Code(f"{function}({data.text}, {offset.text}, _dtype({str(element)!r}))")


def pointer_element(access_ptr: Call) -> DataType:
    """The element type a T.tvm_access_ptr counts its offset in: its T.type_annotation's, else
    float32 (in both models)."""
    type_arg = access_ptr.args[0]
    return type_arg.dtype if isinstance(type_arg, Call) else parse_dtype("float32")


def _pointer_into(handle: Pointer | Storage, offset: int, dtype: DataType) -> Pointer:
    size = access_type(dtype).itemsize
    if isinstance(handle, Pointer):
        return Pointer(handle.storage, handle.byte_offset + offset * size, dtype)
    return Pointer(handle, offset * size, dtype)


def _pointer_at(handle: Pointer | Storage, offset: int, dtype: DataType) -> Pointer:
    """A pointer `offset` elements from the start of the storage `handle` points into (an
    element offset of a view counts the view's own start already)."""
    storage = handle.storage if isinstance(handle, Pointer) else handle
    return Pointer(storage, offset * access_type(dtype).itemsize, dtype)


def _address_of(compiler: CallCompiler, call: Call) -> Code:
    load = call.args[0]
    if not isinstance(load, BufferLoad):
        raise DiagnosticError.at(call.span, "T.address_of takes a buffer element")
    offset, view = compiler.exprs.access.element_offset(
        load.buffer, load.indices, load, "address of"
    )
    layout = compiler.exprs.access.layout(load.buffer)
    handle = compiler.ctx.names.get(layout.data, "None")
    function = compiler.ctx.constant(_pointer_at, "pointer_at")
    return Code(f"{function}({handle}, {offset.text}, _dtype({str(load.buffer.dtype.element)!r}))")


def _storage_sync(compiler: CallCompiler, call: Call) -> Code:
    """__syncthreads (or __syncwarp for "warp"): a barrier between the threads of a block (of a
    warp); nothing outside a kernel."""
    if compiler.ctx.kernel is None:
        return Code("None")
    scope = call.args[0] if call.args else None
    if isinstance(scope, StringImm) and scope.value == "warp":
        # __syncwarp: a collective of the threads of one warp
        site = compiler.ctx.site(call, "warp barrier")
        resolve = compiler.ctx.constant(sync_warp, "sync_warp")
        return Code(f"(yield ({WARP_OP}, {site}, {resolve}, _block))")
    site = compiler.ctx.site(call, "barrier")
    return Code(f"(yield (0, {site}))")


def _warp_shuffle(kind: int) -> CallRule:
    """tvm_warp_shuffle*(mask, value, lane_or_delta, width, warp_size): a warp collective."""

    def rule(compiler: CallCompiler, call: Call) -> Code:
        if compiler.ctx.kernel is None:
            raise DiagnosticError.at(call.span, f"T.{call.op} outside a GPU kernel")
        site = compiler.ctx.site(call, call.op)
        _, value, lane, width, _ = (compiler.argument(a).text for a in call.args)
        return Code(f"(yield (1, {site}, {kind}, {value}, {lane}, {width}))")

    return rule


def _active_mask(compiler: CallCompiler, call: Call) -> Code:
    if compiler.ctx.kernel is None:
        return compiler.exprs.literal(0xFFFFFFFF, call.dtype)
    site = compiler.ctx.site(call, call.op)
    return Code(f"(yield (2, {site}))", *int_range(call.dtype))


def _vector_half(high: bool) -> CallRule:
    """vectorlow / vectorhigh: the first or second half of a vector's lanes."""

    def rule(compiler: CallCompiler, call: Call) -> Code:
        vector = compiler.argument(call.args[-1])
        half = call.dtype.lanes
        part = f"[{half}:]" if high else f"[:{half}]"
        return Code(f"{vector.text}{part}")

    return rule


def _return(compiler: CallCompiler, call: Call) -> Code:
    """`T.ret(value)`: the function returns `value`, converted to its return type (docs/abi.md),
    from however deep in its loops; the statements after it do not run."""
    if compiler.ctx.kernel is not None:
        raise DiagnosticError.at(
            call.span, "T.ret returns from a host function; a GPU kernel's threads cannot"
        )
    value = call.args[0]
    assert isinstance(value, PrimExpr)  # the parser checks intrinsic arguments
    result = compiler.ctx.result_type or value.dtype
    if value.dtype != result:
        value = Cast(result, value, span=call.span)
    returned = compiler.exprs.compile(value)
    return Code(f"_return({returned.text})")


def _vector_combine(compiler: CallCompiler, call: Call) -> Code:
    low, high = (compiler.argument(arg) for arg in call.args[-2:])
    return Code(f"({low.text} + {high.text})")


_RULES: dict[str, CallRule] = {
    **dict.fromkeys(LANEWISE, _lanewise),
    "fmod": _fmod,
    "nextafter": _nextafter,
    **{name: _shift(operator.symbol) for name, operator in SHIFTS.items()},
    **{name: _bitwise(operator.symbol) for name, operator in BITWISE.items()},
    "bitwise_not": _bitwise_not,
    "if_then_else": _if_then_else,
    "likely": _identity,
    "ignore_loop_partition": _identity,  # a hint to loop-partition
    "assume": _true,
    "undef": _zero,
    "reinterpret": _reinterpret,
    "call_extern": _extern,
    "call_pure_extern": _extern,
    "type_annotation": _type_annotation,
    "tvm_access_ptr": _access_ptr,
    "address_of": _address_of,
    "tvm_storage_sync": _storage_sync,
    **{name: _warp_shuffle(kind) for name, kind in SHUFFLES.items()},
    "tvm_warp_activemask": _active_mask,
    "tvm_thread_allreduce": compile_allreduce,
    "vectorlow": _vector_half(high=False),
    "vectorhigh": _vector_half(high=True),
    "vectorcombine": _vector_combine,
    "ret": _return,
    **PTX_RULES,
    **WMMA_RULES,
    **TMA_RULES,
    **CLUSTER_RULES,
}
