"""The design space on every sample: each rule's plans replay exactly through the plan reader,
and a scheduled program computes what the original does (in the interpreter)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from tests.samples.helpers import schedulable_samples
from tirc.ir.structural import structural_equal
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse, print_module
from tirc.tune.space import generate

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PROGRAMS = schedulable_samples()
CPU_RULES = {
    "multi-level-tiling",
    "auto-inline",
    "rfactor",
    "random-compute-location",
    "parallel-vectorize-unroll",
}
GPU_RULES = {
    "tensor-core",
    "gpu-multi-level-tiling",
    "cross-thread-reduction",
    "auto-bind",
    "auto-inline",
}


@pytest.mark.parametrize(
    "seed",
    # seed 0 replays every program's plan for both targets in CI; two more seeds' plans of
    # every program are `make test-sweep`'s (the same check on other random decisions)
    [0, pytest.param(1, marks=pytest.mark.sweep), pytest.param(2, marks=pytest.mark.sweep)],
)
@pytest.mark.parametrize("target", ["cpu", "cuda"])
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_plans_replay_exactly(path: Path, target: str, seed: int) -> None:
    module = parse(path.read_text(), name=str(path))
    candidate = generate(module, "main", target, random.Random(seed))
    replayed, _ = apply_plan(module, read_plan(candidate.plan.to_json()))
    assert candidate.module is not None
    assert structural_equal(replayed, candidate.module)
    again = generate(
        module, "main", target, random.Random(99), candidate.decisions, candidate.skipped
    )
    assert again.plan.to_json() == candidate.plan.to_json()


@pytest.mark.slow  # every program, both targets, six seeds; the tests below generate one each
def test_each_rule_applies_to_the_programs_it_documents() -> None:
    applied: dict[str, set[str]] = {"cpu": set(), "cuda": set()}
    for path in PROGRAMS:
        module = parse(path.read_text(), name=str(path))
        for target in applied:
            for seed in range(6):
                candidate = generate(module, "main", target, random.Random(seed))
                applied[target] |= {rule for rule, _ in candidate.applied}
    assert applied["cpu"] == CPU_RULES
    assert applied["cuda"] == GPU_RULES


def test_matmul_gets_ssrsrs_tiles_and_a_local_write_cache() -> None:
    module = parse((SAMPLES / "matmul.tir").read_text())
    candidate = generate(module, "main", "cpu", random.Random(0))
    ops = [step.op for step in candidate.plan.steps]
    assert ops.count("sample_perfect_tile") == 3
    tiles = [s.decision for s in candidate.plan.steps if s.op == "sample_perfect_tile"]
    assert [len(t) for t in tiles] == [4, 4, 2]
    assert all(np.prod(t) == 128 for t in tiles)
    cache = next(s for s in candidate.plan.steps if s.op == "cache_write")
    assert cache.args["storage_scope"] == "local"
    assert {"parallel", "vectorize", "decompose_reduction", "reverse_compute_at"} <= set(ops)


SMALL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((32, 48), "float32"), B: T.Buffer((48, 64), "float32"),
         D: T.Buffer((32, 64), "float32")):
    C = T.sblock_alloc_buffer((32, 64))
    for i, j, k in T.grid(32, 64, 48):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(32, 64):
        with T.sblock("D"):
            vi, vj = T.axis.remap("SS", [i, j])
            D[vi, vj] = T.max(C[vi, vj], T.float32(0.0))
"""


def _interpret(module: object, seed: int = 0) -> dict[str, np.ndarray]:
    from tirc.interp import random_inputs, run

    func = module["main"]  # type: ignore[index]
    args = random_inputs(func, seed)
    run(func, args, module=module)  # type: ignore[arg-type]
    return {k: np.asarray(v) for k, v in args.items()}


@pytest.mark.parametrize("target", ["cpu", "cuda"])
@pytest.mark.parametrize(
    "program",
    [SMALL, *(p.read_text() for p in (SAMPLES / "softmax.tir", SAMPLES / "layernorm.tir"))],
    ids=["matmul_relu", "softmax", "layernorm"],
)
def test_scheduled_programs_compute_what_the_original_does(program: str, target: str) -> None:
    module = parse(program)
    want = _interpret(module)
    for seed in range(3):
        candidate = generate(module, "main", target, random.Random(seed))
        got = _interpret(candidate.module)
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5)


