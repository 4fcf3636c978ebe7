"""Statements of both dialects, checked against what TVM 0.27 prints for the same programs."""

from __future__ import annotations

from tirc.ir import dtype as dt
from tirc.ir.expr import (
    EQ,
    GT,
    LT,
    Add,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    Mul,
    PrimExpr,
    Ramp,
    StringImm,
    Sub,
    Var,
)
from tirc.ir.stmt import (
    AllocBuffer,
    AssertStmt,
    Attrs,
    AttrStmt,
    Bind,
    Break,
    BufferStore,
    Continue,
    DeclBuffer,
    Evaluate,
    ForKind,
    IfThenElse,
    IterType,
    IterVar,
    SBlock,
    Stmt,
    While,
    seq,
)
from tirc.text.printer import print_module

from .build import BARE_HEADER, axis, buffer, func, i32, i64, loop, module, point, realize, root

F32 = dt.FLOAT32


def one(value: float = 1.0) -> FloatImm:
    return FloatImm(value, F32)


def bare(params: list, body: Stmt, **options: object) -> str:
    """The printed text of a bare function, without the header."""
    text = print_module(module(("main", func(params, body, **options)), bare=True))
    assert text.startswith(BARE_HEADER)
    return text[len(BARE_HEADER) :]


def lines(*items: str) -> str:
    return "\n".join(items)


def test_loops_grid_range_and_kinds() -> None:
    A, B = buffer("A", 128, 128), buffer("B", 128, 128)
    i, j, k, m = (Var(name) for name in "ijkl")

    def copy(*indices: PrimExpr) -> Stmt:
        return BufferStore(B, BufferLoad(A, indices), indices)

    body = seq(
        loop(i, 128, loop(j, 128, copy(i, j))),
        loop(i, 127, loop(j, 128, copy(i, j)), start=1),
        loop(
            i,
            128,
            loop(
                j,
                128,
                loop(k, 4, loop(m, 2, copy(i, j), ForKind.UNROLLED), ForKind.VECTORIZED),
                ForKind.PARALLEL,
            ),
            annotations=Attrs((("a", 1),)),
        ),
        loop(i, 3, loop(j, 4, loop(k, 5, copy(i, j)))),
        loop(i, 10, seq(copy(i, i32(0)), copy(i, i32(1)))),
    )
    assert bare([A, B], body) == lines(
        "@T.prim_func",
        'def main(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32")):',
        "    for i, j in T.grid(128, 128):",
        "        B[i, j] = A[i, j]",
        "    for i in range(1, 128):",
        "        for j in range(128):",
        "            B[i, j] = A[i, j]",
        '    for i in T.serial(128, annotations={"a": 1}):',
        "        for j in T.parallel(128):",
        "            for k in T.vectorized(4):",
        "                for l in T.unroll(2):",
        "                    B[i, j] = A[i, j]",
        "    for i, j, k in T.grid(3, 4, 5):",
        "        B[i, j] = A[i, j]",
        "    for i in range(10):",
        "        B[i, 0] = A[i, 0]",
        "        B[i, 1] = A[i, 1]",
    )


