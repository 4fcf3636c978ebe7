"""The design space of a function: the plans its rules can make, one per set of decisions.

`generate` runs the target's rules over the function's blocks with a sampler, giving a
Candidate: the plan (readable form, every sampled value recorded as a decision) and the
decisions in the order they were drawn. Rerunning with those decisions forced gives the same
plan; forcing a mutated list gives a neighbour. A rule that turns out not to fit a block (a
schedule primitive refuses, an extent is symbolic) is tried with other draws, then left out
for that block and the plan made again without it, so every program gets a plan, at worst
the empty one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tirc.ir.function import IRModule
from tirc.schedule.errors import ScheduleError
from tirc.schedule.plan import Plan
from tirc.tune.builder import Misfit, PlanBuilder, Redraw, Sampler, leaf_blocks
from tirc.tune.rules import rules_for

MAX_REDRAWS = 16
RULE_RETRIES = 2


@dataclass
class Candidate:
    plan: Plan
    decisions: list[Any]
    skipped: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    applied: tuple[tuple[str, str], ...] = ()  # (rule, block) pairs that scheduled something
    module: IRModule | None = None  # the scheduled program
    target: str = ""  # 'cpu' or 'cuda'; empty for a candidate read back from the database
    features: list[float] | None = None  # the cost model's, once computed
    counts: list[int] = field(default_factory=list)  # each choice's options (0: a tiling)

    @property
    def key(self) -> str:
        return self.plan.to_json()


class _RuleFailed(Exception):
    def __init__(self, rule: str, block: str):
        super().__init__(f"{rule} on {block}")
        self.rule, self.block = rule, block


def generate(
    module: IRModule,
    func: str,
    target: str,
    rng: random.Random,
    forced: list[Any] | None = None,
    skipped: frozenset[tuple[str, str]] = frozenset(),
) -> Candidate:
    """A candidate plan for `func`, its decisions forced where given and fitting."""
    skip = set(skipped)
    failures: dict[tuple[str, str], int] = {}
    redraws = 0
    while True:
        sampler = Sampler(rng, list(forced or []))
        try:
            builder, applied = _run_rules(module, func, target, sampler, frozenset(skip))
        except _RuleFailed as failure:
            # A primitive may refuse only some decisions (a tile the fetch cannot bind): draw
            # again a few times before leaving the rule out for this block.
            pair = (failure.rule, failure.block)
            failures[pair] = failures.get(pair, 0) + 1
            if failures[pair] > RULE_RETRIES:
                skip.add(pair)
            forced = None
            continue
        except Redraw:
            redraws += 1
            if redraws > MAX_REDRAWS:
                skip.update(_all_pairs(module, func, target))
            forced = None
            continue
        return Candidate(
            builder.plan(),
            sampler.taken,
            frozenset(skip),
            tuple(applied),
            builder.module,
            target,
            counts=sampler.counts,
        )


def _run_rules(
    module: IRModule,
    func: str,
    target: str,
    sampler: Sampler,
    skipped: frozenset[tuple[str, str]],
) -> tuple[PlanBuilder, list[tuple[str, str]]]:
    builder = PlanBuilder(module, func, sampler)
    handled: set[str] = set()
    applied: list[tuple[str, str]] = []
    for rule_name, rule in rules_for(target):
        for block in leaf_blocks(builder.sch):
            name = block.block.name
            if name in handled or (rule_name, name) in skipped or not block.is_valid:
                continue
            if not builder.sch.blocks_named(name):
                continue  # an earlier step in this pass removed it (inlined)
            try:
                done = rule(builder, name)
            except (ScheduleError, Misfit):
                raise _RuleFailed(rule_name, name) from None
            except Exception:  # a primitive's own bug: the rule's failure, not the tuner's
                raise _RuleFailed(rule_name, name) from None
            if done is not None:
                applied.append((rule_name, name))
                handled.update(done)
    return builder, applied


def _all_pairs(module: IRModule, func: str, target: str) -> set[tuple[str, str]]:
    """Every (rule, block) pair: the empty plan, when no draw makes a valid candidate."""
    builder = PlanBuilder(module, func, Sampler(random.Random(0)))
    names = [block.block.name for block in leaf_blocks(builder.sch)]
    return {(rule, name) for rule, _ in rules_for(target) for name in names}
