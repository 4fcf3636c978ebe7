"""Access-region inference against what TVM 0.27 infers for the same blocks."""

from __future__ import annotations

from tirc.analysis.regions import infer_access_regions
from tirc.ir import dtype as dt
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import BufferRegion, Range, make_buffer
from tirc.ir.expr import IntImm, Var


def c(value: int) -> IntImm:
    return IntImm(value)


A = make_buffer("A", (c(128), c(128)))
B = make_buffer("B", (c(128), c(128)))
C = make_buffer("C", (c(128), c(128)))


def spans(region: BufferRegion) -> list[tuple[object, object]]:
    result = []
    for item in region.region:
        low = item.min.value if isinstance(item.min, IntImm) else item.min
        result.append((low, item.extent.value if isinstance(item.extent, IntImm) else item.extent))
    return result


def test_reduction_update_is_only_a_write() -> None:
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    update = S.BufferStore(
        C,
        E.Add(
            E.BufferLoad(C, (vi, vj)), E.Mul(E.BufferLoad(A, (vi, vk)), E.BufferLoad(B, (vj, vk)))
        ),
        (vi, vj),
    )
    block = S.SBlock("C", (), (), (), update, init=S.BufferStore(C, E.FloatImm(0.0), (vi, vj)))
    reads, writes = infer_access_regions(block)
    assert [r.buffer.name for r in reads] == ["A", "B"]
    assert [w.buffer.name for w in writes] == ["C"]
    assert spans(reads[0]) == [(vi, 1), (vk, 1)]


def test_inner_loops_relax_to_bounding_boxes() -> None:
    # for k in range(8): A[vi, k * 2] = B[vi, k] + B[vi, k + 1] + B[vi + 1, 3]; A[vi, 1] = 1
    vi, k = Var("vi"), Var("k")
    value = E.Add(
        E.Add(E.BufferLoad(B, (vi, k)), E.BufferLoad(B, (vi, E.Add(k, c(1))))),
        E.BufferLoad(B, (E.Add(vi, c(1)), c(3))),
    )
    body = S.For(
        k,
        c(0),
        c(8),
        S.ForKind.SERIAL,
        S.seq(
            S.BufferStore(A, value, (vi, E.Mul(k, c(2)))),
            S.BufferStore(A, E.FloatImm(1.0), (vi, c(1))),
        ),
    )
    reads, writes = infer_access_regions(S.SBlock("D", (), (), (), body))
    assert spans(reads[0]) == [(vi, 2), (0, 9)]  # TVM: B[vi:vi + 2, 0:9]
    assert spans(writes[0]) == [(vi, 1), (0, 15)]  # TVM: A[vi, 0:15]


def test_access_ptr_reads_the_whole_buffer() -> None:
    vi = Var("vi")
    pointer = E.Call(
        dt.HANDLE,
        "tvm_access_ptr",
        (E.Call(dt.FLOAT32, "type_annotation", ()), A.data, c(0), c(16), c(1)),
    )
    call = E.Call(dt.INT32, "call_extern", (E.StringImm("f"), pointer, E.BufferLoad(B, (vi, c(0)))))
    block = S.SBlock("E", (), (), (), S.Evaluate(call))
    reads, writes = infer_access_regions(block, {A.data: A})
    assert [r.buffer.name for r in reads] == ["A", "B"]  # TVM: T.reads(A[0:128, 0:128], B[vi, 0])
    assert spans(reads[0]) == [(0, 128), (0, 128)]
    assert writes == ()


def test_allocated_buffers_are_not_listed() -> None:
    vi = Var("vi")
    local = make_buffer("local", (c(4),), scope="local")
    body = S.seq(
        S.BufferStore(local, E.BufferLoad(A, (vi, c(0))), (c(0),)),
        S.BufferStore(B, E.BufferLoad(local, (c(0),)), (vi, c(0))),
    )
    reads, writes = infer_access_regions(S.SBlock("F", (), (), (), body, alloc_buffers=(local,)))
    assert [r.buffer.name for r in reads] == ["A"] and [w.buffer.name for w in writes] == ["B"]


def test_nested_block_regions_seen_through_bindings() -> None:
    i, vo = Var("i"), Var("vo")
    inner_var = Var("v")
    inner = S.SBlock(
        "inner",
        (S.IterVar(inner_var, Range(c(0), c(128)), S.IterType.SPATIAL),),
        (BufferRegion(A, (Range(inner_var, c(1)), Range(c(0), c(128)))),),
        (BufferRegion(B, (Range(inner_var, c(1)), Range(c(0), c(128)))),),
        S.Evaluate(c(0)),
    )
    realize = S.SBlockRealize((E.Add(E.Mul(vo, c(4)), i),), IntImm(1, dt.BOOL), inner)
    body = S.For(i, c(0), c(4), S.ForKind.SERIAL, realize)
    reads, writes = infer_access_regions(S.SBlock("outer", (), (), (), body))
    assert spans(reads[0])[1] == (0, 128)
    assert spans(writes[0])[0][1] == 4