def test_grid_stops_at_dependent_extent_and_steps() -> None:
    A = buffer("A", 128, 128)
    n = Var("n")
    i, j, k = Var("i"), Var("j"), Var("k")
    store = BufferStore(A, one(0.0), (i, i32(0)))
    body = seq(
        loop(i, n, loop(j, i, loop(k, 4, BufferStore(A, one(0.0), (i, j))))),
        loop(i, 10, store, step=i32(2)),
        loop(i, 8, store, start=2, step=i32(3)),
        loop(i, 8, store, ForKind.PARALLEL, start=2, step=i32(2), annotations=Attrs((("b", 1),))),
        loop(i, i64(10), loop(j, i64(10), BufferStore(A, one(0.0), (i, j))), start=i64(0)),
        loop(i, i32(4), store, start=n),
        loop(
            i,
            128,
            store,
            ForKind.THREAD_BINDING,
            thread_binding=IterVar(Var("tx"), None, IterType.THREAD, "threadIdx.x"),
        ),
    )
    assert bare([A, n], body) == lines(
        "@T.prim_func",
        'def main(A: T.Buffer((128, 128), "float32"), n: T.int32):',
        "    for i in range(n):",
        "        for j, k in T.grid(i, 4):",
        "            A[i, j] = T.float32(0.0)",
        "    for i in range(0, 10, 2):",
        "        A[i, 0] = T.float32(0.0)",
        "    for i in range(2, 10, 3):",
        "        A[i, 0] = T.float32(0.0)",
        '    for i in T.parallel(2, 10, annotations={"b": 1}, step=2):',
        "        A[i, 0] = T.float32(0.0)",
        "    for i, j in T.grid(T.int64(10), T.int64(10)):",
        "        A[i, j] = T.float32(0.0)",
        "    for i in range(n, n + 4):",
        "        A[i, 0] = T.float32(0.0)",
        '    for i in T.thread_binding(128, thread="threadIdx.x"):',
        "        A[i, 0] = T.float32(0.0)",
    )


def test_blocks_remap_where_attrs_init() -> None:
    A, C = buffer("A", 128, 128), buffer("C", 128)
    B = buffer("B", 128, 128, scope="shared")
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    first = SBlock(
        "B",
        (axis(vi, 128), axis(vj, 128), axis(vk, 4, IterType.REDUCE)),
        (point(A, vi, vj),),
        (point(B, vi, vj),),
        BufferStore(B, BufferLoad(A, (vi, vj)), (vi, vj)),
        init=BufferStore(B, one(0.0), (vi, vj)),
        annotations=Attrs((("z", 1), ("a", "b"))),
    )
    ui, uj = Var("vi"), Var("vj")
    second = SBlock(
        "C",
        (axis(ui, 128), axis(uj, 128, IterType.REDUCE)),
        (point(C, ui), point(B, ui, uj)),
        (point(C, ui),),
        BufferStore(C, Add(BufferLoad(C, (ui,)), BufferLoad(B, (ui, uj))), (ui,)),
    )
    wi, wj, wk, wl = Var("vi"), Var("vj"), Var("vk"), Var("vl")
    third = SBlock(
        "D",
        (axis(wi, 4), axis(wj, 4), axis(wk, 4), axis(wl, 4, IterType.REDUCE)),
        (),
        (point(A, wi, wj),),
        BufferStore(A, one(0.0), (wi, wj)),
    )
    opaque = SBlock("E", (), (), (), Evaluate(i32(0)))
    body = seq(
        loop(i, 128, loop(j, 128, loop(k, 4, realize(first, i, j, k)))),
        loop(i, 128, loop(j, 128, realize(second, i, j, predicate=LT(i, i32(100))))),
        loop(i, 4, loop(j, 4, realize(third, Add(i, i32(1)), j, i, j))),
        realize(opaque),
    )
    assert bare([A, C], root(body, B), s_tir=True) == lines(
        "@T.prim_func(s_tir=True)",
        'def main(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128,), "float32")):',
        '    # with T.sblock("root"):',
        '    B = T.sblock_alloc_buffer((128, 128), scope="shared")',
        "    for i, j, k in T.grid(128, 128, 4):",
        '        with T.sblock("B"):',
        '            vi, vj, vk = T.axis.remap("SSR", [i, j, k])',
        "            T.reads(A[vi, vj])",
        "            T.writes(B[vi, vj])",
        '            T.sblock_attr({"a": "b", "z": 1})',
        "            with T.init():",
        "                B[vi, vj] = T.float32(0.0)",
        "            B[vi, vj] = A[vi, vj]",
        "    for i, j in T.grid(128, 128):",
        '        with T.sblock("C"):',
        '            vi, vj = T.axis.remap("SR", [i, j])',
        "            T.where(i < 100)",
        "            T.reads(C[vi], B[vi, vj])",
        "            T.writes(C[vi])",
        "            C[vi] = C[vi] + B[vi, vj]",
        "    for i, j in T.grid(4, 4):",
        '        with T.sblock("D"):',
        "            vi = T.axis.spatial(4, i + 1)",
        '            vj, vk, vl = T.axis.remap("SSR", [j, i, j])',
        "            T.reads()",
        "            T.writes(A[vi, vj])",
        "            A[vi, vj] = T.float32(0.0)",
        '    with T.sblock("E"):',
        "        T.reads()",
        "        T.writes()",
        "        T.evaluate(0)",
    )


