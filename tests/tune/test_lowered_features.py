"""Features read from the lowered candidate: what vectorize, unroll and the caches came out as,
arithmetic counted by kind, allocation sizes equal to what compact-buffer-allocation leaves."""

from __future__ import annotations

import math
import random

import pytest

from tirc.ir.function import IRModule
from tirc.ir.stmt import AllocBuffer
from tirc.text import parse
from tirc.transform import default_pipeline, run_pipeline
from tirc.tune import lowered_features as lf
from tirc.tune.search import candidate_features
from tirc.tune.space import generate

MATMUL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64, 32), "float32"), B: T.Buffer((32, 128), "float32"),
         C: T.Buffer((64, 128), "float32")):
    for i, j, k in T.grid(64, 128, 32):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""
CONV = """
@T.prim_func(s_tir=True)
def main(data: T.Buffer((1, 8, 14, 14), "float32"), weight: T.Buffer((16, 8, 3, 3), "float32"),
         conv: T.Buffer((1, 16, 12, 12), "float32")):
    for n, f, y, x, c, ry, rx in T.grid(1, 16, 12, 12, 8, 3, 3):
        with T.sblock("conv"):
            vn, vf, vy, vx, vc, vry, vrx = T.axis.remap("SSSSRRR", [n, f, y, x, c, ry, rx])
            with T.init():
                conv[vn, vf, vy, vx] = T.float32(0)
            conv[vn, vf, vy, vx] = conv[vn, vf, vy, vx] + data[vn, vc, vy + vry, vx + vrx] * weight[
                vf, vc, vry, vrx]
"""
FLOPS = {MATMUL: 2 * 64 * 128 * 32, CONV: 2 * 16 * 12 * 12 * 8 * 9}


def _named(values: list[float]) -> dict[str, float]:
    assert len(values) == lf.LENGTH
    return dict(zip(lf.NAMES, values, strict=True))


def _unlog(value: float) -> float:
    return 2**value - 1


@pytest.mark.parametrize("target", ["cpu", "cuda"])
@pytest.mark.parametrize("program", [MATMUL, CONV], ids=["matmul", "conv2d"])
def test_float_operations_are_counted_whatever_the_schedule(program: str, target: str) -> None:
    module = parse(program)
    for seed in range(3):
        candidate = generate(module, "main", target, random.Random(seed))
        assert candidate.module is not None
        named = _named(lf.lowered_features(candidate.module, "main", target))
        assert named["lowering failed"] == 0.0
        assert _unlog(named["float ops"]) == pytest.approx(FLOPS[program], rel=1e-6)


@pytest.mark.parametrize("target", ["cpu", "cuda"])
@pytest.mark.parametrize("program", [MATMUL, CONV], ids=["matmul", "conv2d"])
def test_allocations_are_what_compact_buffer_allocation_leaves(program: str, target: str) -> None:
    """The feature pipeline skips the allocation passes; the sizes read from the accesses
    must be the ones those passes give (here, where the whole pipeline runs them), up to the
    few elements a cooperative fetch's guarded last round counts beyond the copy."""
    module = parse(program)
    for seed in range(4):
        candidate = generate(module, "main", target, random.Random(seed))
        assert candidate.module is not None
        named = _named(lf.lowered_features(candidate.module, "main", target))
        passes = []
        for pass_ in default_pipeline(target).passes:
            passes.append(pass_)
            if pass_.name == "flatten-buffer":
                break
        lowered = run_pipeline(candidate.module, passes)["main"]
        compacted: dict[str, int] = {}
        _allocations(lowered.body, compacted)
        for kind in ("local", "shared"):
            assert _unlog(named[f"allocated bytes, {kind}"]) == pytest.approx(
                compacted.get(kind, 0), rel=0.05
            ), (seed, kind, candidate.plan.to_json())


def _allocations(stmt: object, found: dict[str, int]) -> None:
    from tirc.ir.functor import walk

    def visit(node: object) -> None:
        if isinstance(node, AllocBuffer):
            buffer = node.buffer
            kind = buffer.scope if buffer.scope in ("global", "shared") else "local"
            size = math.prod(d.value for d in buffer.shape) * buffer.dtype.bits // 8
            found[kind] = found.get(kind, 0) + size

    walk(stmt, visit)


def test_vector_width_and_unrolled_copies_are_what_lowering_made() -> None:
    """A matmul tile vectorized 16 wide gives 16-lane stores; unrolling the register tile
    multiplies the stores in the code, and not the work."""
    module = parse(MATMUL)
    candidate = generate(module, "main", "cpu", random.Random(0))
    decisions = list(candidate.decisions)
    tiles = [i for i, d in enumerate(decisions) if isinstance(d, list)]
    decisions[tiles[0]] = [1, 2, 4, 8]  # i: a register tile of 4 x 8 rows
    decisions[tiles[1]] = [2, 1, 4, 16]  # j: 4 vectors of 16 lanes
    rolled, unrolled = list(decisions), list(decisions)
    named = {}
    for name, depth in (("rolled", 0), ("unrolled", 3)):
        forced = rolled if name == "rolled" else unrolled
        forced[-1] = depth  # the unroll depth is the last decision: 0 or 512 steps
        made = generate(module, "main", "cpu", random.Random(0), forced)
        assert made.module is not None and made.decisions[-1] == depth, made.decisions
        named[name] = _named(lf.lowered_features(made.module, "main", "cpu"))
    assert _unlog(named["rolled"]["dominant store: lanes"]) == pytest.approx(16)
    assert named["rolled"]["vectorized share"] > 0.5
    assert named["unrolled"]["stores in the code"] > named["rolled"]["stores in the code"]
    assert named["unrolled"]["float ops"] == pytest.approx(named["rolled"]["float ops"])


def test_a_candidate_lowering_rejects_is_flagged_not_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Broken:
        name = "broken"

        def run(self, module: object) -> object:
            raise ValueError("a pass's bug")

    monkeypatch.setattr(lf, "feature_passes", lambda target: (Broken(),))
    candidate = generate(parse(MATMUL), "main", "cpu", random.Random(0))
    assert candidate.module is not None
    values = lf.lowered_features(candidate.module, "main", "cpu")
    assert values[-1] == 1.0 and not any(values[:-1])


def test_a_candidate_is_lowered_once_for_the_cost_model(monkeypatch: pytest.MonkeyPatch) -> None:
    from tirc.tune import search

    calls = []
    real = search.lowered_features

    def counting(module: IRModule, func: str, target: str) -> list[float]:
        calls.append(target)
        return real(module, func, target)

    monkeypatch.setattr(search, "lowered_features", counting)
    candidate = generate(parse(MATMUL), "main", "cuda", random.Random(0))
    first = candidate_features(candidate, "main")
    assert candidate_features(candidate, "main") is first
    assert calls == ["cuda"]
