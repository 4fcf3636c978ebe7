"""Reductions over threadIdx loops, end to end: scheduled by tirc, lowered by the cuda pipeline
(lower-cross-thread-reduction ... lower-thread-allreduce), run in the interpreter's thread
model (warp shuffles, barriers, race checks), they compute what the unscheduled program does;
and what they lower to passes nvcc and ptxas. One case per all-reduce strategy: one warp, a
partial warp, groups of lanes in a warp, several warps (two-stage), a group size that is not
a power of two (shared-memory tree), 2-D thread blocks, argmax (two values).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse
from tirc.transform.passes.lower_thread_allreduce import LowerThreadAllreduce

ROW_SUM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer(({rows}, {cols}), "{dtype}"), B: T.Buffer(({rows},), "{dtype}")):
    for i, k in T.grid({rows}, {cols}):
        with T.sblock("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.{dtype}(0)
            B[vi] = B[vi] + A[vi, vk]
"""

ARGMAX = """
@T.prim_func(s_tir=True)
def main(idx: T.Buffer(({rows}, {cols}), "int32"), val: T.Buffer(({rows}, {cols}), "float32"),
         out_i: T.Buffer(({rows},), "int32"), out_v: T.Buffer(({rows},), "float32")):
    for i, k in T.grid({rows}, {cols}):
        with T.sblock("argmax"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                out_i[vi] = -1
                out_v[vi] = T.float32(-340282346638528859811704183484516925440.0)
            v_i: T.let[T.int32] = T.Select(out_v[vi] >= val[vi, vk], out_i[vi], idx[vi, vk])
            v_v: T.let[T.float32] = T.Select(out_v[vi] >= val[vi, vk], out_v[vi], val[vi, vk])
            out_i[vi] = v_i
            out_v[vi] = v_v
"""


def _plan(
    rows_per_block: int, threads: int, serial: bool, reduce_y: int = 0, chunks: bool = False
) -> str:
    """Rows to blockIdx.x (and threadIdx.y when several per block), the reduction split so
    its inner part (of `threads`) goes to threadIdx.x; with `reduce_y`, its outer part to
    threadIdx.y; with `chunks`, its outer part (of `threads`) to threadIdx.x, each thread
    taking a run of consecutive iterations."""
    steps: list[dict] = [
        {"op": "get_sblock", "name": "B", "out": "b"},
        {"op": "get_loops", "block": "b", "out": ["i", "k"]},
    ]
    if rows_per_block > 1:
        steps += [
            {"op": "split", "loop": "i", "factors": [None, rows_per_block], "out": ["i0", "i1"]},
            {"op": "bind", "loop": "i0", "thread": "blockIdx.x"},
            {"op": "bind", "loop": "i1", "thread": "threadIdx.y"},
        ]
    else:
        steps.append({"op": "bind", "loop": "i", "thread": "blockIdx.x"})
    if reduce_y:
        steps += [
            {"op": "split", "loop": "k", "factors": [reduce_y, threads], "out": ["ky", "kx"]},
            {"op": "bind", "loop": "ky", "thread": "threadIdx.y"},
            {"op": "bind", "loop": "kx", "thread": "threadIdx.x"},
        ]
    elif chunks:
        steps += [
            {"op": "split", "loop": "k", "factors": [threads, None], "out": ["k0", "k1"]},
            {"op": "bind", "loop": "k0", "thread": "threadIdx.x"},
        ]
    elif serial:
        steps += [
            {"op": "split", "loop": "k", "factors": [None, threads], "out": ["k0", "k1"]},
            {"op": "bind", "loop": "k1", "thread": "threadIdx.x"},
        ]
    else:
        steps.append({"op": "bind", "loop": "k", "thread": "threadIdx.x"})
    return json.dumps({"version": 1, "func": "main", "steps": steps})


def _scheduled(text: str, plan: str, block: str = "B") -> tuple[IRModule, IRModule]:
    module = parse(text)
    scheduled, _ = apply_plan(module, read_plan(plan.replace('"B"', f'"{block}"')), {})
    return module, scheduled


