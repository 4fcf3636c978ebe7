"""tirc's CUDA intrinsics print as TVM 0.27 spells them (each line below is one TVM 0.27 reads:
tests/interop/test_tvm_reads_samples.py checks that with TVM itself), read back to the same
calls, and tirc's older names and TVM's own printed forms still read."""

from __future__ import annotations

import pytest

from tests.text.build import BARE_HEADER
from tirc.diagnostics import DiagnosticError
from tirc.ir import dtype as dt
from tirc.ir import tvm_spelling
from tirc.ir.expr import Call, IntImm, StringImm, Var
from tirc.ir.functor import walk
from tirc.ir.structural import find_difference
from tirc.text import parse, print_module

BAR = 'T.tvm_access_ptr(T.type_annotation("uint64"), bar.data, 1, 1, 3)'
# tirc's spelling -> TVM 0.27's
SPELLINGS = [
    ("T.ptx_commit_group()", 'T.ptx.cp("async", "commit_group", "")'),
    ("T.ptx_wait_group(1)", 'T.ptx.cp(1, "async", "wait_group", "")'),
    ("T.ptx_tma_store_commit()", 'T.ptx.cp("async", "bulk", "commit_group", "")'),
    ("T.ptx_tma_store_wait(0)", 'T.ptx.cp(0, "async", "bulk", "wait_group", "", "")'),
    (
        "T.ptx_mbarrier_arrive_cp_async(bar.data, 1)",
        f'T.ptx.cp({BAR}, "async", "mbarrier", "arrive", "noinc", "shared::cta", "b64", "")',
    ),
    ("T.ptx_wgmma_fence()", 'T.ptx.wgmma("fence", "sync", "aligned", "")'),
    ("T.ptx_wgmma_commit_group()", 'T.ptx.wgmma("commit_group", "sync", "aligned", "")'),
    ("T.ptx_wgmma_wait_group(0)", 'T.ptx.wgmma(0, "wait_group", "sync", "aligned", "")'),
    ("T.ptx_fence_proxy_async()", 'T.ptx.fence("proxy", "async", "shared::cta", "")'),
    ('T.ptx_setmaxnreg("dec", 40)', 'T.ptx.setmaxnreg(40, "dec", "sync", "aligned", "u32", "")'),
    ("T.ptx_bar_sync(1, 256)", 'T.ptx.bar(1, 256, "", "sync", "")'),
    ("T.ptx_bar_arrive(1, 256)", 'T.ptx.bar(1, 256, "", "arrive", "")'),
    ("T.ptx_barrier_cluster_arrive()", 'T.ptx.barrier("cluster", "arrive", "", "", "")'),
    ("T.ptx_barrier_cluster_wait()", 'T.ptx.barrier("cluster", "wait", "", "", "")'),
    (
        "T.ptx_mbarrier_init(bar.data, 1, 128)",
        f'T.ptx.mbarrier({BAR}, 128, "init", "", "shared::cta", "b64", "")',
    ),
    (
        "T.ptx_mbarrier_arrive(bar.data, 1)",
        f'T.ptx.mbarrier({BAR}, "arrive", "", "", "shared::cta", "b64", "")',
    ),
    (
        "T.ptx_mbarrier_arrive_expect_tx(bar.data, 1, 8192)",
        f'T.ptx.mbarrier({BAR}, 8192, "arrive", "expect_tx", "", "", "shared::cta", "b64", "")',
    ),
    (
        "T.ptx_mbarrier_inval(bar.data, 1)",
        f'T.ptx.mbarrier({BAR}, "inval", "shared::cta", "b64", "")',
    ),
    ("T.ptx_mbarrier_wait(bar.data, 1, 0)", f"T.cuda.mbarrier_wait({BAR}, 0)"),
    (
        'T.mma_fill("float32", 8, Cw.data, 4)',
        'T.cuda.mma_fill_legacy(8, Cw.data, 4, dtype="float32")',
    ),
    (
        'T.mma_store("float32", 16, 16, A, Cw.data, 8, 16)',
        'T.cuda.mma_store_legacy(16, 16, A, Cw.data, 8, 16, dtype="float32")',
    ),
    (
        'T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", Aw.data, 0,'
        " Aw.data, 8, Cw.data, 0, T.bool(False))",
        'T.ptx_legacy.mma("m16n8k16", "row", "col", "fp16", "fp16", "fp32", Aw.data, 0,'
        ' Aw.data, 8, Cw.data, 0, T.bool(False), dtype="float32")',
    ),
    (
        'T.ptx_ldmatrix("float16", T.bool(False), 4, ".b16", Aw.data, 8, As.data, 16)',
        'T.ptx_legacy.ldmatrix(T.bool(False), 4, ".b16", Aw.data, 8, As.data, 16, dtype="float16")',
    ),
    (
        'T.ptx_cp_async("float16", As.data, 8, A, 16, 16)',
        'T.s_tir.cp_async_raw("float16", As.data, 8, A, 16, 16)',
    ),
]
# calls whose value is an expression
VALUES = [
    ("T.ptx_cluster_ctarank()", 'T.cuda.mov_sreg(32, "%cluster_ctarank")'),
    ("T.ptx_cluster_nctarank()", 'T.cuda.mov_sreg(32, "%cluster_nctarank")'),
    ('T.ptx_cluster_ctaid("y")', 'T.cuda.mov_sreg(32, "%cluster_ctaid.y")'),
    ('T.ptx_cluster_nctaid("x")', 'T.cuda.mov_sreg(32, "%cluster_nctaid.x")'),
    ('T.ptx_clusterid("z")', 'T.cuda.mov_sreg(32, "%clusterid.z")'),
    ('T.ptx_nclusterid("x")', 'T.cuda.mov_sreg(32, "%nclusterid.x")'),
]


