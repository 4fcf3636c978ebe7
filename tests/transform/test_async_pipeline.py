"""Asynchronous software pipelines end to end: inject-software-pipeline's async stages, thread-sync
and inject-ptx-async-copy in the cuda pipeline. The lowered program computes what the
unscheduled one does in the interpreter, whose cp.async lands only when a wait retires it (so a
wait count one too lax is caught); the CUDA C waits, then synchronizes, then reads; nvcc and
ptxas accept it. The passes' own before/after pairs are goldens (golden/inject_software_pipeline
/async_*, golden/inject_ptx_async_copy, golden/thread_sync/async_pipeline).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts
from tests.transform.helpers import run_passes
from tirc.codegen.cuda.module import emit_cuda
from tirc.codegen.nvptx.module import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import Mutator, walk
from tirc.ir.node import Node
from tirc.text import parse

PROGRAMS = Path(__file__).parent / "programs"
MATMUL = PROGRAMS / "async_pipeline_matmul.tir"
INTERLEAVED = PROGRAMS / "async_pipeline_interleaved.tir"
STAGES = '"software_pipeline_stage": [0, 0, 1]'


def matmul(stages: int) -> IRModule:
    """The matmul with its compute in stage `stages - 1` (a pipeline of `stages` stages)."""
    text = MATMUL.read_text()
    assert STAGES in text
    text = text.replace(STAGES, f'"software_pipeline_stage": [0, 0, {stages - 1}]')
    return parse(text, name=str(MATMUL))


def calls(module: Node, op: str) -> list[E.Call]:
    found: list[E.Call] = []

    def look(node: Node) -> None:
        if isinstance(node, E.Call) and node.op == op:
            found.append(node)

    walk(module, look)
    return found


def outputs(module: IRModule, seed: int) -> dict[str, np.ndarray | int]:
    args = random_inputs(module["main"], seed)
    run(module["main"], args, module=module)
    return args


def assert_computes_the_same(original: IRModule, lowered: IRModule) -> None:
    want, got = outputs(original, 3), outputs(lowered, 3)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize("stages", [2, 3, 4])
def test_pipelined_matmul_computes_the_same(stages: int) -> None:
    """16-byte cp.async for every copy; the loop waits with stages - 2 groups in flight, before
    it issues this step's copies (the tile it reads complete, the later ones not), the
    epilogue with fewer down to 0."""
    original = matmul(stages)
    lowered = lower_module(original, target="cuda")
    copies = calls(lowered, "ptx_cp_async")
    assert copies and all(E.int_value(call.args[4]) == 16 for call in copies)
    counts = sorted({E.int_value(call.args[0]) for call in calls(lowered, "ptx_wait_group")})
    assert counts == list(range(stages - 1))
    assert_computes_the_same(original, lowered)


def test_predicated_interleaved_copies_compute_the_same() -> None:
    """Predicated 4-byte copies, two commit groups a step around the compute: the loop waits
    with 4 groups in flight before the step's first group, exactly enough (5 in front of the
    compute; TVM 0.27 waits with 5 there, but commits the prologue's copies in fewer groups,
    so its first steps read copies still in flight)."""
    original = parse(INTERLEAVED.read_text(), name=str(INTERLEAVED))
    lowered = lower_module(original, target="cuda")
    copies = calls(lowered, "ptx_cp_async")
    # the loop's copies predicated; the prologue's predicates hold for its steps, and simplify
    # (knowing the loop's range) drops them
    assert [len(call.args) for call in copies] == [5, 5, 5, 5, 6, 6]
    counts = [E.int_value(call.args[0]) for call in calls(lowered, "ptx_wait_group")]
    assert counts == [4, 4, 2, 0]
    assert_computes_the_same(original, lowered)


class _Laxer(Mutator):
    """Every wait leaves one group more in flight than it should."""

    def visit_Call(self, node: E.Call) -> E.PrimExpr:
        if node.op != "ptx_wait_group":
            return node
        count = node.args[0]
        assert isinstance(count, E.IntImm)
        return dataclasses.replace(node, args=(E.IntImm(count.value + 1, count.dtype),))


def test_a_lax_wait_is_caught() -> None:
    """In the interpreter a copy lands when a wait retires it: one group too many in flight
    and a thread reads what another's copy has not yet written."""
    lowered = lower_module(matmul(2), target="cuda")
    functions = tuple((name, _Laxer().visit(func)) for name, func in lowered.functions)
    lax = dataclasses.replace(lowered, functions=functions)
    with pytest.raises(DiagnosticError, match="data race on shared memory 'A_shared'"):
        outputs(lax, 3)


