"""Every GPU sample plan in samples/gpu, found by name: `P.plan.json` and `P.<variant>.plan.json`
schedule `P.tir` (else the longest `S.tir` with P starting `S_`), at the shape the program's
comment gives tests (`tests use -D N=32`, `Tests use -D M=128 -D N=128`)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.ir.function import IRModule
from tirc.text import parse

GPU_SAMPLES = Path(__file__).parents[2] / "samples" / "gpu"
_TARGET = re.compile(r"^#.*--target 'cuda -arch=(sm_\w+)'", re.MULTILINE)
_TEST_DEFINES = re.compile(r"tests use((?:[ ,]*-D \w+=\w+)+)", re.IGNORECASE)


@dataclass(frozen=True)
class GpuPlan:
    program: Path
    plan: Path
    defines: tuple[tuple[str, str], ...]  # -D NAME=VALUE, in order

    @property
    def id(self) -> str:
        return self.plan.name.removesuffix(".plan.json")

    @property
    def arch(self) -> str | None:
        """The architecture the program's comment requires (`--target 'cuda -arch=sm_90a'`
        for a Hopper-only kernel), else None: any."""
        found = _TARGET.search(self.program.read_text())
        return found.group(1) if found else None

    def lowered(self) -> IRModule:
        """The program at its test shape, scheduled by the plan and lowered for cuda (once
        a test process: modules are immutable)."""
        return _lowered(self)


@functools.cache
def _lowered(plan: GpuPlan) -> IRModule:
    text = plan.program.read_text()
    module = parse(text, name=str(plan.program), defines=dict(plan.defines))
    scheduled, _ = apply_plan_file(module, str(plan.plan))
    return lower_module(scheduled, target="cuda")


def gpu_plans(prefix: str = "") -> list[GpuPlan]:
    """The sample plans whose names start with `prefix`, with their programs."""
    programs = {path.name.removesuffix(".tir"): path for path in GPU_SAMPLES.glob("*.tir")}
    found: list[GpuPlan] = []
    for plan in sorted(GPU_SAMPLES.glob(f"{prefix}*.plan.json")):
        stem = plan.name.removesuffix(".plan.json")
        owner = stem.split(".")[0]
        if owner not in programs:
            prefixes = [name for name in programs if owner.startswith(name + "_")]
            if not prefixes:
                continue
            owner = max(prefixes, key=len)
        program = programs[owner]
        found.append(GpuPlan(program, plan, defines_for_tests(program.read_text())))
    return found


def defines_for_tests(text: str) -> tuple[tuple[str, str], ...]:
    """The -D settings a program's comment asks tests to use."""
    match = _TEST_DEFINES.search(text)
    if match is None:
        return ()
    settings = re.findall(r"-D (\w+)=(\w+)", match.group(1))
    return tuple((name, value) for name, value in settings)