def test_a_rule_that_crashes_is_left_out_and_the_rest_still_schedule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tirc.tune.rules import multi_level_tiling

    def broken(builder: object, name: str) -> None:
        raise RuntimeError("a primitive's bug")

    monkeypatch.setattr(multi_level_tiling, "apply", broken)
    module = parse((SAMPLES / "matmul.tir").read_text())
    candidate = generate(module, "main", "cpu", random.Random(0))
    assert ("multi-level-tiling", "C") in candidate.skipped
    assert candidate.applied == (("parallel-vectorize-unroll", "C"),)


CONV = """
@T.prim_func(s_tir=True)
def main(data: T.Buffer((1, 4, 10, 10), "float32"), weight: T.Buffer((8, 4, 3, 3), "float32"),
         conv: T.Buffer((1, 8, 10, 10), "float32")):
    pad = T.sblock_alloc_buffer((1, 4, 12, 12))
    for n, c, h, w in T.grid(1, 4, 12, 12):
        with T.sblock("pad"):
            vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, w])
            pad[vn, vc, vh, vw] = T.if_then_else(1 <= vh and vh < 11 and 1 <= vw and vw < 11,
                                                 data[vn, vc, vh - 1, vw - 1], T.float32(0.0))
    for n, f, y, x, c, ry, rx in T.grid(1, 8, 10, 10, 4, 3, 3):
        with T.sblock("conv"):
            vn, vf, vy, vx, vc, vry, vrx = T.axis.remap("SSSSRRR", [n, f, y, x, c, ry, rx])
            with T.init():
                conv[vn, vf, vy, vx] = T.float32(0.0)
            conv[vn, vf, vy, vx] = (conv[vn, vf, vy, vx]
                                    + pad[vn, vc, vy + vry, vx + vrx] * weight[vf, vc, vry, vrx])
"""


def test_a_kept_producer_is_computed_at_a_sampled_location_of_its_consumer() -> None:
    """conv2d's padding, when auto-inline keeps it, goes under a loop of the tiled convolution
    that sample_compute_location draws; the location replays, and the program still computes
    what it did."""
    module = parse(CONV)
    want = _interpret(module)
    located = []
    for seed in range(12):
        candidate = generate(module, "main", "cpu", random.Random(seed))
        steps = candidate.plan.steps
        samples = [s for s in steps if s.op == "sample_compute_location"]
        if ("random-compute-location", "pad") not in candidate.applied:
            continue
        assert len(samples) == 1 and samples[0].decision >= 0
        moved = next(s for s in steps if s.op == "compute_at")
        assert moved.args["loop"].name == samples[0].outputs[0]
        assert candidate.module is not None
        replayed, _ = apply_plan(module, read_plan(candidate.plan.to_json()))
        assert structural_equal(replayed, candidate.module)
        located.append(samples[0].decision)
        got = _interpret(candidate.module)
        np.testing.assert_allclose(got["conv"], want["conv"], rtol=1e-5, atol=1e-5)
    assert len(set(located)) >= 2, located  # the location is a choice, not a constant


def test_a_location_decision_forced_elsewhere_moves_the_producer() -> None:
    module = parse(CONV)
    for seed in range(20):
        candidate = generate(module, "main", "cpu", random.Random(seed))
        if ("random-compute-location", "pad") in candidate.applied:
            break
    else:
        pytest.fail("no seed located the padding under the convolution")
    index = [s.op for s in candidate.plan.steps if s.decision is not None].index(
        "sample_compute_location"
    )
    forced = list(candidate.decisions)
    forced[index] = 0  # the root: the producer stays a nest of its own
    root = generate(module, "main", "cpu", random.Random(0), forced)
    assert ("random-compute-location", "pad") not in root.applied
    decision = next(s.decision for s in root.plan.steps if s.op == "sample_compute_location")
    assert decision == -1


def test_no_vectorized_loop_is_wider_than_max_vector() -> None:
    """A write-back after the outermost tile level covers the whole tile (128 wide here): it
    is split, and only a part of at most MAX_VECTOR lanes vectorized."""
    import re

    from tirc.tune.rules.common import MAX_VECTOR

    module = parse((SAMPLES / "matmul.tir").read_text())
    widths = []
    for seed in range(16):
        candidate = generate(module, "main", "cpu", random.Random(seed))
        widths += [
            int(w) for w in re.findall(r"T\.vectorized\((\d+)\)", print_module(candidate.module))
        ]
    assert widths and max(widths) <= MAX_VECTOR
