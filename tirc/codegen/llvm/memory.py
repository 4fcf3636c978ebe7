"""Buffer loads and stores. A contiguous Ramp index is one vector load or store, and with a
predicate one masked load or store (`llvm.masked.load/store`: masked lanes touch no memory and
load zero); any other vector index goes lane by lane, a masked lane behind a branch so that it
never touches memory.

    A[Ramp(b, 1, 16)] if Ramp(b, 1, 16) < 20  ->  llvm.masked.load(&A[b], mask, zeroinitializer)
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from tirc.codegen.llvm import narrow_float
from tirc.codegen.llvm import types as T
from tirc.codegen.llvm.emitter import EXPR_RULES, Emitter, broadcast, unsupported
from tirc.codegen.llvm.indexing import flat_index
from tirc.codegen.llvm.streaming import mark_streaming
from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.dtype import DataType


def _contiguous_base(index: E.PrimExpr) -> E.PrimExpr | None:
    """The first lane's index where the lanes are consecutive: a Ramp of stride 1, or one
    plus broadcast offsets (a tensor intrinsic's `A[T.Ramp(0, 1, 4)]` on a matched view
    lowers to `Broadcast(offset, 4) + Ramp(0, 1, 4)`)."""
    if isinstance(index, E.Ramp) and E.is_const_int(index.stride, 1):
        return index.base
    if isinstance(index, E.Add):
        for vector, offset in ((index.a, index.b), (index.b, index.a)):
            if isinstance(offset, E.Broadcast):
                base = _contiguous_base(vector)
                if base is not None:
                    return E.Add(offset.value, base)
    return None


def _alignment(dtype: DataType) -> int:
    return T.element_bytes(dtype.element) if not dtype.is_bool else 1


def _address(em: Emitter, buffer: Buffer, index: ir.Value) -> ir.Value:
    """The address of the element at flat `index` (i64) of `buffer`."""
    return em.builder.gep(
        em.buffer_pointer(buffer),
        [em.widen_index(index)],
        source_etype=T.memory_type(buffer.dtype),
        inbounds=True,
    )


def _from_memory(em: Emitter, value: ir.Value, dtype: DataType) -> ir.Value:
    if narrow_float.is_narrow_float(dtype):
        return narrow_float.widen(em.builder, value, dtype.element)
    if dtype.is_bool:
        return em.builder.icmp_unsigned("!=", value, ir.Constant(value.type, None))
    return value


def _to_memory(em: Emitter, value: ir.Value, dtype: DataType) -> ir.Value:
    if narrow_float.is_narrow_float(dtype):
        return narrow_float.to_bits(em.builder, value, dtype.element)
    if dtype.is_bool:
        return em.builder.zext(value, T.memory_type(dtype))
    return value


@EXPR_RULES.register(E.BufferLoad)
def emit_load(em: Emitter, load: E.BufferLoad) -> ir.Value:
    buffer = load.buffer
    index = flat_index(buffer, load.indices)
    lanes = index.dtype.lanes
    base = _contiguous_base(index)
    if lanes == 1 or (base is not None and buffer.dtype.lanes == 1 and load.predicate is None):
        at = em.index(base if base is not None else index)
        typ = T.memory_type(load.dtype)
        value = em.builder.load(_address(em, buffer, at), typ=typ, align=_alignment(buffer.dtype))
        return _from_memory(em, value, load.dtype)
    if buffer.dtype.lanes != 1:
        raise unsupported(load, "vector indices into buffers of vector elements")
    typ = T.memory_type(load.dtype)
    if base is not None and load.predicate is not None and _masked_suffix(typ) is not None:
        address = _address(em, buffer, em.index(base))
        mask = _mask(em, em.expr(load.predicate), lanes)
        intrinsic = em.declare(
            f"llvm.masked.load.{_masked_suffix(typ)}.p0", typ, [T.POINTER, T.I32, mask.type, typ]
        )
        align = ir.Constant(T.I32, _alignment(buffer.dtype))
        value = em.builder.call(intrinsic, [address, align, mask, ir.Constant(typ, None)])
        return _from_memory(em, value, load.dtype)
    indices = em.expr(index)
    mask = em.expr(load.predicate) if load.predicate is not None else None
    result: ir.Value = ir.Constant(T.value_type(load.dtype), None)
    for lane in range(lanes):
        at = em.builder.extract_element(indices, ir.Constant(T.I32, lane))

        def load_lane(at: ir.Value = at) -> ir.Value:
            element = em.builder.load(
                _address(em, buffer, at),
                typ=T.memory_type(buffer.dtype),
                align=_alignment(buffer.dtype),
            )
            return _from_memory(em, element, buffer.dtype)

        if mask is None:
            element = load_lane()
        else:
            element = _guarded(em, _lane(em, mask, lane), load_lane, T.value_type(buffer.dtype))
        result = em.builder.insert_element(result, element, ir.Constant(T.I32, lane))
    return result


def emit_store(
    em: Emitter,
    buffer: Buffer,
    value_expr: E.PrimExpr,
    indices: tuple[E.PrimExpr, ...],
    predicate: E.PrimExpr | None,
) -> None:
    index = flat_index(buffer, indices)
    lanes = index.dtype.lanes
    value = em.expr(value_expr)
    dtype = value_expr.dtype
    if lanes > 1 and not isinstance(value.type, ir.VectorType) and buffer.dtype.lanes == 1:
        value, dtype = broadcast(em, value, lanes), dtype.with_lanes(lanes)
    base = _contiguous_base(index)
    if lanes == 1 or (base is not None and buffer.dtype.lanes == 1 and predicate is None):
        at = em.index(base if base is not None else index)
        store = em.builder.store(
            _to_memory(em, value, dtype), _address(em, buffer, at), align=_alignment(buffer.dtype)
        )
        if lanes > 1 and buffer.data in em.streaming:
            mark_streaming(em.module, store)
            em.streamed = True
        return
    if buffer.dtype.lanes != 1:
        raise unsupported(value_expr, "vector indices into buffers of vector elements")
    memory = _to_memory(em, value, dtype)
    if base is not None and predicate is not None and _masked_suffix(memory.type) is not None:
        address = _address(em, buffer, em.index(base))
        mask = _mask(em, em.expr(predicate), lanes)
        intrinsic = em.declare(
            f"llvm.masked.store.{_masked_suffix(memory.type)}.p0",
            ir.VoidType(),
            [memory.type, T.POINTER, T.I32, mask.type],
        )
        em.builder.call(
            intrinsic, [memory, address, ir.Constant(T.I32, _alignment(buffer.dtype)), mask]
        )
        return
    positions = em.expr(index)
    mask = em.expr(predicate) if predicate is not None else None
    for lane in range(lanes):
        at = em.builder.extract_element(positions, ir.Constant(T.I32, lane))
        element = em.builder.extract_element(value, ir.Constant(T.I32, lane))

        def store_lane(at: ir.Value = at, element: ir.Value = element) -> None:
            em.builder.store(
                _to_memory(em, element, buffer.dtype),
                _address(em, buffer, at),
                align=_alignment(buffer.dtype),
            )

        if mask is None:
            store_lane()
        else:
            _guarded_effect(em, _lane(em, mask, lane), store_lane)


def _masked_suffix(typ: ir.Type) -> str | None:
    """The overload suffix of a masked intrinsic on vectors of `typ` (`v16f32`), or None for
    an element type the suffix is not spelled for here."""
    if not isinstance(typ, ir.VectorType):
        return None
    element = typ.element
    if isinstance(element, ir.IntType):
        name = f"i{element.width}"
    elif isinstance(element, (ir.FloatType, ir.DoubleType, ir.HalfType)):
        name = {ir.FloatType: "f32", ir.DoubleType: "f64", ir.HalfType: "f16"}[type(element)]
    else:
        return None
    return f"v{typ.count}{name}"


def _mask(em: Emitter, predicate: ir.Value, lanes: int) -> ir.Value:
    """The predicate as an `<lanes x i1>` mask (a scalar predicate holds for every lane)."""
    if not isinstance(predicate.type, ir.VectorType):
        return broadcast(em, predicate, lanes)
    return predicate


def _lane(em: Emitter, vector: ir.Value, lane: int) -> ir.Value:
    if not isinstance(vector.type, ir.VectorType):
        return vector
    return em.builder.extract_element(vector, ir.Constant(T.I32, lane))


def _guarded(
    em: Emitter, condition: ir.Value, compute: Callable[[], ir.Value], typ: ir.Type
) -> ir.Value:
    """`compute()` where `condition` holds, else zero; a branch, so the guarded code never
    runs for a masked lane."""
    before = em.builder.block
    then_block, done = em.new_block("lane"), em.new_block("lane.done")
    em.builder.cbranch(condition, then_block, done)
    em.builder.position_at_end(then_block)
    value = compute()
    then_end = em.builder.block
    em.builder.branch(done)
    em.builder.position_at_end(done)
    phi = em.builder.phi(typ)
    phi.add_incoming(value, then_end)
    phi.add_incoming(ir.Constant(typ, None), before)
    return phi


def _guarded_effect(em: Emitter, condition: ir.Value, effect: Callable[[], None]) -> None:
    then_block, done = em.new_block("lane"), em.new_block("lane.done")
    em.builder.cbranch(condition, then_block, done)
    em.builder.position_at_end(then_block)
    effect()
    em.builder.branch(done)
    em.builder.position_at_end(done)


def emit_address_of(em: Emitter, call: E.Call) -> ir.Value:
    """`T.address_of(A[i])`: the address of one element, as a handle (a view's data, say)."""
    load = call.args[0]
    if not isinstance(load, E.BufferLoad) or load.predicate is not None:
        raise unsupported(call, "T.address_of of anything but one buffer element")
    index = flat_index(load.buffer, load.indices)
    if index.dtype.lanes != 1:
        raise unsupported(call, "T.address_of of a vector of elements")
    return _address(em, load.buffer, em.index(index))