# (name, rows, cols, rows per block, threads, an in-thread serial part, threadIdx.y reduce)
CASES = [
    ("warp_32", 4, 64, 1, 32, True, 0),
    ("two_stage_64", 4, 64, 1, 64, False, 0),
    ("two_stage_128", 2, 512, 1, 128, True, 0),
    ("tree_100", 4, 100, 1, 100, False, 0),
    ("warp_24", 4, 24, 1, 24, False, 0),
    ("warp_groups_16x4", 8, 16, 4, 16, False, 0),
    ("tree_groups_12x4", 8, 12, 4, 12, False, 0),
    ("two_stage_groups_64x2", 4, 128, 2, 64, True, 0),
    ("two_dims_16x4", 4, 64, 1, 16, False, 4),
]


def _case(name: str) -> tuple[IRModule, IRModule]:
    _, rows, cols, per_block, threads, serial, reduce_y = next(c for c in CASES if c[0] == name)
    text = ROW_SUM.format(rows=rows, cols=cols, dtype="float32")
    return _scheduled(text, _plan(per_block, threads, serial, reduce_y))


def _calls(module: IRModule) -> set[str]:
    found: set[str] = set()
    walk(module, lambda node: found.add(node.op) if isinstance(node, E.Call) else None)
    return found


def _check_against_original(
    original: IRModule, lowered: IRModule, distinct: str | None = None
) -> None:
    inputs = random_inputs(original["main"], 0)
    if distinct is not None:
        # argmax of tied values depends on the order of combination: make them distinct
        array = np.asarray(inputs[distinct])
        values = np.random.default_rng(0).permutation(array.size)
        inputs[distinct] = values.reshape(array.shape).astype(array.dtype)
    expected = {key: np.array(value, copy=True) for key, value in inputs.items()}
    got = {key: np.array(value, copy=True) for key, value in inputs.items()}
    run(original["main"], expected)
    run(lowered["main"], got, module=lowered)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-5, err_msg=key)


@pytest.mark.parametrize("name", [case[0] for case in CASES])
def test_lowered_allreduce_matches_the_original(name: str) -> None:
    original, scheduled = _case(name)
    lowered = lower_module(scheduled, target="cuda")
    calls = _calls(lowered)
    assert "tvm_thread_allreduce" not in calls
    if "tree" not in name:
        assert "tvm_warp_shuffle_down" in calls and "tvm_warp_activemask" in calls
    _check_against_original(original, lowered)


def test_argmax_allreduce_matches_the_original() -> None:
    """Threads taking every 64th iteration: only a combiner that commutes can be combined
    in another order, and argmax keeping the earlier of equal values does not; with
    distinct values it is exact."""
    plan = _plan(1, 64, True)
    original, scheduled = _scheduled(ARGMAX.format(rows=8, cols=100), plan, block="argmax")
    lowered = lower_module(scheduled, target="cuda")
    assert "tvm_warp_shuffle_down" in _calls(lowered)
    _check_against_original(original, lowered, distinct="val")


# (name, rows, cols, rows per block, threads, each thread a run of iterations)
ARGMAX_CASES = [
    ("warp_32", 4, 32, 1, 32, False),
    ("warp_24", 4, 24, 1, 24, False),
    ("warp_groups_16x4", 8, 16, 4, 16, False),
    ("two_stage_64", 4, 64, 1, 64, False),
    ("two_stage_96", 4, 96, 1, 96, False),
    ("two_stage_groups_64x2", 4, 64, 2, 64, False),
    ("tree_100", 4, 100, 1, 100, False),
    ("tree_groups_12x4", 8, 12, 4, 12, False),
    ("warp_32_runs_of_4", 4, 128, 1, 32, True),
    ("two_stage_64_runs_of_4", 4, 256, 1, 64, True),
]


