"""The search's moves keep candidates in the design space; the verifier prunes what it rejects
before anything is built; the cost model learns an order from measurements."""

from __future__ import annotations

import math
import random

import pytest

from tirc.schedule.plan import Plan
from tirc.text import parse
from tirc.tune.cost_model import CostModel, has_xgboost
from tirc.tune.search import Search, crossover, mutate
from tirc.tune.space import Candidate, generate
from tirc.tune.tune import Outcome, _is_valid

MATMUL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((96, 64), "float32"), B: T.Buffer((64, 128), "float32"),
         C: T.Buffer((96, 128), "float32")):
    for i, j, k in T.grid(96, 128, 64):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""
RACE = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        for k in T.parallel(8):
            with T.sblock("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi, vk]
"""


def test_mutation_moves_a_factor_and_keeps_each_tiling_perfect() -> None:
    rng = random.Random(1)
    decisions = [[2, 3, 4, 4], 1, [8, 8]]
    for _ in range(50):
        mutated = mutate(rng, decisions)
        assert len(mutated) == len(decisions)
        changed = [i for i, (a, b) in enumerate(zip(decisions, mutated, strict=True)) if a != b]
        assert len(changed) <= 1
        for before, after in zip(decisions, mutated, strict=True):
            if isinstance(before, list):
                assert math.prod(after) == math.prod(before)


def test_crossover_takes_each_decision_from_a_parent() -> None:
    rng = random.Random(2)
    mother, father = [[4, 4], 0, [2, 8]], [[1, 16], 3]
    child = crossover(rng, mother, father)
    assert len(child) == 3
    assert child[0] in ([4, 4], [1, 16]) and child[1] in (0, 3) and child[2] == [2, 8]


def test_mutants_of_a_candidate_are_valid_plans_of_the_space() -> None:
    module = parse(MATMUL)
    rng = random.Random(3)
    parent = generate(module, "main", "cpu", rng)
    for _ in range(10):
        child = generate(module, "main", "cpu", rng, mutate(rng, parent.decisions))
        tiles = [d for d in child.decisions if isinstance(d, list)]
        assert sorted(math.prod(t) for t in tiles) == [64, 96, 128]


def test_proposals_are_new_and_distinct() -> None:
    search = Search(parse(MATMUL), "main", "cpu", CostModel(use_xgboost=False), seed=4)
    first = search.propose(6)
    assert len({c.key for c in first}) == len(first) == 6
    search.seen |= {c.key for c in first}
    assert not {c.key for c in search.propose(6)} & search.seen


def test_the_verifier_prunes_a_candidate_before_it_is_built() -> None:
    search = Search(parse(MATMUL), "main", "cpu", CostModel(use_xgboost=False))
    outcome = Outcome(None, None, None, 0, 0, 0)
    racing = Candidate(Plan([], "main"), [], module=parse(RACE))
    assert not _is_valid(racing, search, outcome)
    assert outcome.pruned == 1 and racing.key in search.seen
    good = generate(parse(MATMUL), "main", "cpu", random.Random(0))
    assert _is_valid(good, search, outcome) and outcome.pruned == 1


@pytest.mark.skipif(not has_xgboost(), reason="the tune extra (xgboost) is not installed")
def test_the_cost_model_ranks_like_the_measurements() -> None:
    from tirc.tune.search import candidate_features

    module = parse(MATMUL)
    rng = random.Random(5)
    model = CostModel(use_xgboost=True)
    candidates = [generate(module, "main", "cpu", rng) for _ in range(40)]
    # a stand-in for time: faster with a wider innermost tile, as vectorized code is
    widths = [c.decisions[1][-1] for c in candidates]  # the innermost tile of j
    for candidate, width in zip(candidates, widths, strict=True):
        model.add(candidate_features(candidate, "main"), 1.0 / width)
    model.fit()
    scores = model.predict([candidate_features(c, "main") for c in candidates])
    best = max(range(len(scores)), key=scores.__getitem__)
    assert widths[best] == max(widths)


def test_mutation_reaches_every_option_of_a_choice() -> None:
    """A choice of 7 options (a compute location, say) mutates to each of the other six, and
    never to itself; without counts (a candidate read back from the database) it stays in the
    assumed four."""
    rng = random.Random(5)
    reached = {mutate(rng, [2], [7])[0] for _ in range(300)}
    assert reached == {0, 1, 3, 4, 5, 6}
    assert {mutate(rng, [2])[0] for _ in range(100)} == {0, 1, 3}


def test_generated_candidates_record_each_choice_count() -> None:
    candidate = generate(parse(MATMUL), "main", "cpu", random.Random(6))
    assert len(candidate.counts) == len(candidate.decisions)
    for decision, count in zip(candidate.decisions, candidate.counts, strict=True):
        assert count == 0 if isinstance(decision, list) else 0 <= decision < count
