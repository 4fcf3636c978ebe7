"""Packing for another vector axis (rules/packing.py): conv2d's output channel becomes the
register tile's vector, the weight is packed with it innermost and the write cache is laid out
with it last; the candidate computes what the original does, in the interpreter and compiled."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from tirc.driver.run_cpu import compare, jit_function
from tirc.interp import random_inputs, run
from tirc.ir.function import IRModule
from tirc.schedule.schedule import Schedule
from tirc.text import parse, print_module
from tirc.tune.rules import multi_level_tiling
from tirc.tune.rules.packing import innermost_map, packed_axes
from tirc.tune.space import Candidate, generate

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

STRIDED = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((32, 16), "float32"), W: T.Buffer((64, 16), "float32"),
         C: T.Buffer((32, 32), "float32")):
    for i, j, k in T.grid(32, 32, 16):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * W[vj * 2, vk]
"""


def _axes(text: str, block: str) -> list[str]:
    (found,) = Schedule(parse(text)).blocks_named(block)
    return [var.name for var in packed_axes(found)]


def test_packed_axes_are_the_iterators_every_access_indexes_bare() -> None:
    conv2d = (SAMPLES / "conv2d.tir").read_text()
    # n and f are bare everywhere (the rule then keeps those of whole vectors); y and x
    # appear in pad[vn, vc, vy + vry, vx + vrx]
    assert _axes(conv2d, "conv") == ["vn", "vf"]
    matmul = (SAMPLES / "matmul.tir").read_text()
    assert _axes(matmul, "C") == ["vi"]  # A[vi, vk]; vj is already C's last index
    # i indexes A and C bare; j is C's last index; no other iterator qualifies
    assert _axes(STRIDED, "C") == ["vi"]


def test_a_strided_index_is_not_packable() -> None:
    text = STRIDED.replace(
        "C[vi, vj] = C[vi, vj] + A[vi, vk]", "C[vi, vj] = C[vi, vj] + A[vi // 2, vk]"
    )
    assert _axes(text, "C") == []


def test_index_maps_move_one_dimension_innermost() -> None:
    assert innermost_map(4, 1) == "lambda d0, d1, d2, d3: (d0, d2, d3, d1)"
    assert innermost_map(4, 0, 16) == "lambda d0, d1, d2, d3: (d0 // 16, d1, d2, d3, d0 % 16)"


def _packed_candidate(module: IRModule) -> Candidate:
    for seed in range(40):
        candidate = generate(module, "main", "cpu", random.Random(seed))
        maps = [s.args["index_map"] for s in candidate.plan.steps if s.op == "transform_layout"]
        if "lambda d0, d1, d2, d3: (d0, d2, d3, d1)" in maps:
            return candidate
    raise AssertionError("no candidate in 40 vectorizes the output channel")


def test_conv2d_vectorizes_output_channels_of_a_packed_weight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(multi_level_tiling, "vector_lanes", lambda: 8)
    module = parse((SAMPLES / "conv2d.tir").read_text())
    candidate = _packed_candidate(module)
    steps = candidate.plan.steps
    (pack,) = [s for s in steps if s.op == "cache_read"]
    assert pack.args["read_buffer_index"] == 1  # the weight [f, c, r, s]; pad has no vf
    maps = [s.args["index_map"] for s in steps if s.op == "transform_layout"]
    width = maps[0].split(" // ")[1].split(",")[0]
    assert maps[0] == f"lambda d0, d1, d2, d3: (d0 // {width}, d1, d2, d3, d0 % {width})"
    assert candidate.module is not None
    printed = print_module(candidate.module)
    assert "weight_global" in printed and "conv_local" in printed
    func = candidate.module["main"]
    args = random_inputs(module["main"], 0)
    want = {k: np.array(v, copy=True) for k, v in args.items()}
    run(module["main"], want, module=module)
    interpreted = {k: np.array(v, copy=True) for k, v in args.items()}
    run(func, interpreted, module=candidate.module)
    assert not compare(func, interpreted, want)
    compiled = {k: np.array(v, copy=True) for k, v in args.items()}
    assert jit_function(candidate.module, "main", "cpu")(compiled) == 0
    assert not compare(func, compiled, want)


def test_an_output_whose_last_axis_fills_whole_vectors_keeps_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(multi_level_tiling, "vector_lanes", lambda: 8)
    module = parse((SAMPLES / "matmul.tir").read_text())  # 128 x 128: j is whole vectors
    for seed in range(12):
        candidate = generate(module, "main", "cpu", random.Random(seed))
        maps = [s.args["index_map"] for s in candidate.plan.steps if s.op == "transform_layout"]
        assert all(not m.endswith("(d1, d0)") for m in maps), maps