def kernel_source(module: IRModule) -> str:
    return emit_cuda(module)


@pytest.mark.parametrize("stages", [2, 3])  # 4 stages of 4 tiles: no loop left
def test_cuda_waits_then_synchronizes_then_reads(stages: int) -> None:
    """The loop as CUTLASS's multistage mainloop has it: wait for the tile it reads, one
    barrier (it orders both the landed copies before the reads and the last step's reads
    before this step's copies overwrite that version), the next copies, commit, reads."""
    source = kernel_source(lower_module(matmul(stages), target="cuda"))
    loop = source[source.index("for (int k_0") :]
    order = re.findall(
        r"cp\.async\.cg\.shared\.global|cp\.async\.commit_group|cp\.async\.wait_group \d+|"
        r"__syncthreads\(\)|[AB]_shared\[",
        loop,
    )
    waits = [k for k, item in enumerate(order) if item.startswith("cp.async.wait_group")]
    body = order[: waits[1]]  # the epilogue starts with the second wait
    assert body[:2] == [f"cp.async.wait_group {stages - 2}", "__syncthreads()"]
    commit = body.index("cp.async.commit_group")
    assert set(body[2:commit]) == {"cp.async.cg.shared.global"}
    assert body[commit + 1] == "A_shared["
    assert body.count("__syncthreads()") == 1


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_cuda_compiles(arch: str, tmp_path: Path) -> None:
    source = kernel_source(lower_module(matmul(3), target="cuda"))
    assert nvcc_accepts(source, tmp_path, arch) == ""
    interleaved = parse(INTERLEAVED.read_text(), name=str(INTERLEAVED))
    source = kernel_source(lower_module(interleaved, target="cuda"))
    assert nvcc_accepts(source, tmp_path, arch) == ""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvptx_assembles(arch: str, tmp_path: Path) -> None:
    ptx = emit_ptx(lower_module(matmul(3), target="cuda"), arch=arch)
    assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group 1;" in ptx
    assert ptxas_accepts(ptx, tmp_path, arch) == ""
    interleaved = parse(INTERLEAVED.read_text(), name=str(INTERLEAVED))
    ptx = emit_ptx(lower_module(interleaved, target="cuda"), arch=arch)
    assert re.search(r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4, %r\d+;", ptx)
    assert ptxas_accepts(ptx, tmp_path, arch) == ""


def pipeline_program(stage: str, order: str, async_stages: str) -> str:
    return f"""
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16,), "float32"), C: T.Buffer((16,), "float32")):
    for tx in T.thread_binding(1, thread="threadIdx.x"):
        for i in T.serial(16, annotations={{"software_pipeline_stage": {stage},
                "software_pipeline_order": {order},
                "software_pipeline_async_stages": {async_stages}}}):
            with T.sblock("step"):
                S = T.sblock_alloc_buffer((1,), scope="shared")
                with T.sblock("copy"):
                    S[0] = A[i]
                with T.sblock("use"):
                    C[i] = S[0] + T.float32(1.0)
"""


@pytest.mark.parametrize(
    ("stage", "order", "message"),
    [
        ("[1, 0]", "[0, 1]", "reads 'S' before the asynchronous stage 1 that writes it commits"),
        ("[1, 1]", "[1, 0]", "reads 'S' before the asynchronous stage 1 that writes it commits"),
    ],
)
def test_a_read_before_the_commit_is_refused(stage: str, order: str, message: str) -> None:
    module = parse(pipeline_program(stage, order, "[0, 1]"))
    with pytest.raises(DiagnosticError, match=message) as caught:
        lower_module(module, target="cuda")
    assert caught.value.diagnostics[0].span is not None


def test_an_async_stage_nobody_reads_is_refused() -> None:
    module = parse(pipeline_program("[0, 1]", "[0, 1]", "[1]"))
    with pytest.raises(DiagnosticError, match="nothing in the pipelined loop reads what this"):
        lower_module(module, target="cuda")


IN_FLIGHT = """
@T.prim_func
def main(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    tx = T.launch_thread("threadIdx.x", 1)
    S = T.alloc_shared((4,), "float32")
    for i in range(4):
        S[i] = T.float32(0.0)
    T.ptx_cp_async("float32", S.data, 0, A.data, 0, 4)
    T.ptx_commit_group()
    T.ptx_cp_async("float32", S.data, 1, A.data, 1, 4)
    T.ptx_commit_group()
    T.ptx_cp_async("float32", S.data, 2, A.data, 2, 4)
    T.ptx_wait_group(1)
    B[0] = S[0]
    B[1] = S[1]
    T.ptx_wait_group(0)
    B[2] = S[1]
    B[3] = S[2]
    T.ptx_commit_group()
    T.ptx_wait_group(0)
    B[4] = S[2]
"""


def test_the_interpreter_lands_copies_when_a_wait_retires_them() -> None:
    """wait_group(n) completes every committed group but the n most recent; a copy not yet
    committed belongs to no group, and no wait completes it (PTX's cp.async.wait_group)."""
    module = parse(IN_FLIGHT)
    args = {"A": np.arange(1, 9, dtype="float32"), "B": np.full(8, -1, dtype="float32")}
    run(module["main"], args, module=module)
    assert list(args["B"][:5]) == [1, 0, 2, 0, 3]


def test_the_barrier_after_a_wait_is_needed() -> None:
    """golden/thread_sync/async_pending: with its barriers the program runs; without the one
    after the wait, a thread reads S before another's copy has landed."""
    path = Path(__file__).parent / "golden" / "thread_sync" / "async_pending.after.tir"
    module = parse(path.read_text(), name=str(path))
    args = random_inputs(module["main"], 0)
    a = np.array(args["A"]).reshape(4, 32)
    run(module["main"], args, module=module)
    np.testing.assert_array_equal(args["B"], (a[:, ::-1] * 2 + a[:, ::-1]).reshape(-1))
    text = path.read_text().replace(
        '        T.ptx_wait_group(0)\n        T.tvm_storage_sync("shared", T.bool(False), -1)\n',
        "        T.ptx_wait_group(0)\n",
    )
    assert text != path.read_text()
    module = parse(text, name=str(path))
    with pytest.raises(DiagnosticError, match="data race on shared memory 'S'"):
        run(module["main"], random_inputs(module["main"], 0), module=module)


def two_copies(stages: tuple[int, ...], order: tuple[int, ...], async_stages: set[int]) -> str:
    """Two tiles copied to shared memory and added, crossing threads (31 - tx)."""
    return f"""
@T.prim_func(s_tir=True)
def main(A: T.Buffer((6, 32), "float32"), B: T.Buffer((6, 32), "float32"),
         C: T.Buffer((6, 32), "float32")):
    for tx in T.thread_binding(32, thread="threadIdx.x"):
        for i in T.serial(6, annotations={{"software_pipeline_stage": {list(stages)},
                "software_pipeline_order": {list(order)},
                "software_pipeline_async_stages": {sorted(async_stages)}}}):
            with T.sblock("step"):
                SA = T.sblock_alloc_buffer((32,), scope="shared")
                SB = T.sblock_alloc_buffer((32,), scope="shared")
                with T.sblock("copy_a"):
                    SA[tx] = A[i, tx]
                with T.sblock("copy_b"):
                    SB[tx] = B[i, tx]
                with T.sblock("add"):
                    C[i, tx] = SA[31 - tx] + SB[31 - tx]
"""


def _configurations() -> list[tuple[tuple[int, ...], tuple[int, ...], set[int]]]:
    """Stages of the copies and the add (add last or later), orders, async stages of the
    copies: every third of them, so that each shape (interleaved groups, two async stages,
    the add in a copy's stage) is there."""
    found: list[tuple[tuple[int, ...], tuple[int, ...], set[int]]] = []
    for a, b, c in itertools.product(range(3), range(3), range(1, 4)):
        if c < max(a, b):
            continue
        for order in itertools.permutations(range(3)):
            if order[2] < max(order[:2]) and c == max(a, b):
                continue  # the add before a copy of its own stage: not a pipeline
            copies = sorted({a, b} - {c})  # an async stage holding the add: nothing waits
            for count in (1, 2):
                for chosen in itertools.combinations(copies, count):
                    found.append(((a, b, c), order, set(chosen)))
    return found[::3]


@pytest.mark.parametrize(
    ("stages", "order", "async_stages"),
    _configurations(),
    ids=lambda value: str(sorted(value) if isinstance(value, set) else list(value)),
)
def test_any_pipeline_waits_enough(
    stages: tuple[int, ...], order: tuple[int, ...], async_stages: set[int]
) -> None:
    """Prologue, body and epilogue wait for every copy a thread reads, and the barriers
    follow the waits: the lowered program adds the tiles, each thread the other end's. And
    no more than that: with one group more left in flight at every wait, it does not."""
    lowered = lower_module(parse(two_copies(stages, order, async_stages)), target="cuda")
    assert calls(lowered, "ptx_cp_async")
    assert _adds_the_tiles(lowered)
    functions = tuple((name, _Laxer().visit(func)) for name, func in lowered.functions)
    try:
        assert not _adds_the_tiles(dataclasses.replace(lowered, functions=functions))
    except DiagnosticError as error:
        assert "data race" in error.diagnostics[0].message


def _adds_the_tiles(module: IRModule) -> bool:
    args = outputs(module, 5)
    a, b = np.asarray(args["A"]), np.asarray(args["B"])
    return bool(np.array_equal(args["C"], a[:, ::-1] + b[:, ::-1]))


class _LoopBarrierDropper(Mutator):
    """The pipelined loop (k_0) without its barriers."""

    def __init__(self) -> None:
        self.in_loop = False

    def visit_For(self, node: S.For) -> S.Stmt:
        was = self.in_loop
        self.in_loop = was or node.loop_var.name == "k_0"
        result = self.generic_visit(node)
        self.in_loop = was
        return result

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        kept = [self.visit(stmt) for stmt in node.stmts if not (self.in_loop and _is_sync(stmt))]
        return S.seq(*kept)


def _is_sync(stmt: S.Stmt) -> bool:
    value = stmt.value if isinstance(stmt, S.Evaluate) else None
    return isinstance(value, E.Call) and value.op == "tvm_storage_sync"


@pytest.mark.parametrize("stages", [2, 3])
def test_the_loops_one_barrier_is_needed(stages: int) -> None:
    """The loop has one barrier a step, and it is needed: without it a thread's copy overwrites
    the version another thread is still reading, or a thread reads a tile before another's
    copy into it has landed (the interpreter's race tracker)."""
    lowered = lower_module(matmul(stages), target="cuda")
    (loop,) = [node for node in _loops(lowered) if node.loop_var.name == "k_0"]
    assert len(calls(loop, "tvm_storage_sync")) == 1
    functions = tuple((name, _LoopBarrierDropper().visit(func)) for name, func in lowered.functions)
    unsynced = dataclasses.replace(lowered, functions=functions)
    (loop,) = [node for node in _loops(unsynced) if node.loop_var.name == "k_0"]
    assert not calls(loop, "tvm_storage_sync")
    with pytest.raises(DiagnosticError, match="data race on shared memory '[AB]_shared'"):
        outputs(unsynced, 3)


def _loops(module: IRModule) -> list[S.For]:
    found: list[S.For] = []

    def look(node: Node) -> None:
        if isinstance(node, S.For):
            found.append(node)

    walk(module, look)
    return found


def test_a_programs_own_barrier_counts() -> None:
    """golden/thread_sync/own_barrier: thread-sync counts the program's barrier as one (the
    read after it needs no second), and the result runs in the interpreter without a race."""
    path = Path(__file__).parent / "golden" / "thread_sync" / "own_barrier.before.tir"
    module = parse(path.read_text(), name=str(path))
    synced = run_passes(module, "thread-sync")
    assert len(calls(synced, "tvm_storage_sync")) == 2  # the program's and the loop's top
    args = random_inputs(synced["main"], 0)
    a = np.array(args["A"]).reshape(4, 32)
    run(synced["main"], args, module=synced)
    np.testing.assert_array_equal(args["B"], a[:, ::-1].reshape(-1))
