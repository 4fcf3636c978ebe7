"""Compaction of a region as large as the buffer's extent, at a non-zero offset: lowered for
cuda, the kernel indexes the shared row from 0 and computes what the program does."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.transform.helpers import lowered_computes_the_same

PROGRAM = Path(__file__).parent / "programs" / "shared_row_full_extent.tir"


def test_full_extent_region_keeps_its_offset_through_the_cuda_pipeline() -> None:
    # S is (4, 16), each block writing its row bx; compaction keeps that row (1, 16) at bx
    _, inputs, got = lowered_computes_the_same(PROGRAM, 7)
    source = np.asarray(inputs["A"])
    np.testing.assert_array_equal(got["B"], source[:, ::-1] * 2)
