"""Random valid split/fuse/reorder plans on the sample kernels keep what they compute: the
interpreter gives the same results before and after (floats within a small tolerance, as a
reordered reduction adds in another order)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from tirc.interp import random_inputs, run
from tirc.ir.function import IRModule
from tirc.ir.stmt import For, IterType
from tirc.schedule import primitives
from tirc.schedule.errors import ScheduleError
from tirc.schedule.schedule import Schedule
from tirc.schedule.sref import SRef
from tirc.text import parse, print_module

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
KERNELS = ["elementwise.tir", "reduction.tir", "softmax.tir"]


def _call(sch: Schedule, op: str, **args: object) -> object:
    entry = primitives.by_op(op)
    assert entry is not None, op
    return entry.apply(sch, **args)


def _blocks(sch: Schedule) -> list[SRef]:
    return [sref for sref in sch.state.stmt2ref.values() if sref.is_block and sref.parent]


def _random_step(sch: Schedule, rng: random.Random) -> str | None:
    block = rng.choice(sorted(_blocks(sch), key=lambda s: s.block.name))
    loops = sch.loops_above(block)
    if not loops:
        return None
    kind = rng.choice(["split", "fuse", "reorder"])
    if kind == "split":
        loop = rng.choice(loops)
        extent = loop.loop.extent.value  # type: ignore[attr-defined]
        factor = rng.randint(1, extent + 2)
        factors = rng.choice([[None, factor], [factor, None], [None, 2, factor]])
        _call(sch, "split", loop=loop, factors=factors, preserve_unit_iters=rng.random() < 0.5)
        return f"split {factors}"
    chain = [a for a, b in zip(loops, loops[1:], strict=False) if a.loop.body is b.stmt]
    if not chain:
        return None
    start = rng.choice(chain)
    run_ = [start]
    while isinstance(run_[-1].loop.body, For) and len(run_) < 3:
        run_.append(sch.state.get_sref(run_[-1].loop.body))
    if kind == "fuse":
        if any(iv.iter_type is IterType.REDUCE for iv in block.block.iter_vars):
            # fusing spatial with reduction loops and then reordering lets a reduction's
            # init run after some of its updates: TVM allows that plan, but it is not valid
            return None
        _call(sch, "fuse", loops=run_, preserve_unit_iters=rng.random() < 0.5)
        return "fuse"
    order = run_[:]
    rng.shuffle(order)
    _call(sch, "reorder", ordered_loops=order)
    return "reorder"


def _outputs(module: IRModule, inputs: Mapping[str, object]) -> dict[str, np.ndarray]:
    args = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    run(module["main"], args)  # type: ignore[arg-type]
    return {k: v for k, v in args.items() if isinstance(v, np.ndarray)}


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("seed", range(8))
def test_random_loop_plans_keep_results(kernel: str, seed: int) -> None:
    module = parse((SAMPLES / kernel).read_text())
    rng = random.Random(seed * 7919 + len(kernel))
    sch = Schedule(module)
    steps = []
    for _ in range(4):
        try:
            step = _random_step(sch, rng)
        except ScheduleError:
            continue  # a random step may be illegal; refusing it is the primitive's job
        if step:
            steps.append(step)
    scheduled = sch.module
    inputs = random_inputs(module["main"], seed)
    before, after = _outputs(module, inputs), _outputs(scheduled, inputs)
    for name, want in before.items():
        assert np.allclose(after[name], want, rtol=1e-5, atol=1e-6), (
            f"{name} differs after {steps}:\n{print_module(scheduled)}"
        )
