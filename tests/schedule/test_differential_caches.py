"""The cache and buffer primitives keep what a program computes: on the golden samples, the
interpreter gives the same outputs before and after each plan (unsafe_set_dtype and
unsafe_hide_buffer_access aside: they may change results or only hide accesses; halves are
compared within float16's precision)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tirc.interp import random_inputs, run
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse

GOLDEN = Path(__file__).parent / "golden"
CASES = [
    "cache_read/intermediate",
    "cache_read/consumer_blocks",
    "cache_read/in_loop",
    "cache_read/after_split",
    "cache_read/symbolic_under_loop",
    "cache_write/reduction",
    "cache_write/consumer_blocks",
    "cache_write/in_loop",
    "cache_write/tiled_region",
    "cache_write/twice",
    "cache_inplace/opaque",
    "set_scope/shared",
    "storage_align/update",
    "reindex/matmul_reads",
    "reindex/write",
    "reindex_cache_read/transposed",
    "reindex_cache_read/intermediate",
    "reindex_cache_read/int64_then_compute_at",
    "reindex_cache_write/reduction",
    "reindex_cache_write/transposed",
    "unsafe_set_dtype/half",
]


def _header(text: str, key: str, default: str | None = None) -> str:
    for line in text.splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    if default is not None:
        return default
    raise AssertionError(key)


@pytest.mark.parametrize("name", CASES)
def test_same_results(name: str) -> None:
    text = (GOLDEN / f"{name}.before.tir").read_text()
    before = parse(text)
    plan = read_plan(json.dumps([json.loads(_header(text, "plan")), []]), name=name)
    after = apply_plan(before, plan)[0]
    sizes = json.loads(_header(text, "sizes", "{}"))  # the shape variables, if any
    inputs = random_inputs(before["main"], seed=7, sizes=sizes)
    results = []
    for module in (before, after):
        args = {
            key: value.copy() if isinstance(value, np.ndarray) else value
            for key, value in inputs.items()
        }
        run(module["main"], args)
        results.append(args)
    tolerance = 1e-2 if "set_dtype" in name else 1e-5
    for key, value in results[0].items():
        np.testing.assert_allclose(
            results[1][key], value, rtol=tolerance, atol=tolerance, err_msg=key
        )
