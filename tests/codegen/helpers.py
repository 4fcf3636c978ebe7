"""Compile-and-call helpers for the CPU backend tests: the interpreter is the judge."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tirc.driver.run_cpu import compare, jit_function
from tirc.interp import random_inputs, run
from tirc.ir.function import IRModule
from tirc.text import parse

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def parse_text(text: str) -> IRModule:
    return parse(text, name="<test>")


def run_both(
    module: IRModule,
    args: dict[str, object] | None = None,
    *,
    name: str = "main",
    seed: int = 0,
    sizes: dict[str, int] | None = None,
) -> dict[str, object]:
    """Runs `name` compiled and interpreted on the same inputs; asserts they agree; returns
    the compiled run's arguments."""
    func = module[name]
    if args is None:
        args = random_inputs(func, seed, sizes=sizes)  # type: ignore[assignment]
    assert args is not None
    compiled = {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in args.items()
    }
    reference = {
        k: np.array(v, copy=True) if isinstance(v, np.ndarray) else v for k, v in args.items()
    }
    status = jit_function(module, name, "cpu")(compiled)
    assert status == 0
    run(func, reference, module=module)
    problems = compare(func, compiled, reference)
    assert not problems, problems
    return compiled
