"""defer-wgmma-wait on the tensorized wgmma GEMM (samples/gpu/gemm_wgmma_tensorize, four
k stages of four wgmmas): the interpreter's product with the pass is bit for bit the one
without it, with every thread's shared accesses checked for races, the loops of wgmmas no
longer wait inside, and a wait missing after them is what the interpreter catches.
(tests/transform/golden/defer_wgmma_wait has the rules on small kernels.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from tirc.diagnostics import DiagnosticError
from tirc.driver.schedule import apply_plan_file
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import Mutator, walk
from tirc.text import parse
from tirc.transform import default_pipeline, run_pipeline
from tirc.transform.passes.defer_wgmma_wait import DeferWgmmaWait

SAMPLES = Path(__file__).parents[2] / "samples" / "gpu"
SHAPE = {"M": "64", "N": "128", "K": "256"}


@pytest.fixture(scope="module")
def lowered() -> tuple[IRModule, IRModule]:
    """The sample lowered for cuda without the pass, and with it (the default pipeline)."""
    path = SAMPLES / "gemm_wgmma_tensorize.tir"
    module = parse(path.read_text(), name=str(path), defines=SHAPE)
    scheduled, _ = apply_plan_file(module, str(SAMPLES / "gemm_wgmma_tensorize.plan.json"))
    passes = default_pipeline("cuda").passes
    assert any(isinstance(p, DeferWgmmaWait) for p in passes)
    without = tuple(p for p in passes if not isinstance(p, DeferWgmmaWait))
    return run_pipeline(scheduled, without), run_pipeline(scheduled, passes)


def _product(module: IRModule) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (64, 256)).astype(np.float16)
    b = rng.uniform(-1, 1, (256, 128)).astype(np.float16)
    c = np.zeros((64, 128), np.float32)
    run(module["main"], {"A": a, "B": b, "C": c}, module=module, gpu_model="threads")
    return c, a.astype(np.float64) @ b.astype(np.float64)


def _loops_of_wgmmas(module: IRModule) -> list[tuple[int, int, int]]:
    """(wgmmas, waits, barriers) in each innermost loop that issues wgmmas."""
    found: list[tuple[int, int, int]] = []

    def count(node: object, op: str) -> int:
        calls: list[E.Call] = []
        walk(node, lambda n: calls.append(n) if isinstance(n, E.Call) and n.op == op else None)
        return len(calls)

    def visit(node: object) -> None:
        if isinstance(node, S.For) and count(node.body, "ptx_wgmma"):
            inner: list[S.For] = []
            walk(node.body, lambda n: inner.append(n) if isinstance(n, S.For) else None)
            if not inner:
                waits = count(node.body, "ptx_wgmma_wait_group")
                syncs = count(node.body, "tvm_storage_sync")
                found.append((count(node.body, "ptx_wgmma"), waits, syncs))

    for _, func in module.functions:
        walk(func.body, visit)
    return found


def test_the_interpreter_computes_the_same_product(lowered: tuple[IRModule, IRModule]) -> None:
    without, with_pass = lowered
    before, want = _product(without)
    after, _ = _product(with_pass)
    np.testing.assert_array_equal(after, before)
    np.testing.assert_allclose(after, want, atol=1e-5)
    # the steady-state loop and the epilogue's: a wait and a barrier each time, then none
    assert _loops_of_wgmmas(without) == [(1, 1, 1), (1, 1, 1)]
    assert _loops_of_wgmmas(with_pass) == [(1, 0, 0), (1, 0, 0)]


def _without_last_wait(module: IRModule) -> IRModule:
    """The module without its last wgmma wait in program order (the one the stores need).
    The pipeline shares one node between the loop's wait and the epilogue's: only its last
    occurrence goes (dropping both would leave the loop's wgmmas reading stages the next
    copies overwrite, a race)."""
    waits: list[S.Stmt] = []
    for _, func in module.functions:
        walk(func.body, lambda n: waits.append(n) if _is_wait(n) else None)
    last = waits[-1]
    occurrences = sum(wait is last for wait in waits)
    seen = 0

    class Drop(Mutator):
        def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
            nonlocal seen
            node = self.generic_visit(node)
            kept = []
            for stmt in node.stmts:
                seen += stmt is last
                if stmt is not last or seen < occurrences:
                    kept.append(stmt)
            return node if len(kept) == len(node.stmts) else S.seq(*kept)

    functions = tuple(
        (name, dataclasses.replace(func, body=Drop().visit(func.body)))
        for name, func in module.functions
    )
    return IRModule(functions, module.attrs, module.is_bare)


def _is_wait(node: object) -> bool:
    return (
        isinstance(node, S.Evaluate)
        and isinstance(node.value, E.Call)
        and node.value.op == "ptx_wgmma_wait_group"
    )


def test_a_missing_wait_is_caught(lowered: tuple[IRModule, IRModule]) -> None:
    """Without the wait the pass puts after the epilogue's loop, the stores read
    accumulators the last stage's wgmmas have not landed in: the interpreter's product is
    off, as a GPU's would be."""
    _, with_pass = lowered
    got, want = _product(_without_last_wait(with_pass))
    assert not np.allclose(got, want, atol=1e-3)


def test_the_barrier_after_a_deferred_wait_is_needed() -> None:
    """golden write_after: the copy after the loop overwrites what the first wgmma read. The
    pass's barrier after the wait orders them; without it the interpreter reports the race."""
    path = Path(__file__).parent / "golden" / "defer_wgmma_wait" / "write_after.after.tir"
    text = path.read_text()
    wait = "    T.ptx_wgmma_wait_group(0)\n"
    barrier = '    T.tvm_storage_sync("shared", T.bool(False), -1)\n'
    assert wait + barrier in text
    module = parse(text, name=str(path))
    run(module["main"], random_inputs(module["main"], 4), module=module)
    module = parse(text.replace(wait + barrier, wait), name=str(path))
    with pytest.raises(DiagnosticError, match="data race on shared memory 'SA'"):
        run(module["main"], random_inputs(module["main"], 4), module=module)


def test_a_program_that_issues_no_wgmma_is_returned_as_it_is() -> None:
    module = parse(
        "@T.prim_func\n"
        'def main(A: T.Buffer((8,), "float32")):\n'
        "    for i in range(8):\n"
        "        A[i] = T.float32(1.0)\n"
        "        T.ptx_wgmma_wait_group(0)\n"
    )
    assert DeferWgmmaWait().run(module) is module