@pytest.mark.parametrize("name", [case[0] for case in ARGMAX_CASES])
def test_argmax_with_ties_matches_the_original(name: str) -> None:
    """The inputs' values repeat (16 of them), so the index depends on the order in which
    equal values meet: every strategy combines threads in thread order, as a loop would."""
    _, rows, cols, per_block, threads, chunks = next(c for c in ARGMAX_CASES if c[0] == name)
    plan = _plan(per_block, threads, False, chunks=chunks)
    text = ARGMAX.format(rows=rows, cols=cols)
    original, scheduled = _scheduled(text, plan, block="argmax")
    lowered = lower_module(scheduled, target="cuda")
    assert "tvm_thread_allreduce" not in _calls(lowered)
    for seed in range(3):
        inputs = random_inputs(original["main"], seed)
        expected = {key: np.array(value, copy=True) for key, value in inputs.items()}
        got = {key: np.array(value, copy=True) for key, value in inputs.items()}
        run(original["main"], expected)
        run(lowered["main"], got, module=lowered)
        for key in ("out_i", "out_v"):
            np.testing.assert_array_equal(got[key], expected[key], err_msg=f"{key}, seed {seed}")


@pytest.mark.parametrize("name", ["warp_32", "two_stage_128", "tree_100", "two_dims_16x4"])
def test_allreduce_compiles_with_nvcc_and_ptxas(name: str, tmp_path: Path) -> None:
    _, scheduled = _case(name)
    lowered = lower_module(scheduled, target="cuda")
    source = emit_cuda(lowered)
    if "tree" not in name:
        assert "__shfl_down_sync(mask" in source and "__activemask()" in source
    complaint = nvcc_accepts(source, tmp_path)
    assert not complaint, complaint
    ptx = emit_ptx(lowered, arch="sm_90")
    if "tree" not in name:
        assert "shfl.sync.down.b32" in ptx and "activemask.b32" in ptx
    complaint = ptxas_accepts(ptx, tmp_path)
    assert not complaint, complaint


@pytest.mark.parametrize("name", ["warp_24", "two_stage_96", "tree_100"])
def test_argmax_allreduce_compiles_with_nvcc_and_ptxas(name: str, tmp_path: Path) -> None:
    """Two values of two types: an int32 index and a float32 value shuffled apart."""
    _, rows, cols, per_block, threads, chunks = next(c for c in ARGMAX_CASES if c[0] == name)
    plan = _plan(per_block, threads, False, chunks=chunks)
    _, scheduled = _scheduled(ARGMAX.format(rows=rows, cols=cols), plan, block="argmax")
    lowered = lower_module(scheduled, target="cuda")
    source = emit_cuda(lowered)
    complaint = nvcc_accepts(source, tmp_path)
    assert not complaint, complaint
    complaint = ptxas_accepts(emit_ptx(lowered, arch="sm_90"), tmp_path)
    assert not complaint, complaint


@pytest.mark.parametrize("threads_outer", [False, True])
def test_load_beside_the_reduction_inside_its_loops(threads_outer: bool) -> None:
    """cache_read + compute_at put a loop of local loads under the thread-bound reduction
    loop, beside the block: a sequence between the reduction loops, which stays where it is
    (it was refused as "not the innermost loops")."""
    order = ["i", "k1", "k0"] if threads_outer else ["i", "k0", "k1"]
    plan = json.dumps(
        {
            "version": 1,
            "func": "main",
            "steps": [
                {"op": "get_sblock", "name": "B", "out": "b"},
                {"op": "get_loops", "block": "b", "out": ["i", "k"]},
                {"op": "split", "loop": "k", "factors": [None, 32], "out": ["k0", "k1"]},
                {"op": "reorder", "ordered_loops": order},
                {"op": "bind", "loop": "i", "thread": "blockIdx.x"},
                {"op": "bind", "loop": "k1", "thread": "threadIdx.x"},
                {
                    "op": "cache_read",
                    "block": "b",
                    "read_buffer_index": 0,
                    "storage_scope": "local",
                    "out": "a_local",
                },
                {"op": "compute_at", "block": "a_local", "loop": order[-1]},
            ],
        }
    )
    original, scheduled = _scheduled(ROW_SUM.format(rows=4, cols=128, dtype="float32"), plan)
    lowered = lower_module(scheduled, target="cuda")
    assert "tvm_warp_shuffle_down" in _calls(lowered)
    _check_against_original(original, lowered)


