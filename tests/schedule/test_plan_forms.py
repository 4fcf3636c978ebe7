"""Plans as newcomers write them: a bare list of steps (as docs/plans.md shows each
primitive), a bare list of TVM instructions, names from before TVM's sblock rename; and errors
that name loops and blocks both as the program and as the plan calls them."""

from __future__ import annotations

import json

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.diagnostics.render import format_plain
from tirc.ir.structural import find_difference
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse

KERNEL = """# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((128, 64), "float32"), B: T.Buffer((128, 64), "float32")):
    for i, j in T.grid(128, 64):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
"""

STEPS = [
    {"op": "get_sblock", "name": "B", "out": "b"},
    {"op": "get_loops", "block": "b", "out": ["mi", "mj"]},
    {"op": "split", "loop": "mj", "factors": [None, 16], "out": ["mj0", "mj1"]},
]
INSTRUCTIONS = [
    ["GetSBlock", [], ["B", "main"], ["b0"]],
    ["GetLoops", ["b0"], [], ["l1", "l2"]],
    ["Split", ["l2", None, 16], [True, False], ["l3", "l4"]],
]


def scheduled(plan: object) -> object:
    module, _ = apply_plan(parse(KERNEL), read_plan(json.dumps(plan), "plan.json"))
    return module


def failure(plan: object) -> str:
    with pytest.raises(DiagnosticError) as caught:
        scheduled(plan)
    return format_plain(caught.value.diagnostics[0])


def test_a_bare_list_of_steps_is_the_readable_form() -> None:
    expected = scheduled({"version": 1, "steps": STEPS})
    assert find_difference(scheduled(STEPS), expected) is None


def test_a_bare_list_of_instructions_is_a_trace_without_decisions() -> None:
    expected = scheduled({"version": 1, "steps": STEPS})
    assert find_difference(scheduled(INSTRUCTIONS), expected) is None
    assert find_difference(scheduled([INSTRUCTIONS, []]), expected) is None


def test_steps_of_a_bare_list_are_located() -> None:
    text = '[\n  {"op": "get_sblock", "name": "B", "out": "b"},\n  {"op": "vectorise"}\n]\n'
    with pytest.raises(DiagnosticError) as caught:
        read_plan(text, "plan.json")
    rendered = format_plain(caught.value.diagnostics[0])
    assert "unknown schedule primitive 'vectorise'" in rendered
    assert "plan.json:3:3" in rendered


def test_names_from_before_the_sblock_rename_are_accepted() -> None:
    expected = scheduled(INSTRUCTIONS)
    old_trace = [["GetBlock", [], ["B", "main"], ["b0"]], *INSTRUCTIONS[1:]]
    assert find_difference(scheduled(old_trace), expected) is None
    old_steps = [{"op": "get_block", "name": "B", "out": "b"}, *STEPS[1:]]
    assert find_difference(scheduled(old_steps), expected) is None
    applied = read_plan(json.dumps(old_steps), "plan.json")
    assert applied.steps[0].op == "get_sblock"  # written back in today's spelling


def test_what_is_not_a_plan_says_what_to_write() -> None:
    with pytest.raises(DiagnosticError) as caught:
        read_plan("[1, 2, 3]", "plan.json")
    message = caught.value.diagnostics[0].message
    assert '{"version": 1, "steps": [{"op": ...}, ...]}' in message
    assert "a bare list of such steps" in message
    assert "[[instruction, ...], decisions]" in message


def test_errors_name_loops_as_the_plan_does_too() -> None:
    plan = [
        *STEPS,
        {"op": "bind", "loop": "mj1", "thread": "threadIdx.x"},
        {"op": "bind", "loop": "mj0", "thread": "threadIdx.x"},
    ]
    rendered = failure(plan)
    assert "loop j_1 (plan: mj1) inside loop j_0 (plan: mj0) is already bound" in rendered


def test_a_compute_at_failure_names_the_consumer_outside_the_loop() -> None:
    kernel = """# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32"), C: T.Buffer((64,), "float32"),
         D: T.Buffer((64,), "float32")):
    B = T.sblock_alloc_buffer((64,))
    for i in range(64):
        with T.sblock("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = A[vi] + T.float32(1)
    for i in range(64):
        with T.sblock("C"):
            vi = T.axis.spatial(64, i)
            C[vi] = B[vi] * T.float32(2)
    for i in range(64):
        with T.sblock("D"):
            vi = T.axis.spatial(64, i)
            D[vi] = B[vi] * T.float32(3)
"""
    plan = [
        {"op": "get_sblock", "name": "B", "out": "b"},
        {"op": "get_sblock", "name": "C", "out": "c"},
        {"op": "get_loops", "block": "c", "out": ["ci"]},
        {"op": "compute_at", "block": "b", "loop": "ci"},
    ]
    with pytest.raises(DiagnosticError) as caught:
        apply_plan(parse(kernel), read_plan(json.dumps(plan), "plan.json"))
    message = caught.value.diagnostics[0].message
    assert (
        'every consumer of block "B" must be under loop i (plan: ci), but block "D" is not'
        in message
    )
