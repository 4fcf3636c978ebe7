"""Hypothesis strategies that build random, well-formed IR modules of both dialects.

Used by the round-trip tests: whatever these produce, `parse(print(m))` must equal `m`.
Expressions always involve a variable so that no stage may fold them away.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tirc.ir import dtype as dt
from tirc.ir.buffer import Buffer, BufferRegion, Range, make_buffer
from tirc.ir.expr import (
    EQ,
    LT,
    Add,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Select,
    Sub,
    Var,
)
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import (
    AllocBuffer,
    Bind,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    IterType,
    IterVar,
    SBlock,
    SBlockRealize,
    Stmt,
    seq,
)

NAMES = st.sampled_from(["i", "j", "k", "x", "n", "A", "B", "tmp", "v_i", "ax0"])
FLOAT_TYPES = [dt.FLOAT32, dt.FLOAT16, dt.FLOAT64]
INT_TYPES = [dt.INT32, dt.INT64]
EXTENTS = st.integers(min_value=1, max_value=64)
TRUE = IntImm(1, dt.BOOL)


def _int_expr(draw: st.DrawFn, ints: list[Var], depth: int) -> PrimExpr:
    """An int32 expression over `ints` (never constant-only)."""
    base: PrimExpr = draw(st.sampled_from(ints))
    if depth <= 0:
        return base
    op = draw(st.sampled_from([Add, Sub, Mul, FloorDiv, FloorMod, Min, Max, None]))
    if op is None:
        return base
    other = draw(
        st.one_of(
            st.integers(min_value=1, max_value=9).map(lambda v: IntImm(v, dt.INT32)),
            st.just(None),
        )
    )
    rhs = other if other is not None else _int_expr(draw, ints, depth - 1)
    return op(base, rhs) if draw(st.booleans()) else op(_int_expr(draw, ints, depth - 1), rhs)


def _float_expr(
    draw: st.DrawFn, loads: list[PrimExpr], dtype: dt.DataType, ints: list[Var], depth: int
) -> PrimExpr:
    choices = [load for load in loads if load.dtype == dtype]
    if not choices or depth <= 0:
        pick = draw(st.sampled_from(ints))
        return Cast(dtype, pick)
    base = draw(st.sampled_from(choices))
    kind = draw(st.sampled_from(["add", "mul", "const", "exp", "select", "max", "leaf"]))
    rest = _float_expr(draw, loads, dtype, ints, depth - 1)
    if kind == "add":
        return Add(base, rest)
    if kind == "mul":
        return Mul(rest, base)
    if kind == "const":
        value = draw(st.sampled_from([0.0, 1.0, -2.5, 0.125, 3.0e8, 1.0e-5]))
        return Sub(base, FloatImm(value, dtype))
    if kind == "exp":
        return Call(dtype, "exp", (base,))
    if kind == "select":
        cond = LT(draw(st.sampled_from(ints)), IntImm(draw(st.integers(0, 9)), dt.INT32))
        return Select(cond, base, rest)
    if kind == "max":
        return Max(base, rest)
    return base


@st.composite
def tir_functions(draw: st.DrawFn) -> PrimFunc:
    """A low-level function: loops of every kind, stores, ifs, binds, a local allocation."""
    dtype = draw(st.sampled_from(FLOAT_TYPES))
    extents = draw(st.lists(EXTENTS, min_size=1, max_size=3))
    params: list[Var] = []
    buffer_map: list[tuple[Var, Buffer]] = []
    buffers: list[Buffer] = []
    for index in range(draw(st.integers(1, 3))):
        name = f"{draw(NAMES)}{index}"
        buffer = make_buffer(name, (IntImm(64, dt.INT32),), dtype)
        handle = Var(f"{name}_handle", dt.HANDLE)
        params.append(handle)
        buffer_map.append((handle, buffer))
        buffers.append(buffer)

    loop_vars = [Var(draw(NAMES)) for _ in extents]
    index = FloorMod(_int_expr(draw, loop_vars, 2), IntImm(64, dt.INT32))
    loads: list[PrimExpr] = [BufferLoad(b, (index,)) for b in buffers]
    value = _float_expr(draw, loads, dtype, loop_vars, 3)
    body: Stmt = BufferStore(draw(st.sampled_from(buffers)), value, (index,))
    if draw(st.booleans()):
        cond = EQ(FloorMod(loop_vars[0], IntImm(2, dt.INT32)), IntImm(0, dt.INT32))
        body = IfThenElse(cond, body, None)
    if draw(st.booleans()):
        bound = Var(draw(NAMES))
        body = seq(Bind(bound, Add(loop_vars[-1], IntImm(1, dt.INT32))), body)
    kinds = [ForKind.SERIAL, ForKind.PARALLEL, ForKind.UNROLLED, ForKind.SERIAL]
    for var, extent in reversed(list(zip(loop_vars, extents, strict=True))):
        body = For(
            var, IntImm(0, dt.INT32), IntImm(extent, dt.INT32), draw(st.sampled_from(kinds)), body
        )
    if draw(st.booleans()):
        scratch = make_buffer(draw(NAMES) + "_local", (IntImm(4, dt.INT32),), dtype, "local")
        body = seq(
            AllocBuffer(scratch),
            BufferStore(scratch, FloatImm(0.0, dtype), (IntImm(0, dt.INT32),)),
            body,
        )
    if draw(st.booleans()):
        body = seq(body, Evaluate(Call(dt.INT32, "call_extern", (_string("flush"), params[0]))))
    return PrimFunc(tuple(params), tuple(buffer_map), body)


def _string(text: str) -> PrimExpr:
    from tirc.ir.expr import StringImm

    return StringImm(text)


@st.composite
def s_tir_functions(draw: st.DrawFn) -> PrimFunc:
    """A schedulable function: a spatial block, optionally followed by a reduction block."""
    dtype = draw(st.sampled_from([dt.FLOAT32, dt.FLOAT16]))
    index_dtype = draw(st.sampled_from(INT_TYPES))
    m, n = draw(EXTENTS), draw(EXTENTS)

    def ext(value: int) -> IntImm:
        return IntImm(value, index_dtype)

    a = make_buffer("A", (ext(m), ext(n)), dtype)
    b = make_buffer("B", (ext(m), ext(n)), dtype)
    c = make_buffer("C", (ext(m),), dtype)
    handles = [Var(name, dt.HANDLE) for name in ("a", "b", "c")]

    i, j = Var("i", index_dtype), Var("j", index_dtype)
    vi, vj = Var("vi", index_dtype), Var("vj", index_dtype)
    spatial = SBlock(
        "B",
        (
            IterVar(vi, Range(ext(0), ext(m)), IterType.SPATIAL),
            IterVar(vj, Range(ext(0), ext(n)), IterType.SPATIAL),
        ),
        (BufferRegion(a, (Range(vi, ext(1)), Range(vj, ext(1)))),),
        (BufferRegion(b, (Range(vi, ext(1)), Range(vj, ext(1)))),),
        BufferStore(b, Mul(BufferLoad(a, (vi, vj)), FloatImm(2.0, dtype)), (vi, vj)),
    )
    stmt: Stmt = For(
        i,
        ext(0),
        ext(m),
        ForKind.SERIAL,
        For(j, ext(0), ext(n), ForKind.SERIAL, SBlockRealize((i, j), TRUE, spatial)),
    )
    if draw(st.booleans()):
        k, r = Var("i", index_dtype), Var("k", index_dtype)
        vk, vr = Var("vi", index_dtype), Var("vk", index_dtype)
        reduce_block = SBlock(
            "C",
            (
                IterVar(vk, Range(ext(0), ext(m)), IterType.SPATIAL),
                IterVar(vr, Range(ext(0), ext(n)), IterType.REDUCE),
            ),
            (
                BufferRegion(c, (Range(vk, ext(1)),)),
                BufferRegion(b, (Range(vk, ext(1)), Range(vr, ext(1)))),
            ),
            (BufferRegion(c, (Range(vk, ext(1)),)),),
            BufferStore(c, Add(BufferLoad(c, (vk,)), BufferLoad(b, (vk, vr))), (vk,)),
            init=BufferStore(c, FloatImm(0.0, dtype), (vk,)),
        )
        stmt = seq(
            stmt,
            For(
                k,
                ext(0),
                ext(m),
                ForKind.SERIAL,
                For(r, ext(0), ext(n), ForKind.SERIAL, SBlockRealize((k, r), TRUE, reduce_block)),
            ),
        )
    root = SBlock("root", (), (), (), stmt)
    buffer_map = tuple(zip(handles, (a, b, c), strict=True))
    return PrimFunc(tuple(handles), buffer_map, SBlockRealize((), TRUE, root), is_s_tir=True)


@st.composite
def modules(draw: st.DrawFn) -> IRModule:
    funcs = draw(st.lists(st.one_of(tir_functions(), s_tir_functions()), min_size=1, max_size=3))
    return IRModule(tuple((f"f{index}", func) for index, func in enumerate(funcs)))