def test_axis_domains_and_kinds() -> None:
    A = buffer("A", 128, 128)
    n = Var("n")
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk, vl = Var("vi"), Var("vj"), Var("vk"), Var("vl")
    block = SBlock(
        "B",
        (
            axis(vi, 128, start=2),
            axis(vj, 128, IterType.SCAN),
            axis(vk, 4, IterType.OPAQUE),
            axis(vl, i64(10), start=i64(0)),
        ),
        (),
        (point(A, vi, vj),),
        BufferStore(A, one(0.0), (vi, vj)),
    )
    body = loop(i, n, loop(j, i, loop(k, 4, realize(block, i, j, k, i64(3)))))
    assert bare([A, n], root(body), s_tir=True) == lines(
        "@T.prim_func(s_tir=True)",
        'def main(A: T.Buffer((128, 128), "float32"), n: T.int32):',
        '    # with T.sblock("root"):',
        "    for i in range(n):",
        "        for j, k in T.grid(i, 4):",
        '            with T.sblock("B"):',
        "                vi = T.axis.spatial((2, 130), i)",
        "                vj = T.axis.scan(128, j)",
        "                vk = T.axis.opaque(4, k)",
        "                vl = T.axis.spatial(T.int64(10), T.int64(3))",
        "                T.reads()",
        "                T.writes(A[vi, vj])",
        "                A[vi, vj] = T.float32(0.0)",
    )


def test_root_block_printed_in_full_when_needed() -> None:
    A = buffer("A", 128)
    i = Var("i")
    plain = loop(i, 128, BufferStore(A, one(), (i,)))
    assert bare([A], root(plain), s_tir=True).splitlines()[2:5] == [
        '    with T.sblock("root"):',
        "        T.reads()",
        "        T.writes()",
    ]
    assert bare([A], plain, s_tir=True).splitlines()[2] == "    for i in range(128):"


