"""Compaction of a region as large as the buffer's extent, at a non-zero offset: lowered for
cuda, the kernel indexes the shared row from 0 and computes what the program does."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tirc.driver.lower import lower_module
from tirc.interp import random_inputs, run
from tirc.text import parse

PROGRAM = Path(__file__).parent / "programs" / "shared_row_full_extent.tir"


def test_full_extent_region_keeps_its_offset_through_the_cuda_pipeline() -> None:
    original = parse(PROGRAM.read_text(), name=str(PROGRAM))
    lowered = lower_module(original, target="cuda")
    inputs = random_inputs(original["main"], 7)
    expected = {key: np.array(value, copy=True) for key, value in inputs.items()}
    got = {key: np.array(value, copy=True) for key, value in inputs.items()}
    run(original["main"], expected)
    run(lowered["main"], got, module=lowered)  # an out-of-bounds shared store is an error
    np.testing.assert_array_equal(got["B"], expected["B"])
    source = np.asarray(inputs["A"])
    np.testing.assert_array_equal(expected["B"], source[:, ::-1] * 2)
