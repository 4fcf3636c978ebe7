"""canonicalize-loop refuses a step it cannot prove positive, as TVM 0.27 does (its own
tests: test_canonicalize_negative_step, test_canonicalize_dynamic_step)."""

from __future__ import annotations

import pytest

from tests.transform.helpers import run_passes
from tirc.diagnostics import DiagnosticError
from tirc.text import parse

PROGRAM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"), step: T.int32):
    for i in range(0, 127, STEP):
        B[i] = A[i] + T.float32(1.0)
"""


@pytest.mark.parametrize("step", ["-3", "step"])
def test_step_not_provably_positive_is_refused(step: str) -> None:
    module = parse(PROGRAM.replace("STEP", step))
    with pytest.raises(DiagnosticError, match="step of loop i may not be positive") as error:
        run_passes(module, "canonicalize-loop")
    span = error.value.diagnostics[0].span
    assert span is not None and span.line == 4
