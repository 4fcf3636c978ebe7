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


def bits_agree(got: np.ndarray, want: np.ndarray, name: str = "") -> None:
    """The same bits, except that a NaN may be any NaN of either sign (the sign of a NaN that
    arithmetic makes is the hardware's)."""
    unsigned = np.dtype(f"uint{8 * got.dtype.itemsize}")
    with np.errstate(invalid="ignore"):
        got_nan, want_nan = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
    assert (got_nan == want_nan).all(), name
    differ = got.view(unsigned)[~got_nan] != want.view(unsigned)[~got_nan]
    assert not differ.any(), (name, got[~got_nan][differ][:5], want[~got_nan][differ][:5])


def run_both_exactly(text: str, args: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Runs `main` of `text` compiled and interpreted on copies of `args`; asserts that every
    buffer agrees bit for bit (NaNs as NaN); returns the compiled run's arguments."""
    module = parse_text(text)
    compiled = {name: np.array(value, copy=True) for name, value in args.items()}
    reference = {name: np.array(value, copy=True) for name, value in args.items()}
    assert jit_function(module, "main", "cpu")(compiled) == 0
    run(module["main"], reference, module=module)
    for name, value in compiled.items():
        bits_agree(value, reference[name], name)
    return compiled
