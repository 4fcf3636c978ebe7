"""Warp specialization from a plan (inject-warp-specialization, before inject-software-pipeline
in the cuda pipeline): a pipelined loop annotated `software_pipeline_warp_specialize` becomes
producer threads that copy and consumer threads that compute, over a full/empty mbarrier ring.

- the thread model orders a producer's ordinary stores before its consumers' reads through the
  mbarrier (arrive after the stores) and reports the race when the arrive comes first;
- the lowered program computes exactly what the software-pipelined one does (thread model:
  races and deadlocks are errors), with as many producers as consumers or half as many;
- the sample plan (samples/gpu/gemm_wgmma_tensorize.mma_ws.plan.json) matches numpy and its
  CUDA C assembles for sm_90a with no spills;
- every case the pass cannot lower is refused at its line; a block barrier the consumers'
  code has becomes their named barrier (thread-sync).
The pass's before/after pairs are goldens (golden/inject_warp_specialization).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.gpu_plans import GpuPlan, gpu_plans
from tests.codegen_cuda.helpers import nvcc_accepts, require_tool
from tests.transform.helpers import run_passes
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.cuda.kernels import module_kernels
from tirc.codegen.cuda.tma import check_tma_arch
from tirc.diagnostics import DiagnosticError
from tirc.driver.cuda_toolchain import has_nvrtc, ptx_from_cuda
from tirc.driver.kernel_resources import KernelResources, ptx_resources, register_budget
from tirc.driver.lower import lower_module
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse

PROGRAMS = Path(__file__).parent / "programs"
MATMUL = PROGRAMS / "async_pipeline_matmul.tir"
ANNOTATIONS = (
    '{"software_pipeline_async_stages": [0], "software_pipeline_order": [0, 1, 2], '
    '"software_pipeline_stage": [0, 0, 1]}'
)


def matmul(stages: int, producers: int | None, extra: str = "") -> IRModule:
    """The 64x64x128 tiled matmul (64 threads a block, copies in stage 0, compute in stage
    `stages - 1`), warp-specialized with `producers` threads (None: not)."""
    text = MATMUL.read_text()
    assert ANNOTATIONS in text
    specialize = "" if producers is None else f', "software_pipeline_warp_specialize": {producers}'
    annotations = (
        '{"software_pipeline_order": [0, 1, 2], '
        f'"software_pipeline_stage": [0, 0, {stages - 1}]{specialize}{extra}}}'
    )
    return parse(text.replace(ANNOTATIONS, annotations), name=str(MATMUL))


def calls(node: Node, op: str) -> list[E.Call]:
    found: list[E.Call] = []

    def look(item: Node) -> None:
        if isinstance(item, E.Call) and item.op == op:
            found.append(item)

    walk(node, look)
    return found


def split_of(module: IRModule) -> S.AttrStmt:
    found: list[S.AttrStmt] = []

    def look(item: Node) -> None:
        if isinstance(item, S.AttrStmt) and item.key == "warp_specialize_scope":
            found.append(item)

    walk(module, look)
    (split,) = found
    return split


# --- the thread model's mbarrier ordering of ordinary stores

# 32 producer threads store rows of A into a 2-stage ring and arrive on full (ARRIVE marks
# where: after the store, or before it); 32 consumers wait for full, sum the row reversed (each
# reads another thread's store) and arrive on empty, which the producer waits for to refill
STORES = """
@T.prim_func
def main(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), "float32", scope="shared")
    full = T.alloc_buffer((2,), "uint64", scope="shared")
    empty = T.alloc_buffer((2,), "uint64", scope="shared")
    acc = T.alloc_buffer((1,), "float32", scope="local")
    if tx == 0:
        for s in range(2):
            T.ptx_mbarrier_init(full.data, s, 32)
            T.ptx_mbarrier_init(empty.data, s, 32)
    T.tvm_storage_sync("shared")
    if tx >= 32:
        for k in range(16):
            if k >= 2:
                T.ptx_mbarrier_wait(empty.data, k % 2, (k // 2 + 1) % 2)
            BEFORE
            S[k % 2 * 32 + tx - 32] = A[k, tx - 32]
            AFTER
    else:
        acc[0] = T.float32(0)
        for k in range(16):
            T.ptx_mbarrier_wait(full.data, k % 2, k // 2 % 2)
            acc[0] = acc[0] + S[k % 2 * 32 + 31 - tx]
            T.ptx_mbarrier_arrive(empty.data, k % 2)
        B[tx] = acc[0]
"""
ARRIVE = "T.ptx_mbarrier_arrive(full.data, k % 2)"


def _run_stores(before: bool) -> tuple[np.ndarray, np.ndarray]:
    text = STORES.replace("BEFORE", ARRIVE if before else "").replace(
        "AFTER", "" if before else ARRIVE
    )
    module = parse(text)
    a = np.random.default_rng(5).standard_normal((16, 32)).astype("float32")
    b = np.zeros(32, "float32")
    run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    return a, b


def test_stores_before_the_arrive_are_ordered_before_the_waiting_readers() -> None:
    a, b = _run_stores(before=False)
    np.testing.assert_allclose(b, a.sum(axis=0)[::-1], rtol=1e-5)


def test_an_arrive_before_the_stores_races_with_the_readers() -> None:
    with pytest.raises(DiagnosticError) as error:
        _run_stores(before=True)
    message = error.value.diagnostics[0].message
    assert "data race on shared memory 'S'" in message
    assert re.search(r"thread \(\d+, 0, 0\) of block \(0, 0, 0\) reads it after thread", message)


# the same ring filled by cp.async, each producer thread arriving by
# cp.async.mbarrier.arrive.noinc (an arrival once its copies so far have landed)
ARRIVE_ON_COPIES = "T.ptx_mbarrier_arrive_cp_async(full.data, k % 2)"
CP_ASYNC = 'T.ptx_cp_async("float32", S.data, k % 2 * 32 + tx - 32, A.data, k * 32 + tx - 32, 4)'


def _run_copies(before: bool) -> tuple[np.ndarray, np.ndarray]:
    text = STORES.replace("S[k % 2 * 32 + tx - 32] = A[k, tx - 32]", CP_ASYNC)
    text = text.replace("BEFORE", ARRIVE_ON_COPIES if before else "")
    module = parse(text.replace("AFTER", "" if before else ARRIVE_ON_COPIES))
    a = np.random.default_rng(5).standard_normal((16, 32)).astype("float32")
    b = np.zeros(32, "float32")
    run(module["main"], {"A": a, "B": b}, module=module, gpu_model="threads")
    return a, b


def test_an_arrival_on_copies_completes_when_they_land() -> None:
    a, b = _run_copies(before=False)
    np.testing.assert_allclose(b, a.sum(axis=0)[::-1], rtol=1e-5)


def test_an_arrival_on_copies_before_them_lets_the_consumers_read_old_tiles() -> None:
    """The arrival tracks only the copies issued before it: each phase completes with the
    previous iteration's copy, so the consumers read a tile its copy has not written yet,
    and the copy lands after their read, which nothing ordered before it: a data race at
    the copy."""
    with pytest.raises(DiagnosticError) as error:
        _run_copies(before=True)
    diagnostic = error.value.diagnostics[0]
    assert "data race on shared memory 'S'" in diagnostic.message
    assert re.search(
        r"thread \(\d+, 0, 0\) of block \(0, 0, 0\) writes it after thread", diagnostic.message
    )
    assert diagnostic.span is not None
    text = STORES.replace("S[k % 2 * 32 + tx - 32] = A[k, tx - 32]", CP_ASYNC)
    lines = text.replace("BEFORE", ARRIVE_ON_COPIES).replace("AFTER", "").splitlines()
    assert "T.ptx_cp_async(" in lines[diagnostic.span.line - 1]


# --- the lowering


def outputs(module: IRModule, seed: int) -> dict[str, np.ndarray | int]:
    args = random_inputs(module["main"], seed)
    run(module["main"], args, module=module, gpu_model="threads")
    return args


@pytest.mark.parametrize(
    ("stages", "producers"),
    [
        (2, 64),
        # 5-10 s each in the thread model
        pytest.param(3, 64, marks=pytest.mark.slow),
        pytest.param(2, 32, marks=pytest.mark.slow),
        pytest.param(4, 32, marks=pytest.mark.slow),
    ],
)
def test_specialized_loop_computes_what_the_pipelined_one_does(stages: int, producers: int) -> None:
    """Bit for bit: each output sums its products in the same order either way."""
    pipelined = lower_module(matmul(stages, None), target="cuda")
    specialized = lower_module(matmul(stages, producers), target="cuda")
    split = split_of(specialized)
    assert E.int_value(split.value) == producers
    assert not calls(split, "tvm_storage_sync")  # no __syncthreads in the divergent branches
    (kernel,) = module_kernels(specialized)
    assert kernel.threads_per_block() == 64 + producers
    inits = calls(specialized, "ptx_mbarrier_init")
    assert sorted(E.int_value(call.args[2]) for call in inits) == sorted([64, producers])
    want, got = outputs(pipelined, stages), outputs(specialized, stages)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


# --- the sample plan


def _sample_plan() -> GpuPlan:
    (plan,) = [p for p in gpu_plans("gemm_wgmma_tensorize") if p.id.endswith("mma_ws")]
    return plan


def _sample(extra_steps: tuple[dict[str, object], ...] = ()) -> IRModule:
    """The sample GEMM at its test shape, scheduled by the sample plan and `extra_steps`,
    lowered for cuda."""
    plan = _sample_plan()
    module = parse(plan.program.read_text(), name=str(plan.program), defines=dict(plan.defines))
    steps = json.loads(plan.plan.read_text())
    steps["steps"] += list(extra_steps)
    scheduled, _ = apply_plan(module, read_plan(json.dumps(steps)))
    return lower_module(scheduled, target="cuda")


def test_sample_plan_matches_numpy_in_the_thread_model() -> None:
    plan = _sample_plan()
    shape = dict(plan.defines)
    m, n, k = (int(shape[name]) for name in "MNK")
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    args: dict[str, np.ndarray] = {"A": a, "B": b, "C": np.full((m, n), np.nan, np.float32)}
    lowered = plan.lowered()
    run(lowered["main"], args, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(
        args["C"], a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4
    )


def _resources(source: str, directory: Path) -> KernelResources:
    if has_nvrtc():
        ptx = ptx_from_cuda(source, "sm_90a")
    else:
        nvcc = require_tool("nvcc")
        cu, out = directory / "ptx.cu", directory / "kernel.ptx"
        cu.write_text(source)
        subprocess.run([nvcc, "-arch=sm_90a", "-ptx", str(cu), "-o", str(out)], check=True)
        ptx = out.read_text()
    (kernel,) = ptx_resources(ptx, "sm_90a")
    return kernel


@pytest.mark.slow  # nvcc, twice
def test_sample_plan_assembles_for_sm90a_without_spills(tmp_path: Path) -> None:
    plan = _sample_plan()
    assert plan.arch == "sm_90a"
    source = emit_cuda(plan.lowered())
    assert "mbarrier.try_wait.parity" in source and "mma.sync.aligned.m16n8k16" in source
    assert "__launch_bounds__(256)" in source  # 128 copying threads beside 4 warps
    assert nvcc_accepts(source, tmp_path, "sm_90a") == ""
    kernel = _resources(source, tmp_path)
    assert kernel.spills == 0, kernel.summary()
    assert kernel.registers <= register_budget(256), kernel.summary()


def test_asynchronous_copies_arrive_when_they_land() -> None:
    """cp.async copies, two arrivals a producer thread (after issuing, and on landing): the
    same result as the asynchronous software pipeline, bit for bit."""
    async_stages = ', "software_pipeline_async_stages": [0]'
    pipelined = lower_module(matmul(2, None, async_stages), target="cuda")
    specialized = lower_module(matmul(2, 64, async_stages), target="cuda")
    split = split_of(specialized)
    assert calls(split, "ptx_cp_async") and not calls(split, "ptx_wait_group")
    assert len(calls(split, "ptx_mbarrier_arrive_cp_async")) == 1
    inits = calls(specialized, "ptx_mbarrier_init")
    assert sorted(E.int_value(call.args[2]) for call in inits) == [64, 128]
    assert "cp.async.mbarrier.arrive.noinc.shared::cta.b64" in emit_cuda(specialized)
    want, got = outputs(pipelined, 4), outputs(specialized, 4)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_register_counts_move_between_the_warpgroups() -> None:
    """128 producers and 128 consumers: setmaxnreg.dec in the one, .inc in the other."""
    step: dict[str, object] = {
        "op": "annotate",
        "target": "uk0",
        "key": "software_pipeline_max_registers",
        "value": [40, 232],
    }
    lowered = _sample((step,))
    body = split_of(lowered).body  # common-subexpr-elim's bindings, then the branches
    (branches,) = [s for s in getattr(body, "stmts", (body,)) if isinstance(s, S.IfThenElse)]
    assert branches.else_case is not None
    directions = [
        (getattr(call.args[0], "value", None), E.int_value(call.args[1]))
        for branch in (branches.then_case, branches.else_case)
        for call in calls(branch, "ptx_setmaxnreg")
    ]
    assert directions == [("dec", 40), ("inc", 232)]
    assert "setmaxnreg.inc.sync.aligned.u32 232;" in emit_cuda(lowered)


# --- refusals, each at its line


def _line_of(text: str, marker: str) -> int:
    (line,) = [i for i, item in enumerate(text.splitlines(), 1) if marker in item]
    return line


def _refused(module: IRModule, passes: str = "") -> DiagnosticError:
    with pytest.raises(DiagnosticError) as error:
        if passes:
            run_passes(module, passes)
        else:
            lower_module(module, target="cuda")
    return error.value


LOOP_LINE = _line_of(MATMUL.read_text(), "for k_0 in T.serial")


@pytest.mark.parametrize(
    ("stages", "producers", "extra", "message"),
    [
        (2, 48, "", "cannot add 48 producer threads to a block of threadIdx.x=64"),
        (2, 128, "", "cannot add 128 producer threads"),
        (2, 0, "", "'software_pipeline_warp_specialize' must be a positive integer"),
        (2, 64, ', "software_pipeline_async_stages": [1]', "may name stage 0 only"),
        (2, 64, ', "software_pipeline_max_registers": [40, 232]', "whole warpgroups"),
        (1, 64, "", "copies in stage 0 and its compute in later stages"),
    ],
)
def test_refused_at_the_loop(stages: int, producers: int, extra: str, message: str) -> None:
    error = _refused(matmul(stages, producers, extra))
    diagnostic = error.diagnostics[0]
    assert message in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == LOOP_LINE


def test_a_loop_not_pipelined_is_refused() -> None:
    text = MATMUL.read_text().replace(ANNOTATIONS, '{"software_pipeline_warp_specialize": 64}')
    error = _refused(parse(text))
    assert "needs a software-pipelined loop" in error.diagnostics[0].message
    assert error.diagnostics[0].span is not None and error.diagnostics[0].span.line == LOOP_LINE


def test_a_stage0_statement_that_is_not_a_copy_into_shared_memory_is_refused() -> None:
    # the compute in stage 0 and the copy of B in stage 1: C is global memory
    source = MATMUL.read_text().replace(
        ANNOTATIONS,
        '{"software_pipeline_stage": [0, 1, 0], "software_pipeline_warp_specialize": 64}',
    )
    error = _refused(parse(source))
    diagnostic = error.diagnostics[0]
    assert "producer's copies into shared memory: this writes 'C' in 'global' memory" in (
        diagnostic.message
    )
    assert diagnostic.span is not None
    assert diagnostic.span.line == _line_of(source, "C[vi, vj] = T.float32(0.0)")  # the first


def test_hopper_calls_are_refused_before_sm90_at_the_loop() -> None:
    lowered = lower_module(matmul(2, 64), target="cuda")
    with pytest.raises(DiagnosticError) as error:
        check_tma_arch(lowered, "sm_80")
    diagnostic = error.value.diagnostics[0]
    assert "needs sm_90 or later" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == LOOP_LINE


GOLDEN = Path(__file__).parent / "golden" / "inject_warp_specialization" / "basic.before.tir"


def test_a_consumer_block_barrier_becomes_the_consumers_named_barrier() -> None:
    """A __syncthreads before the loop runs in the consumers only: thread-sync makes it
    bar.sync 1 of the 64 consumers (tests/transform/test_named_barrier_sync.py has more)."""
    text = GOLDEN.read_text()
    marker = "                for k_0 in T.serial(4"
    assert marker in text
    text = text.replace(marker, '                T.tvm_storage_sync("shared")\n' + marker)
    split = split_of(lower_module(parse(text), target="cuda"))
    assert not calls(split, "tvm_storage_sync")
    (barrier,) = calls(split, "ptx_bar_sync")
    assert [E.int_value(arg) for arg in barrier.args] == [1, 64]


def test_a_loop_inside_a_condition_is_refused() -> None:
    text = GOLDEN.read_text()
    marker = "                for k_0 in T.serial(4"
    assert marker in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(marker))
    body = [line for line in lines[at:] if line.strip()]
    wrapped = [lines[at].replace("for k_0", "if blockIdx_x < 4:\n                    for k_0")]
    wrapped += ["    " + line for line in body[1:]]
    text = "\n".join(lines[:at] + wrapped) + "\n"
    error = _refused(parse(text), "inject-warp-specialization")
    diagnostic = error.diagnostics[0]
    assert "not in another loop or condition" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == at + 2


def test_a_thread_binding_inside_the_kernel_body_is_refused_at_it() -> None:
    text = GOLDEN.read_text().rstrip("\n") + "\n"
    text += '                for ty in T.thread_binding(2, thread="threadIdx.y"):\n'
    text += "                    C[ty, 0] = T.float32(0.0)\n"
    error = _refused(parse(text), "inject-warp-specialization")
    diagnostic = error.diagnostics[0]
    assert "thread bindings around its whole body: this one is inside it" in diagnostic.message
    assert diagnostic.span is not None
    assert diagnostic.span.line == _line_of(text, 'thread="threadIdx.y"')


# thread-sync in a warp-specialized split: a consumer that writes shared memory other consumer
# threads then read needs a barrier that only the consumers reach: their named barrier
SPLIT = """
@T.prim_func
def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((32,), "float32", scope="shared")
    with T.attr({"warp_specialize_scope": 32}):
        if tx >= 32:
            B[tx] = A[tx]
        else:
            S[tx] = A[tx]
            B[tx] = S[31 - tx]
"""


def test_thread_sync_puts_the_consumers_named_barrier_inside_the_split() -> None:
    split = split_of(run_passes(parse(SPLIT), "thread-sync"))
    assert not calls(split, "tvm_storage_sync")
    (barrier,) = calls(split, "ptx_bar_sync")
    assert [E.int_value(arg) for arg in barrier.args] == [1, 32]
