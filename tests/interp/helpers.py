"""Parsing and running small programs in tests."""

from __future__ import annotations

import textwrap

import numpy as np

from tirc import interp, text
from tirc.ir.function import PrimFunc


def parse_function(source: str, name: str = "main") -> PrimFunc:
    module = text.parse(textwrap.dedent(source), name="test.tir")
    return module[name]


def run_source(
    source: str, **args: np.ndarray | int | float
) -> dict[str, np.ndarray | int | float]:
    """Runs `main` of source on args (arrays are updated in place) and returns them."""
    interp.run(parse_function(source), args)
    return args


def line_of(source: str, fragment: str) -> int:
    """The 1-based line of the dedented source holding fragment."""
    for number, line in enumerate(textwrap.dedent(source).splitlines(), start=1):
        if fragment in line:
            return number
    raise AssertionError(f"{fragment!r} not in the source")
