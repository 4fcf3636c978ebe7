"""thread-sync in the cuda pipeline is what makes shared-memory samples race-free: without it
the interpreter's thread model reports the race a GPU would run into."""

from __future__ import annotations

import numpy as np
import pytest

from tests.codegen_cuda.helpers import GPU_SAMPLES
from tirc.diagnostics import DiagnosticError
from tirc.driver.schedule import apply_plan_file
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.functor import Mutator
from tirc.text import parse
from tirc.transform import default_pipeline
from tirc.transform.runner import run_pipeline


def lowered_matmul(with_sync: bool):  # type: ignore[no-untyped-def]
    path = GPU_SAMPLES / "matmul.tir"
    scheduled, _ = apply_plan_file(parse(path.read_text()), str(GPU_SAMPLES / "matmul.plan.json"))
    passes = [p for p in default_pipeline("cuda").passes if with_sync or p.name != "thread-sync"]
    return run_pipeline(scheduled, passes)


def test_without_barriers_the_matmul_races() -> None:
    module = lowered_matmul(with_sync=False)
    with pytest.raises(DiagnosticError, match="data race on shared memory"):
        run(module["main"], random_inputs(module["main"], 0), module=module)


def test_with_barriers_it_does_not() -> None:
    module = lowered_matmul(with_sync=True)
    args = random_inputs(module["main"], 0)
    run(module["main"], args, module=module)
    assert np.isfinite(args["C"]).all()


def lowered_tensor_core_matmul(with_sync: bool):  # type: ignore[no-untyped-def]
    """samples/gpu/matmul_fp16_tc at N = 32 (one block): shared tiles read only by wmma loads."""
    path = GPU_SAMPLES / "matmul_fp16_tc.tir"
    module = parse(path.read_text(), defines={"N": "32"})
    scheduled, _ = apply_plan_file(module, str(GPU_SAMPLES / "matmul_fp16_tc.plan.json"))
    passes = [p for p in default_pipeline("cuda").passes if with_sync or p.name != "thread-sync"]
    return run_pipeline(scheduled, passes)


class _DropBarrier(Mutator):
    """Removes the `which`-th tvm_storage_sync (in visiting order)."""

    def __init__(self, which: int) -> None:
        self.which, self.seen = which, 0

    def visit_SeqStmt(self, node: S.SeqStmt) -> S.Stmt:
        kept = []
        for stmt in node.stmts:
            if _is_barrier(stmt):
                self.seen += 1
                if self.seen - 1 == self.which:
                    continue
            kept.append(self.visit(stmt))
        return S.seq(*kept)


def _is_barrier(stmt: S.Stmt) -> bool:
    return (
        isinstance(stmt, S.Evaluate)
        and isinstance(stmt.value, E.Call)
        and stmt.value.op == "tvm_storage_sync"
    )


def test_tensor_core_matmul_is_race_free_and_right() -> None:
    module = lowered_tensor_core_matmul(with_sync=True)
    args = random_inputs(module["main"], 0)
    run(module["main"], args, module=module)
    expected = args["A"].astype(np.float32) @ args["B"].astype(np.float32)
    np.testing.assert_allclose(args["C"], expected, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("which", [0, 1])
def test_dropping_a_barrier_before_a_wmma_load_is_a_race(which: int) -> None:
    """wmma loads read their tile from shared memory through the race tracker: without the
    barrier after the threads' stores, a thread's load reads what others wrote."""
    module = lowered_tensor_core_matmul(with_sync=True)
    dropper = _DropBarrier(which)
    broken = dropper.visit(module)  # the barriers are in the kernel function
    assert dropper.seen == 2, "the tensor-core matmul has two barriers"
    with pytest.raises(DiagnosticError, match="data race on shared memory '[AB]_shared'"):
        run(broken["main"], random_inputs(broken["main"], 0), module=broken)
