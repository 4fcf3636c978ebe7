"""Shared by the transform tests: running passes named as in a pipeline, comparing modules."""

from __future__ import annotations

import difflib

from tirc.ir.function import IRModule
from tirc.ir.structural import find_difference
from tirc.text import print_module
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
