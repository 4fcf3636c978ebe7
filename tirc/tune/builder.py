"""Building a plan step by step: each step runs on a live Schedule and is recorded as a Step.

The rules call the schedule's primitives through a PlanBuilder, so that what they see (the
loops and blocks after the steps so far) is what the recorded plan replays to. Sampling steps
draw their decision from a Sampler: forced decisions (a mutated candidate's) where they still
fit, random ones otherwise; the recorded steps carry the decisions, so the plan replays exactly.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tirc.ir.expr import IntImm
from tirc.ir.function import IRModule
from tirc.ir.functor import uses_var
from tirc.ir.stmt import For, IterType, SBlock, SBlockRealize
from tirc.schedule import primitives
from tirc.schedule.plan import Plan, Ref, Step
from tirc.schedule.primitives.sample_compute_location import compute_locations
from tirc.schedule.properties import realize_of
from tirc.schedule.schedule import Schedule
from tirc.schedule.sref import SRef
from tirc.schedule.state import children


class Redraw(Exception):
    """The decisions drawn make no valid candidate (too many threads): draw again."""


class Misfit(Exception):
    """A rule met a program it cannot schedule after all (a symbolic extent to tile)."""


@dataclass(frozen=True)
class Sampled:
    """A sampled value and the name the plan gives it (split takes it by name)."""

    name: str
    value: Any


@dataclass
class Sampler:
    """Where decisions come from: `forced[i]` for the i-th sampling step when it fits."""

    rng: random.Random
    forced: list[Any] = field(default_factory=list)
    taken: list[Any] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)  # a choice's options; 0 for a tiling

    def next_forced(self) -> Any:
        index = len(self.taken)
        return self.forced[index] if index < len(self.forced) else None

    def tile(
        self, extent: int, n: int, max_innermost: int, innermost: Sequence[int] = ()
    ) -> list[int]:
        """A forced decision that fits, else a random tiling; `innermost` lists the innermost
        factors a random draw prefers (a vector width's multiples), where one divides."""
        wanted = self.next_forced()
        if is_perfect_tile(wanted, extent, n, max_innermost):
            decision = list(wanted)
        else:
            decision = random_tile(self.rng, extent, n, max_innermost, innermost)
        self.taken.append(decision)
        self.counts.append(0)
        return decision

    def choice(self, count: int, weights: list[float] | None = None) -> int:
        wanted = self.next_forced()
        if isinstance(wanted, int) and not isinstance(wanted, bool) and 0 <= wanted < count:
            decision = wanted
        else:
            decision = self.rng.choices(range(count), weights=weights)[0]
        self.taken.append(decision)
        self.counts.append(count)
        return decision


def is_perfect_tile(value: Any, extent: int, n: int, max_innermost: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) == n
        and all(isinstance(f, int) and not isinstance(f, bool) and f >= 1 for f in value)
        and math.prod(value) == extent
        and value[-1] <= max(max_innermost, 1)
    )


def prime_factors(value: int) -> list[int]:
    factors, divisor = [], 2
    while divisor * divisor <= value:
        while value % divisor == 0:
            factors.append(divisor)
            value //= divisor
        divisor += 1
    if value > 1:
        factors.append(value)
    return factors


def random_tile(
    rng: random.Random, extent: int, n: int, max_innermost: int, innermost: Sequence[int] = ()
) -> list[int]:
    """n factors of `extent` in random places, the innermost at most `max_innermost` (a prime
    that would pass it goes to the outermost factor), or one of `innermost` where one fits."""
    fitting = [f for f in innermost if extent % f == 0 and f <= max_innermost]
    tile = [1] * n
    rest = extent
    if fitting and n > 1:
        tile[-1] = rng.choice(fitting)
        rest //= tile[-1]
    for prime in prime_factors(rest):
        last = n - 1 if not (fitting and n > 1) else n - 2
        position = rng.randint(0, last)
        if position == n - 1 and tile[-1] * prime > max_innermost:
            position = 0
        tile[position] *= prime
    return tile