def test_low_level_statements() -> None:
    A = buffer("A", 128)
    n = Var("n")
    bx_var, tx_var = Var("bx"), Var("tx")
    shared = buffer("B", 128, scope="shared")
    view = buffer("C", 64)
    view = type(view)("C", shared.data, F32, (i32(64),))
    x = Var("x")
    body = AttrStmt(
        IterVar(bx_var, None, IterType.THREAD, "blockIdx.x"),
        "thread_extent",
        i32(4),
        AttrStmt(
            IterVar(tx_var, None, IterType.THREAD, "threadIdx.x"),
            "thread_extent",
            i32(32),
            seq(
                AllocBuffer(shared),
                DeclBuffer(view),
                Bind(x, Add(n, i32(1))),
                AssertStmt(GT(n, i32(0)), "RuntimeError", ("n must be positive",)),
                IfThenElse(
                    GT(n, i32(3)),
                    BufferStore(A, one(), (i32(0),)),
                    BufferStore(A, one(2.0), (i32(1),)),
                ),
                IfThenElse(GT(n, i32(4)), BufferStore(A, one(), (i32(2),))),
                While(LT(n, i32(5)), BufferStore(A, one(), (i32(3),))),
                AttrStmt(
                    i32(0),
                    "pragma_x",
                    i32(1),
                    AttrStmt(i32(0), "pragma_y", i32(2), BufferStore(A, one(), (i32(4),))),
                ),
                AttrStmt(A.data, "storage_alignment", i32(128), BufferStore(A, one(), (i32(4),))),
                Evaluate(Call(dt.INT32, "call_extern", (StringImm("f"), A.data, n))),
                Evaluate(Add(n, i32(1))),
                BufferStore(A, Broadcast(one(0.0), 8), (Ramp(i32(0), i32(1), 8),)),
                BufferStore(A, BufferLoad(A, (Ramp(i32(0), i32(1), 4),)), (Ramp(n, i32(2), 4),)),
                BufferStore(
                    A, BufferLoad(A, (Ramp(i32(0), i32(1), 4),)), (Ramp(i32(0), i32(-1), 4),)
                ),
                BufferStore(A, BufferLoad(A, (Ramp(i32(0), i32(1), 4),)), (Ramp(n, n, 4),)),
                BufferStore(A, Cast(F32, x), (i32(6),)),
                Evaluate(Call(dt.INT32, "tvm_storage_sync", (StringImm("shared"),))),
            ),
        ),
    )
    assert bare([A, n], body) == lines(
        "@T.prim_func",
        'def main(A: T.Buffer((128,), "float32"), n: T.int32):',
        '    bx = T.launch_thread("blockIdx.x", 4)',
        '    tx = T.launch_thread("threadIdx.x", 32)',
        "    B = T.alloc_shared((128,))",
        "    C = B.view(64)",
        "    x: T.let[T.int32] = n + 1",
        '    assert n > 0, ("RuntimeError", ["n must be positive"])',
        "    if n > 3:",
        "        A[0] = T.float32(1.0)",
        "    else:",
        "        A[1] = T.float32(2.0)",
        "    if n > 4:",
        "        A[2] = T.float32(1.0)",
        "    while n < 5:",
        "        A[3] = T.float32(1.0)",
        '    with T.attr({"pragma_x": 1, "pragma_y": 2}):',
        "        A[4] = T.float32(1.0)",
        '    with T.attr(A.data, "storage_alignment", 128):',
        "        A[4] = T.float32(1.0)",
        '    T.call_extern("int32", "f", A.data, n)',
        "    T.evaluate(n + 1)",
        "    A[0:8] = T.Broadcast(T.float32(0.0), 8)",
        "    A[n:n + 8:2] = A[T.Ramp(0, 1, 4)]",
        "    A[0:-4:-1] = A[T.Ramp(0, 1, 4)]",
        "    A[T.Ramp(n, n, 4)] = A[T.Ramp(0, 1, 4)]",
        '    A[6] = T.Cast("float32", x)',
        '    T.tvm_storage_sync("shared")',
    )


def test_thread_launch_nests_unless_alone() -> None:
    A = buffer("A", 128)
    tx = IterVar(Var("tx"), None, IterType.THREAD, "threadIdx.x")
    bx = IterVar(Var("bx"), None, IterType.THREAD, "blockIdx.x")
    vt = IterVar(Var("vt"), None, IterType.THREAD, "vthread")
    body = seq(
        AttrStmt(tx, "thread_extent", i32(32), BufferStore(A, one(), (tx.var,))),
        AttrStmt(tx, "thread_extent", i32(32), BufferStore(A, one(), (Add(tx.var, i32(1)),))),
        AttrStmt(
            bx,
            "thread_extent",
            i32(4),
            seq(
                BufferStore(A, one(2.0), (bx.var,)),
                AttrStmt(vt, "virtual_thread", i32(2), BufferStore(A, one(2.0), (vt.var,))),
            ),
        ),
    )
    assert bare([A], body).splitlines()[2:] == [
        '    tx = T.env_thread("threadIdx.x")',
        "    with T.launch_thread(tx, 32):",
        "        A[tx] = T.float32(1.0)",
        "    with T.launch_thread(tx, 32):",
        "        A[tx + 1] = T.float32(1.0)",
        '    with T.launch_thread("blockIdx.x", 4) as bx:',
        "        A[bx] = T.float32(2.0)",
        '        with T.launch_thread("vthread", 2) as vt:',
        "            A[vt] = T.float32(2.0)",
    ]


