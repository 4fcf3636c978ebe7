"""Shared by the transform tests: running passes named as in a pipeline, comparing modules,
lowering a program file and checking it still computes the same, measuring accesses."""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np

from tirc.driver.lower import lower_module
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import walk
from tirc.ir.node import Node
from tirc.ir.structural import find_difference
from tirc.text import parse, print_module
from tirc.transform import read_pipeline, run_pipeline
from tirc.transform.runner import Instruments


def run_passes(module: IRModule, spelled: str, *, verify: bool = True) -> IRModule:
    """`module` after the passes spelled `a,b{opt=1}` (commas inside braces allowed)."""
    items, depth, current = [], 0, ""
    for char in spelled:
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        current += char
    items.append(current.strip())
    quoted = ", ".join(f"'{item}'" for item in items if item)
    pipeline = read_pipeline(f"passes = [{quoted}]")
    return run_pipeline(module, pipeline.passes, Instruments(verify_each=verify))


def difference_report(want: IRModule, got: IRModule, want_label: str = "expected") -> str | None:
    """None when structurally equal, else the first difference and a text diff."""
    difference = find_difference(got, want)
    if difference is None:
        return None
    diff = "\n".join(
        difflib.unified_diff(
            print_module(want).splitlines(),
            print_module(got).splitlines(),
            want_label,
            "tirc",
            lineterm="",
        )
    )
    return f"{difference.message} at {difference.path}\n{diff}"


def lowered_computes_the_same(
    path: Path, seed: int, target: str = "cuda"
) -> tuple[IRModule, dict[str, object], dict[str, object]]:
    """The program in `path` lowered for `target`, run in the interpreter (the thread model
    for kernels: a race or an out-of-bounds access is an error) on the random inputs of
    `seed` beside the original; asserts every buffer agrees. Returns the lowered module, the
    inputs and the outputs."""
    original = parse(path.read_text(), name=str(path))
    lowered = lower_module(original, target=target)
    inputs = random_inputs(original["main"], seed)
    expected = {key: np.array(value, copy=True) for key, value in inputs.items()}
    got = {key: np.array(value, copy=True) for key, value in inputs.items()}
    run(original["main"], expected)
    run(lowered["main"], got, module=lowered)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key], err_msg=key)
    return lowered, inputs, got


def widest_access(module: IRModule) -> int:
    """Bytes of the widest load or store in the module."""
    widest = 0

    def look(node: Node) -> None:
        nonlocal widest
        if isinstance(node, E.BufferLoad):
            widest = max(widest, node.dtype.bytes)
        elif isinstance(node, S.BufferStore):
            widest = max(widest, node.value.dtype.bytes)  # type: ignore[attr-defined]

    walk(module, look)
    return widest
