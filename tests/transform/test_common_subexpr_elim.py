"""common-subexpr-elim on every sample lowered for cpu up to where the default pipeline runs
it: the program computes the same in the interpreter, round-trips through text, and no
eligible computation is left repeated."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.transform.helpers import difference_report, run_passes
from tirc import interp
from tirc.interp.work import estimate_work
from tirc.ir.function import IRModule
from tirc.text import parse, print_module
from tirc.transform import default_pipeline
from tirc.transform.passes.common_subexpr_elim import _Facts, _Record, _Slot
from tirc.transform.runner import run_pipeline

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.tir"))


def _outputs(module: IRModule) -> dict[str, object]:
    func = module.functions[0][1]
    args = interp.random_inputs(func, 4)
    interp.run(func, args)
    return args


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_cse_on_lowered_sample(path: Path) -> None:
    passes = default_pipeline("cpu").passes
    before = [p.name for p in passes].index("common-subexpr-elim")  # where the pipeline runs it
    lowered = run_pipeline(parse(path.read_text(), name=str(path)), passes[:before])
    if estimate_work(lowered.functions[0][1]) > 2_000_000:
        pytest.skip("a long run")
    after = run_passes(lowered, "common-subexpr-elim")
    assert difference_report(after, parse(print_module(after)), "printed") is None
    want, have = _outputs(lowered), _outputs(after)
    for name, value in want.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(have[name], value, rtol=1e-6, err_msg=name)  # type: ignore[arg-type]
    left = _Record(_Facts(set()))
    left.record(after.functions[0][1].body, _Slot(None, None))
    assert not [key for key, uses in left.by_key.items() if len(uses) > 1]


def _launch_extents_known_outside(body: object) -> list[str]:
    """The launch extents that use a variable defined inside some launch (which the host,
    computing the launch, cannot know)."""
    from tirc.ir import stmt as S
    from tirc.ir.functor import Visitor
    from tirc.transform.passes.common_subexpr_elim import _defined_in, _free_vars

    bad: list[str] = []

    class _Launches(Visitor):
        def __init__(self) -> None:
            self.inside: set[object] = set()

        def visit_AttrStmt(self, node: S.AttrStmt) -> None:
            if node.key not in ("thread_extent", "virtual_thread"):
                self.generic_visit(node)
                return
            bad.extend(v.name for v in _free_vars(node.value, set()) if v in self.inside)
            saved = self.inside
            self.inside = saved | _defined_in(node)
            self.visit(node.body)
            self.inside = saved

    _Launches().visit(body)
    return bad


CUDA_PLANS = sorted(path for path in SAMPLES if path.with_suffix(".cuda.plan.json").exists())


@pytest.mark.parametrize("path", CUDA_PLANS, ids=lambda p: p.name)
def test_cse_on_sample_lowered_for_cuda(path: Path) -> None:
    """With the cuda plan, where the cuda pipeline runs it: every launch extent still
    computable by the host, and the whole pipeline computes what it does without the pass
    (the interpreter runs the host, which launches the kernels)."""
    from tirc.driver.schedule import apply_plan_file

    passes = default_pipeline("cuda").passes
    at = [p.name for p in passes].index("common-subexpr-elim")
    assert passes[at - 1].name == "remove-no-op"  # where TVM 0.27 runs it
    plan = str(path.with_suffix(".cuda.plan.json"))
    scheduled, _ = apply_plan_file(parse(path.read_text(), name=str(path)), plan)
    lowered = run_pipeline(scheduled, passes[:at])
    if estimate_work(lowered.functions[0][1]) > 2_000_000:
        pytest.skip("a long run")
    after = run_passes(lowered, "common-subexpr-elim")
    assert difference_report(after, parse(print_module(after)), "printed") is None
    assert not _launch_extents_known_outside(after.functions[0][1].body)
    results = []
    for module in (lowered, after):
        final = run_pipeline(module, passes[at + 1 :])
        args = interp.random_inputs(final["main"], 4)
        interp.run(final["main"], args, module=final)
        results.append(args)
    for name, value in results[0].items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(results[1][name], value, rtol=1e-6, err_msg=name)  # type: ignore[arg-type]


def test_launch_extent_counts_once() -> None:
    """A launch's extent is also its iteration variable's domain: one use, not two."""
    text = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4096,), "float32"), n: T.int32):
        by = T.launch_thread("blockIdx.y", 4)
        bx = T.launch_thread("blockIdx.x", (n + 31) // 32)
        A[bx + by] = T.float32(0.0)
"""
    module = parse(text)
    assert print_module(run_passes(module, "common-subexpr-elim")) == print_module(module)


@pytest.mark.parametrize("name", ["launch_extents", "inner_launch_extent"])
@pytest.mark.parametrize("n", [1, 37, 1000])
def test_launch_goldens_compute_the_same(name: str, n: int) -> None:
    path = Path(__file__).parent / "golden" / "common_subexpr_elim" / f"{name}.before.tir"
    module = parse(path.read_text(), name=str(path))
    after = run_passes(module, "common-subexpr-elim")
    results = []
    for program in (module, after):
        args = interp.random_inputs(program["main"], 3, sizes={"n": n})
        interp.run(program["main"], args, module=program)
        results.append(args)
    np.testing.assert_array_equal(results[1]["A"], results[0]["A"])  # type: ignore[arg-type]
