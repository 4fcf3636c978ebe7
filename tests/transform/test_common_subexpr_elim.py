"""common-subexpr-elim on every sample lowered for cpu: the program computes the same in the
interpreter, round-trips through text, and no eligible computation is left repeated."""

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
from tirc.transform.passes.common_subexpr_elim import _Collector
from tirc.transform.runner import run_pipeline

SAMPLES = sorted((Path(__file__).resolve().parents[2] / "samples").glob("*.tir"))


def _outputs(module: IRModule) -> dict[str, object]:
    func = module.functions[0][1]
    args = interp.random_inputs(func, 4)
    interp.run(func, args)
    return args


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_cse_on_lowered_sample(path: Path) -> None:
    lowered = run_pipeline(parse(path.read_text(), name=str(path)), default_pipeline("cpu").passes)
    if estimate_work(lowered.functions[0][1]) > 2_000_000:
        pytest.skip("a long run")
    after = run_passes(lowered, "common-subexpr-elim")
    assert difference_report(after, parse(print_module(after)), "printed") is None
    want, have = _outputs(lowered), _outputs(after)
    for name, value in want.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(have[name], value, rtol=1e-6, err_msg=name)  # type: ignore[arg-type]
    left = _Collector(set())
    left.visit(after.functions[0][1].body)
    assert not [u.expr for u in left.uses.values() if len(u.paths) > 1]
