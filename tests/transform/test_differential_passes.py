"""Differential: on random inputs, every stage of the cpu pipeline computes what the sample
did, and every pass computes on its golden inputs what the input did; every stage round-trips
through text (`parse(print(m)) == m`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.transform.helpers import difference_report, run_passes
from tirc import interp
from tirc.interp.work import estimate_work
from tirc.ir.function import IRModule, PrimFunc
from tirc.text import parse, print_module
from tirc.transform import default_pipeline
from tirc.transform.runner import verify_stage

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "samples").glob("*.tir"))
GOLDEN_INPUTS = sorted((Path(__file__).parent / "golden").glob("*/*.before.tir"))
CHEAP_WORK = 200_000  # statement executions: well under a second


def outputs(module: IRModule, seed: int) -> dict[str, object]:
    func = _main(module)
    args = interp.random_inputs(func, seed)
    interp.run(func, args, module=module)  # the module: the kernels a split host launches
    return args


def assert_same(want: dict[str, object], have: dict[str, object], stage: str) -> None:
    for name, value in want.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(
                have[name], value, rtol=1e-5, atol=1e-6, err_msg=f"{name} after {stage}"
            )  # type: ignore[arg-type]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_stage_computes_the_same(path: Path) -> None:
    """Each stage of the cpu pipeline on a sample: verified, printed and parsed back, and
    (where a run is cheap; else only at the end) computing what the sample does."""
    module = parse(path.read_text(), name=str(path))
    want = outputs(module, seed=1)
    cheap = estimate_work(_main(module)) < CHEAP_WORK
    for pass_ in default_pipeline("cpu").passes:
        module = pass_.run(module)
        verify_stage(pass_, module)
        report = difference_report(module, parse(print_module(module)), "printed")
        assert report is None, f"after {pass_.name} the module does not round-trip:\n{report}"
        if cheap:
            assert_same(want, outputs(module, seed=1), pass_.spelling())
    if not cheap:
        assert_same(want, outputs(module, seed=1), "the cpu pipeline")


@pytest.mark.parametrize("path", GOLDEN_INPUTS, ids=lambda p: f"{p.parent.name}/{p.name[:-11]}")
def test_pass_computes_the_same(path: Path) -> None:
    """The pass a golden input names computes what the input did."""
    text = path.read_text()
    for line in text.splitlines():
        if line.startswith("# differential:"):  # the golden says why it cannot run here
            pytest.skip(line.split(":", 1)[1].strip())
    module = parse(text, name=str(path))
    if estimate_work(_main(module)) > CHEAP_WORK:
        pytest.skip("a long run; the sample tests cover this program")
    spelled = next(
        line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("# pass:")
    )
    after = run_passes(module, spelled)
    assert_same(outputs(module, seed=2), outputs(after, seed=2), spelled)


def _main(module: IRModule) -> PrimFunc:
    return module["main"] if "main" in module else module.functions[0][1]
