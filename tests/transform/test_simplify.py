"""simplify against the interpreter where its goldens cannot run on random inputs: scalar
parameters chosen, and memory that makes a condition on a load true."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.transform.helpers import run_passes
from tirc.interp import random_inputs, run
from tirc.text import parse

GOLDEN = Path(__file__).parent / "golden" / "simplify"


def same_results(name: str, sizes: dict[str, int], fill: dict[str, list[int]]) -> None:
    module = parse((GOLDEN / f"{name}.before.tir").read_text())
    after = run_passes(module, "simplify")
    inputs = random_inputs(module["main"], 3, sizes=sizes)  # the same inputs for both
    for key, values in fill.items():
        array = inputs[key]
        assert isinstance(array, np.ndarray)  # a buffer, not a scalar parameter
        array[...] = values
    results = []
    for program in (module, after):
        args = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
        run(program["main"], args, module=program)
        results.append(args)
    for key, value in results[0].items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(results[1][key], value, err_msg=key)


@pytest.mark.parametrize("k, m, n", [(9, 0, 3), (13, 1, 2), (64, -2, 8)])
def test_scope_bounds_computes_the_same(k: int, m: int, n: int) -> None:
    same_results("scope_bounds", {"k": k, "m": m, "n": n}, {})


def test_a_fact_on_a_load_does_not_outlive_a_store() -> None:
    """A[0] == N[0] on entry: the store makes the inner condition false, so A[0] ends 4, not 0
    (a fact kept across the store would drop the inner `if`)."""
    same_results("loads_after_stores", {}, {"A": [3], "N": [3]})


def test_narrow_integers_compute_the_same() -> None:
    """Every int8 and uint8 value through rules that hold only where nothing wraps: they once
    made (A * 4 + 9) // 8 into A // 2 + 1 and A < A + 1 true for an int8 A (wrong from A = 32,
    and at 127)."""
    same_results("narrow_integers", {"n": 3}, {"A": list(range(-128, 128)), "U": list(range(256))})


@pytest.mark.parametrize("n", [2, 5, 9])
def test_moved_offsets_compute_the_same(n: int) -> None:
    same_results("moved_offsets", {"n": n}, {})


def test_and_of_ors_computes_the_same() -> None:
    """The and-of-ors golden's conditions on scalars that make each of their terms true and
    false in turn (random scalars would leave every `i == 20` false), and on every B."""
    module = parse((GOLDEN / "and_of_ors.before.tir").read_text())
    after = run_passes(module, "simplify{convert_boolean_to_and_of_ors=true}")
    rows = [(i, j, k) for i in (0, 1, 20, 30) for j in (0, 3, 10) for k in (0, 1, 20, 30)]
    for n, (i, j, k) in enumerate(rows):
        flags = [bool(n >> bit & 1) for bit in range(4)]
        results = []
        for program in (module, after):
            args = random_inputs(program["main"], 0, sizes={"i": i, "j": j, "k": k})
            assert (args["i"], args["j"], args["k"]) == (i, j, k)
            flag_array = args["B"]
            assert isinstance(flag_array, np.ndarray)
            flag_array[...] = flags
            run(program["main"], args, module=program)
            results.append(args["A"])
        np.testing.assert_array_equal(results[1], results[0], err_msg=f"{i, j, k, flags}")