def program(statements: list[str], values: list[str]) -> str:
    body = "".join(f"    {line}\n" for line in statements)
    for i, value in enumerate(values):
        body += f"    x{i}: T.int32 = {value}\n    T.evaluate(x{i})\n"
    return (
        "@T.prim_func\n"
        'def f(A: T.handle("float32", "global")):\n'
        '    bar = T.alloc_shared((4,), "uint64")\n'
        '    Cw = T.alloc_local((32,), "float32")\n'
        '    Aw = T.alloc_local((32,), "float16")\n'
        '    As = T.alloc_shared((512,), "float16")\n' + body
    )


def calls(node: object) -> list[Call]:
    found: list[Call] = []
    walk(node, lambda item: found.append(item) if isinstance(item, Call) else None)
    return found


TIRC = program([old for old, _ in SPELLINGS], [old for old, _ in VALUES])
TVM = program([new for _, new in SPELLINGS], [new for _, new in VALUES])


def test_prints_tvm_spelling() -> None:
    printed = print_module(parse(TIRC))
    lines = {line.strip() for line in printed.splitlines()}
    for old, new in SPELLINGS:
        assert new in lines, (old, printed)
    for old, new in VALUES:
        assert any(line.endswith(f"= {new}") for line in lines), (old, printed)
    tirc_names = [old.split("(")[0] for old, _ in SPELLINGS + VALUES]
    assert not [name for name in tirc_names if f"{name}(" in printed], printed


def test_tvm_spelling_reads_as_tirc_intrinsics() -> None:
    tirc, tvm = parse(TIRC), parse(TVM)
    assert find_difference(tirc, tvm) is None
    ops = {node.op for node in calls(tvm)}
    assert not {op for op in ops if op.startswith(("ptx.", "cuda.", "s_tir."))}, ops
    assert print_module(parse(print_module(tvm))) == print_module(tvm)


def test_tvm_printed_forms_read() -> None:
    """TVM wraps a barrier's address in cvta_generic_to_shared and its u32 operands in casts."""
    address = f"T.cuda.cvta_generic_to_shared({BAR})"
    text = program(
        [
            f'T.ptx.mbarrier({address}, T.uint32(128), "init", "", "shared::cta", "b64", "")',
            'T.ptx.bar(T.uint32(1), T.uint32(256), "", "sync", "")',
        ],
        [],
    )
    ops = [call.op for call in calls(parse(text)) if call.op.startswith("ptx")]
    assert ops == ["ptx_mbarrier_init", "ptx_bar_sync"]