def test_scalar_buffers_print_as_scalars() -> None:
    A = buffer("A", 128)
    n = Var("n")

    def scalar(name: str, dtype: str = "int32") -> tuple[AllocBuffer, object]:
        buf = buffer(name, 1, dtype=dtype, scope="local")
        return AllocBuffer(buf), buf

    ax, x = scalar("x")
    ay, y = scalar("y", "float32")
    ag, g = scalar("g")
    ah, h = scalar("h", "float32x4")
    am, m = scalar("m")
    u = buffer("u", 2, dtype="int32", scope="local")
    body = seq(
        ax,
        BufferStore(x, Add(n, i32(2)), (i32(0),)),
        BufferStore(x, Add(BufferLoad(x, (i32(0),)), i32(1)), (i32(0),)),
        BufferStore(A, one(), (BufferLoad(x, (i32(0),)),)),
        ay,
        BufferStore(A, BufferLoad(y, (i32(0),)), (i32(0),)),
        ag,
        BufferStore(g, Add(BufferLoad(g, (i32(0),)), i32(1)), (i32(0),)),
        ah,
        BufferStore(h, BufferLoad(A, (Ramp(i32(0), i32(1), 4),)), (i32(0),)),
        BufferStore(A, BufferLoad(h, (i32(0),)), (Ramp(i32(0), i32(1), 4),)),
        am,
        BufferStore(m, i32(1), (i32(0),)),
        BufferStore(m, i32(2), (i32(0),)),
        AllocBuffer(u),
        AllocBuffer(buffer("s", 3, dtype="int32")),
        AllocBuffer(buffer("s2", 3, dtype="int32", scope="shared.dyn")),
        AllocBuffer(buffer("s4", 3, dtype="int32", data_alignment=16)),
        AllocBuffer(buffer("s5", 3, dtype="int32", scope="local"), Attrs((("x", 1),))),
        AllocBuffer(buffer("s6", 1, dtype="int32", scope="local", data_alignment=8)),
    )
    assert bare([A, n], body).splitlines()[2:] == [
        "    x: T.int32 = n + 2",
        "    x = x + 1",
        "    A[x] = T.float32(1.0)",
        "    y: T.float32",
        "    A[0] = y",
        "    g: T.int32",
        "    g = g + 1",
        "    h: T.float32x4 = A[T.Ramp(0, 1, 4)]",
        "    A[0:4] = h",
        "    m: T.int32 = 1",
        "    m = 2",
        '    u = T.alloc_local((2,), "int32")',
        '    s = T.alloc_buffer((3,), "int32")',
        '    s2 = T.alloc_buffer((3,), "int32", scope="shared.dyn")',
        '    s4 = T.alloc_buffer((3,), "int32", align=16)',
        '    s5 = T.alloc_local((3,), "int32", annotations={"x": 1})',
        '    s6 = T.alloc_local((1,), "int32", align=8)',
    ]


def test_one_element_buffer_indexed_by_a_variable_keeps_its_allocation() -> None:
    """`B[i]` has no scalar spelling (TVM 0.27 reads `x[i]` of a scalar `x` as an error)."""
    A, n = buffer("A", 128), Var("n")
    b = buffer("B", 1, dtype="float32", scope="local")
    body = seq(
        AllocBuffer(b),
        BufferStore(b, one(), (Sub(n, n),)),
        BufferStore(A, BufferLoad(b, (i32(0),)), (i32(0),)),
    )
    assert bare([A, n], body).splitlines()[2:] == [
        "    B = T.alloc_local((1,))",
        "    B[n - n] = T.float32(1.0)",
        "    A[0] = B[0]",
    ]