def test_reduction_loop_not_innermost_is_rejected() -> None:
    text = ROW_SUM.format(rows=8, cols=64, dtype="float32")
    plan = json.dumps(
        {
            "version": 1,
            "func": "main",
            "steps": [
                {"op": "get_sblock", "name": "B", "out": "b"},
                {"op": "get_loops", "block": "b", "out": ["i", "k"]},
                {"op": "reorder", "ordered_loops": ["k", "i"]},
                {"op": "bind", "loop": "k", "thread": "threadIdx.x"},
            ],
        }
    )
    _, scheduled = _scheduled(text, plan)
    with pytest.raises(DiagnosticError, match="must be the innermost loops around it"):
        lower_module(scheduled, target="cuda")


def _argmax_loop(values: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's (max, index) as a loop keeping the earlier of equal values finds it."""
    first = np.argmax(values, axis=1)
    rows = np.arange(values.shape[0])
    return values[rows, first], indices[rows, first]


def test_value_first_argmax_binds_both_results_before_storing() -> None:
    """The golden's two all-reduces (shuffles over 12 lanes; a shared-memory tree over
    groups of 12), lowered and run: the index is the one a loop finds, ties included."""
    path = Path(__file__).parent / "golden" / "lower_thread_allreduce" / "value_first.before.tir"
    module = parse(path.read_text(), name=str(path))
    lowered = LowerThreadAllreduce().run(module)
    assert "tvm_thread_allreduce" not in _calls(lowered)
    for name in ("main", "groups"):
        for seed in range(3):
            args = random_inputs(lowered[name], seed)
            run(lowered[name], args)
            want_v, want_i = _argmax_loop(np.asarray(args["val"]), np.asarray(args["idx"]))
            np.testing.assert_array_equal(args["out_v"], want_v)
            np.testing.assert_array_equal(args["out_i"], want_i, err_msg=f"{name}, seed {seed}")


SPLIT_GOLDEN = (
    Path(__file__).parent / "golden" / "lower_thread_allreduce" / "split_consumers.before.tir"
)


def test_an_all_reduce_of_a_split_s_consumers_syncs_them_alone() -> None:
    """In a warp-specialized split the all-reduce's barriers are the consumers' named barrier:
    the thread model runs it (a __syncthreads would deadlock: the producers never reach it)
    and it sums what it should, while the producers copy."""
    module = parse(SPLIT_GOLDEN.read_text(), name=str(SPLIT_GOLDEN))
    lowered = IRModule(
        tuple((n, LowerThreadAllreduce().run_function(f)) for n, f in module.functions)
    )
    ops: list[str] = []
    walk(lowered, lambda n: ops.append(n.op) if isinstance(n, E.Call) else None)
    assert ops.count("ptx_bar_sync") == 2 and "tvm_storage_sync" not in ops
    a = np.random.default_rng(5).uniform(-1, 1, (4, 128)).astype(np.float32)
    b, c = np.zeros(4, np.float32), np.zeros((4, 128), np.float32)
    run(lowered["main"], {"A": a, "B": b, "C": c}, gpu_model="threads")
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(c, a)


def test_an_all_reduce_among_a_split_s_producers_is_refused() -> None:
    lines = SPLIT_GOLDEN.read_text().splitlines()
    branch = lines.index("                        if p >= 1:")
    copy, reduce = lines[branch + 1], lines[branch + 3 : branch + 7]
    # the producers (then) all-reduce, the consumers (else) copy
    lines[branch + 1 : branch + 7] = [*reduce, "                        else:", copy]
    module = parse("\n".join(lines), name="producers.tir")
    with pytest.raises(DiagnosticError) as caught:
        LowerThreadAllreduce().run_function(module["main"])
    error = caught.value.diagnostics[0]
    assert "in the producer branch of a warp-specialized split" in error.message
    assert error.span is not None and error.span.line == branch + 3  # the all-reduce
