"""A software pipeline inside a pipelined loop (inject-software-pipeline): the outer loop takes
the inner pipeline as one statement or, as TVM does, as its prologue, body and epilogue, so
that the next tile's first register loads run before this tile's last products (the mma.sync
GEMM's fragment prefetch across k tiles, benchmarks/plans/gemm_mma_*_prefetch). The golden
pair is golden/inject_software_pipeline/nested_prefetch; here the lowered programs run in the
interpreter's thread model (races reported) against numpy."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tests.transform.helpers import run_passes
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.buffer import Buffer
from tirc.ir.function import IRModule
from tirc.ir.functor import Mutator, walk
from tirc.ir.node import Node
from tirc.text import parse

PROGRAMS = Path(__file__).parent / "programs"
ASYNC = PROGRAMS / "nested_pipeline_async.tir"

# one thread's row: a k loop copying a tile, an inner loop loading it into a register one step
# ahead; STAGES and EXTENT are filled in
NESTED = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((4, 8 * EXTENT), "float32"), C: T.Buffer((4, EXTENT), "float32")):
    for tx in T.thread_binding(4, thread="threadIdx.x"):
        for k in T.serial(8, annotations={STAGES}):
            with T.sblock(""):
                S = T.sblock_alloc_buffer((4, EXTENT), scope="shared")
                for x in range(EXTENT):
                    with T.sblock(""):
                        S[tx, x] = A[tx, k * EXTENT + x]
                for j in T.serial(EXTENT, annotations={"software_pipeline_stage": [0, 1]}):
                    with T.sblock(""):
                        F = T.sblock_alloc_buffer((1,), scope="local")
                        with T.sblock(""):
                            F[0] = S[tx, j] * T.float32(2.0)
                        with T.sblock(""):
                            C[tx, j] = C[tx, j] + F[0]
"""
PREFETCH = '"software_pipeline_stage": [0, 1, 2, 2], "software_pipeline_order": [1, 2, 0, 3]'


def nested(stages: str, extent: int) -> IRModule:
    text = NESTED.replace("STAGES", stages).replace("EXTENT", str(extent))
    return parse(text, name="nested")


def buffers(module: Node, name: str) -> list[Buffer]:
    found: list[Buffer] = []

    def look(node: Node) -> None:
        if isinstance(node, S.SBlock):
            found.extend(b for b in node.alloc_buffers if b.name == name)

    walk(module, look)
    return found


def outputs(module: IRModule, seed: int = 3) -> dict[str, object]:
    args = random_inputs(module["main"], seed)
    run(module["main"], args, module=module)
    return args


@pytest.mark.parametrize("extent", [4, 3])
def test_the_fragment_gets_outer_versions_only_where_the_parts_overlap(extent: int) -> None:
    """The prologue writes F[0]; the epilogue before it reads F[(extent - 1) % 2]: another
    version for an even extent (F keeps the inner pipeline's 2), the same one for an odd
    extent (the outer pipeline versions F again)."""
    before = nested(PREFETCH, extent)
    after = run_passes(before, "inject-software-pipeline")
    (fragment,) = buffers(after, "F")
    want = (2, 1) if extent % 2 == 0 else (2, 2, 1)
    assert tuple(E.int_value(d) for d in fragment.shape) == want
    (tile,) = buffers(after, "S")
    assert E.int_value(tile.shape[0]) == 2  # a copy's readers at stages 1 and 2 (the latter first)
    want_c, got_c = outputs(before)["C"], outputs(after)["C"]
    np.testing.assert_array_equal(got_c, want_c)


def test_a_nested_pipeline_counts_as_one_statement_or_three() -> None:
    one = nested('"software_pipeline_stage": [0, 1]', 4)
    after = run_passes(one, "inject-software-pipeline")
    np.testing.assert_array_equal(outputs(after)["C"], outputs(one)["C"])
    three = nested('"software_pipeline_stage": [0, 1, 1]', 4)
    message = "has 3 entries but its body has 2 statements, or 4 with each nested pipeline"
    with pytest.raises(DiagnosticError, match=message):
        run_passes(three, "inject-software-pipeline")


def steady_loop(module: IRModule) -> S.For:
    """The pipelined k loop's steady state: the serial loop that commits copies."""
    found: list[S.For] = []

    def look(node: Node) -> None:
        if isinstance(node, S.For) and any(
            isinstance(n, E.Call) and n.op == "ptx_commit_group" for n in _nodes(node.body)
        ):
            found.append(node)

    walk(module, look)
    return found[-1]  # the innermost