class PlanBuilder:
    """A Schedule that records each step it runs as a Step of a readable plan."""

    def __init__(self, module: IRModule, func: str, sampler: Sampler):
        self.sch = Schedule(module, func)
        self.sch.context = {}  # apply_plan sets it too
        self.func = func
        self.sampler = sampler
        self.steps: list[Step] = []
        self._names: dict[int, str] = {}  # id(SRef) -> the plan's name for it
        self._counter = 0

    # -- recording ----------------------------------------------------------------------------

    def _fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def _ref(self, value: Any) -> tuple[Any, Any]:
        """(what the primitive gets, what the plan records) for one argument."""
        if isinstance(value, SRef):
            name = self._names.get(id(value))
            if name is None:
                raise AssertionError(f"{value!r} was not named by an earlier step")
            return value, Ref(name)
        if isinstance(value, Sampled):
            return value.value, Ref(value.name)
        if isinstance(value, list):
            pairs = [self._ref(item) for item in value]
            return [p[0] for p in pairs], [p[1] for p in pairs]
        return value, value

    def run(self, op: str, decision: Any = None, **args: Any) -> Any:
        entry = primitives.by_op(op)
        assert entry is not None, op
        live: dict[str, Any] = {}
        recorded: dict[str, Any] = {}
        for name, value in args.items():
            live[name], recorded[name] = self._ref(value)
        if decision is not None:
            live["decision"] = decision
        result = entry.apply(self.sch, **live)
        outputs: list[str] = []
        if entry.signature.outputs != "none":
            values = result if isinstance(result, (list, tuple)) else [result]
            for value in values:
                prefix = "b" if isinstance(value, SRef) and value.is_block else "l"
                if not isinstance(value, SRef):
                    prefix = "v"
                name = self._fresh(prefix)
                if isinstance(value, SRef):
                    self._names[id(value)] = name
                outputs.append(name)
        self.steps.append(Step(op, recorded, outputs, None, decision))
        return result, outputs

    def plan(self) -> Plan:
        return Plan(list(self.steps), self.func)

    @property
    def module(self) -> IRModule:
        return self.sch.module

    # -- the primitives the rules use -----------------------------------------------------------

    def get_sblock(self, name: str) -> SRef:
        block, _ = self.run("get_sblock", name=name)
        return block

    def get_loops(self, block: SRef) -> list[SRef]:
        loops, _ = self.run("get_loops", block=block)
        return list(loops)

    def split(self, loop: SRef, factors: list[Any]) -> list[SRef]:
        loops, _ = self.run("split", loop=loop, factors=factors)
        return list(loops)

    def fuse(self, loops: list[SRef]) -> SRef:
        if len(loops) == 1:
            return loops[0]
        fused, _ = self.run("fuse", loops=loops)
        return fused

    def sample_tile(
        self, loop: SRef, n: int, max_innermost: int, innermost: Sequence[int] = ()
    ) -> list[Sampled]:
        extent = loop_extent(loop)
        if extent is None:
            raise Misfit("a loop of symbolic extent has no perfect tiling")
        decision = self.sampler.tile(extent, n, max_innermost, innermost)
        _, names = self.run(
            "sample_perfect_tile",
            decision=decision,
            loop=loop,
            n=n,
            max_innermost_factor=max_innermost,
        )
        return [Sampled(name, value) for name, value in zip(names, decision, strict=True)]

    def sample_choice(self, candidates: list[Any], weights: list[float] | None = None) -> Sampled:
        index = self.sampler.choice(len(candidates), weights)
        _, names = self.run("sample_categorical", decision=index, candidates=candidates)
        return Sampled(names[0], candidates[index])

    def sample_compute_location(self, block: SRef) -> Sampled:
        """A legal location for the producer `block` (a loop of its consumer, or the root as
        a LocationMark), drawn among sample_compute_location's candidates; the plan records
        the location's index, so it replays where the loops are the same."""
        locations = compute_locations(self.sch, block)
        index = self.sampler.choice(len(locations))
        location, names = self.run(
            "sample_compute_location", decision=locations[index], block=block
        )
        return Sampled(names[0], location)


@dataclass
class Tiles:
    """A nest tiled S0 S1 R0 S2 R1 S3: the loops of each level, outermost first."""

    spatial: list[list[SRef]]  # four levels, each with one loop per spatial loop of the nest
    reduce: list[list[SRef]]  # two levels, each with one loop per reduction loop
    factors: list[list[Sampled]]  # each spatial loop's sampled factors

    @property
    def order(self) -> list[SRef]:
        s, r = self.spatial, self.reduce
        return s[0] + s[1] + r[0] + s[2] + r[1] + s[3]