@pytest.mark.parametrize(
    "text",
    [
        'T.ptx.mbarrier(bar.data, 128, "init", "", "shared::cta", "b64", "")',  # no address
        'T.ptx.mbarrier(T.tvm_access_ptr(T.type_annotation("uint64"), bar.data, 1, 2, 3), 1,'
        ' "init", "", "shared::cta", "b64", "")',  # two barriers
        'T.ptx.cp("async", "commit_group", "", "")',
        'T.ptx.fence("proxy", "alias", "", "")',
        'T.ptx.setmaxnreg(40, "inc", "sync", "aligned", "u64", "")',
        'T.ptx.bar(1, 2, 3, "", "sync", "")',
    ],
)
def test_other_instructions_stay_tvm_calls(text: str) -> None:
    module = parse(program([text], []))
    ops = [node.op for node in calls(module) if "ptx" in node.op]
    assert len(ops) == 1 and ops[0].startswith("ptx."), ops
    assert print_module(parse(print_module(module))) == print_module(module)


def test_unknown_special_register_stays_a_call() -> None:
    module = parse(program([], ['T.cuda.mov_sreg(32, "%laneid")']))
    ops = {node.op for node in calls(module)}
    assert "cuda.mov_sreg" in ops


def test_mma_fill_legacy_needs_its_dtype() -> None:
    with pytest.raises(DiagnosticError, match=r'needs its result type: dtype="..."'):
        parse(program(["T.cuda.mma_fill_legacy(8, Cw.data, 4)"], []))


def test_to_tvm_and_back_is_identity() -> None:
    data, index = Var("bar", dt.HANDLE), Var("s", dt.INT32)
    calls = [
        Call(dt.VOID, "ptx_mbarrier_init", (data, index, IntImm(128))),
        Call(dt.VOID, "ptx_setmaxnreg", (StringImm("inc"), IntImm(232))),
        Call(dt.INT32, "ptx_clusterid", (StringImm("y"),)),
    ]
    for call in calls:
        spelled = tvm_spelling.to_tvm(call)
        assert spelled is not None and spelled.op != call.op
        back = tvm_spelling.from_tvm(spelled)
        assert back is not None and find_difference(back, call) is None, (call, back)


def test_no_tvm_spelling_where_tvm_has_none() -> None:
    """A predicated cp.async and a register axis that is not a constant print as tirc's."""
    axis = Var("axis", dt.HANDLE)
    assert tvm_spelling.to_tvm(Call(dt.INT32, "ptx_clusterid", (axis,))) is None
    assert tvm_spelling.to_tvm(Call(dt.VOID, "ptx_setmaxnreg", (axis, IntImm(8)))) is None


def test_a_typed_pointer_binding_writes_its_call_result_type() -> None:
    """tirc's calls return plain handles; TVM's return typed pointers and check them against
    the binding, so the binding's type is written as the call's (TVM's test_roundtrip
    func_T_ptr_let_statement and test_decl_buffer_is_not_vectorized, byte for byte)."""
    text = BARE_HEADER + (
        "@T.prim_func\n"
        "def main(arg0: T.handle):\n"
        '    a: T.let[T.handle("float32", "global")] = T.reinterpret(T.handle("float32", '
        '"global").ty, T.tvm_struct_get(arg0, 0, 1, T.handle().ty))\n'
        '    b: T.let[T.handle("int64", "global")] = T.tvm_struct_get(arg0, 0, 2, '
        'T.handle("int64", "global").ty)\n'
        '    c: T.let[T.handle("int32", "global")] = T.call_extern(T.handle("int32", '
        '"global").ty, "dummy_func")\n'
        '    T.call_extern("int32", "use", a, b, c, T.tvm_struct_get(arg0, 0, 1, '
        "T.handle().ty))"
    )
    assert print_module(parse(text)) == text