def _nodes(root: Node) -> list[Node]:
    nodes: list[Node] = []
    walk(root, nodes.append)
    return nodes


def calls(root: Node, op: str) -> list[E.Call]:
    return [n for n in _nodes(root) if isinstance(n, E.Call) and n.op == op]


def expected(args: dict[str, np.ndarray], c0: np.ndarray) -> np.ndarray:
    a = args["A"]  # thread tx sums 2 x the row 15 - tx, tile by tile
    return c0 + 2 * a[::-1].reshape(16, 16, 4).sum(axis=1)


def test_the_prefetching_loop_has_one_wait_and_one_barrier_and_no_race() -> None:
    """A step waits once (for the tile its prologue reads, one group left in flight), then one
    barrier orders both that tile's landed copies and the previous reads of the version the
    step's copies overwrite; its inner body reads the tile the previous step's wait retired."""
    lowered = lower_module(parse(ASYNC.read_text(), name=str(ASYNC)), target="cuda")
    loop = steady_loop(lowered)
    assert len(calls(loop, "tvm_storage_sync")) == 1
    (wait,) = calls(loop, "ptx_wait_group")
    assert E.int_value(wait.args[0]) == 1
    args = random_inputs(lowered["main"], 3)
    c0 = np.array(args["C"])
    run(lowered["main"], args, module=lowered, gpu_model="threads")
    np.testing.assert_allclose(args["C"], expected(args, c0), rtol=1e-5)


class _DropBarriers(Mutator):
    def visit_Evaluate(self, node: S.Evaluate) -> S.Stmt:
        if isinstance(node.value, E.Call) and node.value.op == "tvm_storage_sync":
            return S.Evaluate(E.IntImm(0))
        return node


class _DropLoopBarrier(Mutator):
    def __init__(self, loop: S.For) -> None:
        self.loop = loop

    def visit_For(self, node: S.For) -> S.Stmt:
        if node is self.loop:
            return _DropBarriers().visit(node)
        return self.generic_visit(node)


def test_without_its_barrier_the_prefetching_loop_races() -> None:
    lowered = lower_module(parse(ASYNC.read_text(), name=str(ASYNC)), target="cuda")
    dropper = _DropLoopBarrier(steady_loop(lowered))
    functions = tuple((name, dropper.visit(func)) for name, func in lowered.functions)
    racy = dataclasses.replace(lowered, functions=functions)
    args = random_inputs(racy["main"], 3)
    with pytest.raises(DiagnosticError, match="data race on shared memory 'S'"):
        run(racy["main"], args, module=racy, gpu_model="threads")


ROOT = Path(__file__).resolve().parents[2]
BENCH_PLANS = ROOT / "benchmarks" / "plans"


def _prefetch_plans() -> ModuleType:
    path = BENCH_PLANS / "gemm_mma_prefetch_plans.py"
    spec = importlib.util.spec_from_file_location("gemm_mma_prefetch_plans", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_prefetch_plans_are_what_their_script_writes() -> None:
    script = _prefetch_plans()
    for name, options in script.PLANS.items():
        written = json.loads((BENCH_PLANS / f"{name}.plan.json").read_text())
        assert written == json.loads(json.dumps(script.prefetch_plan(**options))), name


@pytest.mark.sweep  # too long for CI: make test-sweep
@pytest.mark.slow
def test_the_async2_prefetch_plan_computes_the_product_without_a_race() -> None:
    """samples/gpu/gemm_mma.tir under benchmarks/plans/gemm_mma_async2_prefetch at one block
    tile and 6 k tiles, in the thread model (every access checked for races) against numpy."""
    program = ROOT / "samples" / "gpu" / "gemm_mma.tir"
    shape = {"M": 128, "N": 128, "K": 192}
    module = parse(program.read_text(), defines={k: str(v) for k, v in shape.items()})
    scheduled, _ = apply_plan_file(module, str(BENCH_PLANS / "gemm_mma_async2_prefetch.plan.json"))
    lowered = lower_module(scheduled, target="cuda")
    assert len(calls(steady_loop(lowered), "tvm_storage_sync")) == 1
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (128, 192)).astype(np.float16)
    b = rng.uniform(-1, 1, (192, 128)).astype(np.float16)
    args = {"A": a, "B": b, "C": np.full((128, 128), np.nan, np.float32)}
    run(lowered["main"], args, module=lowered, gpu_model="threads")
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(args["C"], want, rtol=1e-4, atol=1e-4)