def tile_nest(
    builder: PlanBuilder,
    loops: list[SRef],
    roles: Sequence[IterType],
    max_innermost: int,
    preferred: Callable[[int, SRef], Sequence[int]] | None = None,
) -> Tiles:
    """Each spatial loop tiled in four and each reduction loop in two (sampled perfect tiles,
    innermost factors from `preferred(position, loop)` where given), then reordered S0 S1 R0
    S2 R1 S3: the head of both multi-level-tiling rules."""
    spatial: list[list[SRef]] = []
    reduce: list[list[SRef]] = []
    factors: list[list[Sampled]] = []
    for position, (loop, role) in enumerate(zip(loops, roles, strict=True)):
        if role is IterType.SPATIAL:
            innermost = preferred(position, loop) if preferred is not None else ()
            sampled = builder.sample_tile(loop, 4, max_innermost, innermost)
            factors.append(sampled)
            spatial.append(builder.split(loop, list(sampled)))
        else:
            sampled = builder.sample_tile(loop, 2, max_innermost)
            reduce.append(builder.split(loop, list(sampled)))
    tiles = Tiles(
        [[tile[level] for tile in spatial] for level in range(4)],
        [[tile[level] for tile in reduce] for level in range(2)],
        factors,
    )
    builder.run("reorder", ordered_loops=tiles.order)
    return tiles


# -- queries over the program being scheduled ------------------------------------------------


def loop_extent(loop: SRef) -> int | None:
    extent = loop.loop.extent
    return extent.value if isinstance(extent, IntImm) else None


def leaf_blocks(sch: Schedule) -> list[SRef]:
    """The blocks with no block inside them, in program order."""
    state = sch.state
    found: list[SRef] = []

    def visit(sref: SRef) -> None:
        children = _children(state, sref)
        if (
            sref.is_block
            and sref is not state.root
            and not any(_has_block(state, c) for c in children)
        ):
            found.append(sref)
            return
        for child in children:
            visit(child)

    visit(state.root)
    return found


def _children(state: Any, sref: SRef) -> list[SRef]:
    node = sref.stmt
    assert node is not None
    return [state.get_sref(child) for child in children(node)]


def _has_block(state: Any, sref: SRef) -> bool:
    if sref.is_block:
        return True
    return any(_has_block(state, child) for child in _children(state, sref))


def iter_types(block: SRef) -> list[IterType]:
    return [iv.iter_type for iv in block.block.iter_vars]


def loop_roles(block: SRef, loops: list[SRef]) -> list[IterType | None]:
    """For each loop above the block, the kind of the one iterator its variable feeds when the
    block binds that iterator to the loop variable alone; None where it is anything else."""
    realize = realize_of(block)
    roles: list[IterType | None] = []
    for loop in loops:
        var = loop.loop.loop_var
        role: IterType | None = None
        uses = 0
        for iv, value in zip(block.block.iter_vars, realize.iter_values, strict=True):
            if value is var:
                role, uses = iv.iter_type, uses + 1
            elif _mentions(value, var):
                uses += 2
        roles.append(role if uses == 1 else None)
    return roles


def _mentions(expr: Any, var: Any) -> bool:
    return uses_var(expr, var)


def is_plain_nest(block: SRef, loops: list[SRef]) -> bool:
    """Every loop above the block is a serial loop of constant extent over this block alone."""
    for loop in loops:
        node = loop.loop
        if not isinstance(node.extent, IntImm) or node.thread_binding is not None:
            return False
        if node.kind.name != "SERIAL" or node.annotations:
            return False
    for outer, inner in zip(loops, loops[1:], strict=False):
        if outer.loop.body is not inner.loop:
            return False
    if loops and not _only_block(loops[-1].loop, block.block):
        return False
    return True


def _only_block(loop: For, block: SBlock) -> bool:
    body = loop.body
    return isinstance(body, SBlockRealize) and body.block is block


def writes_output(builder: PlanBuilder, block: SRef) -> bool:
    func = builder.sch.state.func
    params = {buffer for _, buffer in func.buffer_map}
    return any(region.buffer in params for region in block.block.writes)