def test_declared_buffers_and_views() -> None:
    A = buffer("A", 128)
    n = Var("n")
    B = buffer("B", 128)
    B3 = buffer("B3", 128, scope="shared")
    B4 = buffer(
        "B4", 4, 4, strides=(i32(8), i32(1)), elem_offset=i32(2), data_alignment=32, offset_factor=4
    )

    def decl(
        name: str, source: object, *shape: PrimExpr, dtype: str = "float32", **fields: object
    ) -> DeclBuffer:
        made = buffer(name, *shape, dtype=dtype, **fields)
        return DeclBuffer(
            type(made)(name, source.data, made.dtype, made.shape, made.strides, made.elem_offset)
        )

    body = seq(
        AllocBuffer(B),
        AllocBuffer(B3),
        AllocBuffer(B4),
        decl("C", B, i32(64)),
        decl("C1", B, i32(8), i32(8)),
        decl("C2", B, i32(8), i32(8), dtype="float16"),
        decl("C3", B, i32(8), i32(8), elem_offset=i32(3)),
        DeclBuffer(type(B3)("C4", B3.data, F32, (i32(64),))),
        decl("D", B, i32(128)),
        decl("E", A, i32(64)),
        decl("G", A, n),
    )
    assert bare([A, n], body).splitlines()[2:] == [
        "    B = T.alloc_buffer((128,))",
        "    B3 = T.alloc_shared((128,))",
        "    B4 = T.alloc_buffer((4, 4), strides=(8, 1), elem_offset=2, align=32, offset_factor=4)",
        "    C = B.view(64)",
        "    C1 = B.view(8, 8)",
        '    C2 = T.decl_buffer((8, 8), "float16", data=B.data)',
        "    C3 = T.decl_buffer((8, 8), data=B.data, elem_offset=3)",
        "    C4 = B3.view(64)",
        "    D = T.decl_buffer((128,), data=B.data)",
        "    E = A.view(64)",
        "    G = A.view(n)",
    ]


def test_match_buffers_and_block_buffers() -> None:
    from tirc.ir.buffer import BufferRegion, MatchBufferRegion, Range

    X = buffer("X", 128, 128)
    i, vi = Var("i"), Var("vi")
    s = Var("s")
    offset = Var("B_elem_offset")

    def region(start: int) -> BufferRegion:
        return BufferRegion(X, (Range(vi, i32(1)), Range(i32(start), i32(4))))

    A = buffer("A", 4)
    B = buffer("B", 4, elem_offset=offset)
    D = buffer("D", 4, offset_factor=2)
    G = buffer("G", 4, strides=(s,))
    S2 = buffer("S2", 4, dtype="int8", scope="local", data_alignment=16)
    block = SBlock(
        "b",
        (axis(vi, 4),),
        (),
        (),
        Evaluate(Add(offset, s)),
        alloc_buffers=(S2,),
        match_buffers=(
            MatchBufferRegion(A, region(0)),
            MatchBufferRegion(B, region(4)),
            MatchBufferRegion(D, region(12)),
            MatchBufferRegion(G, region(16)),
        ),
    )
    body = loop(i, 4, realize(block, i))
    assert bare([X], root(body), s_tir=True).splitlines()[2:] == [
        '    # with T.sblock("root"):',
        "    for i in range(4):",
        '        with T.sblock("b"):',
        "            vi = T.axis.spatial(4, i)",
        "            T.reads()",
        "            T.writes()",
        '            S2 = T.sblock_alloc_buffer((4,), "int8", scope="local", align=16)',
        "            A = T.match_buffer(X[vi, 0:4], (4,))",
        "            B = T.match_buffer(X[vi, 4:8], (4,), offset_factor=1)",
        "            D = T.match_buffer(X[vi, 12:16], (4,), offset_factor=2)",
        '            G = T.match_buffer(X[vi, 16:20], (4,), strides=("s",))',
        "            T.evaluate(B.elem_offset + G.strides[0])",
    ]


def test_break_continue_and_free_variables() -> None:
    A = buffer("A", 128)
    i = Var("i")
    free = Var("z", dt.INT64)
    body = seq(
        While(IntImm(1, dt.BOOL), Break()),
        loop(i, 3, seq(IfThenElse(EQ(i, i32(1)), Continue()), BufferStore(A, one(0.0), (i,)))),
        BufferStore(A, Cast(F32, free), (i32(0),)),
        BufferStore(A, Cast(F32, Mul(free, i64(2))), (i32(1),)),
    )
    assert bare([A], body).splitlines()[2:] == [
        "    while T.bool(True):",
        "        T.break_loop()",
        "    for i in range(3):",
        "        if i == 1:",
        "            T.continue_loop()",
        "        A[i] = T.float32(0.0)",
        "    z = T.int64()",
        '    A[0] = T.Cast("float32", z)',
        '    A[1] = T.Cast("float32", z * T.int64(2))',
    ]
