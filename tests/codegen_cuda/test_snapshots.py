"""Snapshots of emitted CUDA C, so that a change to the backend shows its effect on real
output. Regenerate with TIRC_UPDATE_SNAPSHOTS=1 and review the diff."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from tests.codegen_cuda.helpers import sample
from tirc.codegen.cuda import emit_cuda

SNAPSHOTS = Path(__file__).parent / "snapshots"


@pytest.mark.parametrize("name", ["elementwise", "matmul"])
def test_cuda_c_snapshot(name: str) -> None:
    _, lowered = sample(name)
    got = emit_cuda(lowered, source_name=f"{name}.tir")
    path = SNAPSHOTS / f"{name}.cu"
    if os.environ.get("TIRC_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(got)
    want = path.read_text()
    if got != want:
        diff = "".join(
            difflib.unified_diff(want.splitlines(True), got.splitlines(True), "snapshot", "emitted")
        )
        pytest.fail(f"{path.name} changed (TIRC_UPDATE_SNAPSHOTS=1 to accept):\n{diff}")
