"""Evolutionary search over the decisions of the design space, guided by the cost model.

Each round proposes a batch of candidates not measured before: a population of random
candidates and of mutants and crossovers of the best measured ones is evolved for a few
generations under the cost model's scores, and the best-scored are taken, with a few random
ones mixed in so the model keeps learning about the rest of the space. A mutation redraws one
decision (moves a prime factor between two tiles, or picks another category); a crossover
takes each decision from one parent or the other. `generate` checks every forced decision, so
a child is always a valid plan of the space.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.functor import walk
from tirc.ir.stmt import For
from tirc.tune.builder import prime_factors
from tirc.tune.cost_model import CostModel
from tirc.tune.features import features
from tirc.tune.lowered_features import lowered_features
from tirc.tune.space import Candidate, generate

DECISION_FEATURES = 24
POPULATION = 32
GENERATIONS = 2
RANDOM_SHARE = 0.25


@dataclass
class Measured:
    decisions: list[Any]
    seconds: float | None  # None: failed


def candidate_features(candidate: Candidate, func: str) -> list[float]:
    """What the cost model reads of a candidate: features of its scheduled program and of
    that program lowered, then its decisions (computed once per candidate)."""
    if candidate.features is None:
        assert candidate.module is not None
        target = candidate.target or target_of(candidate.module[func])
        candidate.features = (
            features(candidate.module[func])
            + lowered_features(candidate.module, func, target)
            + decision_features(candidate.decisions)
        )
    return candidate.features


def decision_features(decisions: list[Any]) -> list[float]:
    """The decisions as numbers (tiles as log2 of each factor), cut or padded to a fixed
    length."""
    flat: list[float] = []
    for decision in decisions:
        if isinstance(decision, list):
            flat += [math.log2(max(int(f), 1)) for f in decision]
        else:
            flat.append(float(decision))
    return flat[:DECISION_FEATURES] + [0.0] * max(DECISION_FEATURES - len(flat), 0)


def target_of(func: PrimFunc) -> str:
    """'cuda' for a function with a loop bound to a GPU thread, else 'cpu' (a candidate read
    back from the database does not say which)."""
    bound = False

    def visit(node: object) -> None:
        nonlocal bound
        bound = bound or (isinstance(node, For) and node.thread_binding is not None)

    walk(func.body, visit)
    return "cuda" if bound else "cpu"


class Search:
    def __init__(
        self, module: IRModule, func: str, target: str, model: CostModel, seed: int = 0
    ) -> None:
        self.module, self.func, self.target = module, func, target
        self.model = model
        self.rng = random.Random(seed)
        self.measured: list[Measured] = []
        self.seen: set[str] = set()
        self.proposals = 0  # rounds proposed since one was measured

    def generate(self, forced: list[Any] | None = None) -> Candidate:
        return generate(self.module, self.func, self.target, self.rng, forced)

    def record(self, key: str, candidate_features: list[float], measured: Measured) -> None:
        self.proposals = 0
        self.seen.add(key)
        self.measured.append(measured)
        self.model.add(candidate_features, measured.seconds)

    def propose(self, count: int) -> list[Candidate]:
        """Up to `count` candidates not seen before (fewer when the space runs dry)."""
        self.proposals += 1
        chosen: list[Candidate] = []
        keys: set[str] = set()

        def take(candidate: Candidate) -> None:
            key = candidate.key
            if key not in self.seen and key not in keys:
                keys.add(key)
                chosen.append(candidate)

        randoms = max(1, int(count * RANDOM_SHARE)) if self.model.model is not None else count
        parents = self._parents()
        if parents and self.model.model is None:
            randoms = max(1, count // 2)  # no model: half random, half mutants of the best
        for _ in range(randoms * 4):
            if len(chosen) >= randoms:
                break
            take(self.generate())
        if parents:
            for candidate in self._evolve(parents, count * 3):
                if len(chosen) >= count:
                    break
                take(candidate)
        for _ in range(count * 4):  # top up with random ones where the evolution ran dry
            if len(chosen) >= count:
                break
            take(self.generate())
        return chosen

    def _parents(self) -> list[list[Any]]:
        good = sorted((m for m in self.measured if m.seconds), key=lambda m: m.seconds or 0.0)
        return [m.decisions for m in good[:8]]

    def _evolve(self, parents: list[list[Any]], budget: int) -> list[Candidate]:
        population = [self.generate(list(p)) for p in parents]
        population += [self.generate() for _ in range(max(POPULATION // 4, 1))]
        for _ in range(GENERATIONS):
            children: list[Candidate] = []
            for _ in range(POPULATION):
                mother = self.rng.choice(population)
                if self.rng.random() < 0.2 and len(population) > 1:
                    father = self.rng.choice(population)
                    decisions = crossover(self.rng, mother.decisions, father.decisions)
                else:
                    decisions = mutate(self.rng, mother.decisions, mother.counts)
                children.append(self.generate(decisions))
            population = self._best(population + children, POPULATION)
            if len(population) >= budget:
                break
        return population

    def _best(self, candidates: list[Candidate], count: int) -> list[Candidate]:
        unique: dict[str, Candidate] = {}
        for candidate in candidates:
            unique.setdefault(candidate.key, candidate)
        pool = list(unique.values())
        scores = self.model.predict([candidate_features(c, self.func) for c in pool])
        ranked = sorted(zip(scores, range(len(pool)), strict=True), key=lambda x: -x[0])
        return [pool[index] for _, index in ranked[:count]]


UNKNOWN_CHOICES = 4  # options assumed for a choice read back from the database


def mutate(rng: random.Random, decisions: list[Any], counts: Sequence[int] = ()) -> list[Any]:
    """One decision changed: a tiling moves a prime factor, a choice takes another of its
    `counts[i]` options (every one reachable; generate() redraws one that no longer fits)."""
    if not decisions:
        return []
    result = [list(d) if isinstance(d, list) else d for d in decisions]
    index = rng.randrange(len(result))
    value = result[index]
    if isinstance(value, list):
        result[index] = _move_factor(rng, value)
    else:
        count = counts[index] if index < len(counts) and counts[index] else UNKNOWN_CHOICES
        others = [option for option in range(count) if option != value]
        result[index] = rng.choice(others) if others else value
    return result


def _move_factor(rng: random.Random, tile: list[int]) -> list[int]:
    """One prime factor of one tile moved to another tile: the product stays."""
    sources = [i for i, factor in enumerate(tile) if factor > 1]
    if not sources or len(tile) < 2:
        return tile
    source = rng.choice(sources)
    prime = rng.choice(prime_factors(tile[source]))
    target = rng.choice([i for i in range(len(tile)) if i != source])
    moved = list(tile)
    moved[source] //= prime
    moved[target] *= prime
    return moved


def crossover(rng: random.Random, mother: list[Any], father: list[Any]) -> list[Any]:
    length = max(len(mother), len(father))
    result: list[Any] = []
    for index in range(length):
        options = [p[index] for p in (mother, father) if index < len(p)]
        result.append(rng.choice(options))
    return result
