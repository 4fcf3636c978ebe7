"""Plans in both JSON forms: what they read as, how they are written back, and where a
malformed plan is reported (line:col in the plan file, with a suggestion where one helps)."""

from __future__ import annotations

import json

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.diagnostics.render import format_plain
from tirc.ir.structural import find_difference
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import Ref, read_plan
from tirc.text import parse

KERNEL = """# from tvm.script import tirx as T

@T.prim_func(s_tir=True)
def main(A: T.Buffer((128, 64), "float32"), B: T.Buffer((128, 64), "float32")):
    for i, j in T.grid(128, 64):
        with T.sblock("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads(A[vi, vj])
            T.writes(B[vi, vj])
            B[vi, vj] = A[vi, vj] * T.float32(2.0)
"""

TRACE = [
    [
        ["GetSBlock", [], ["B", "main"], ["b0"]],
        ["GetLoops", ["b0"], [], ["l1", "l2"]],
        ["SampleCategorical", [], [[16, 32], [0.5, 0.5]], ["v3"]],
        ["Annotate", ["l1", "v3"], ["pragma_auto_unroll_max_step"], []],
        ["Annotate", ["b0", '"SSR"'], ["meta_schedule.tiling_structure"], []],
        ["Parallel", ["l1"], [], []],
        ["Vectorize", ["l2"], [], []],
        ["EnterPostproc", [], [], []],
    ],
    [[2, 1]],
]

READABLE = {
    "version": 1,
    "func": "main",
    "steps": [
        {"op": "get_sblock", "name": "B", "out": "b0"},
        {"op": "get_loops", "block": "b0", "out": ["l1", "l2"]},
        {"op": "sample_categorical", "candidates": [16, 32], "decision": 1, "out": "v3"},
        {"op": "annotate", "target": "l1", "key": "pragma_auto_unroll_max_step", "value": "v3"},
        {"op": "annotate", "target": "b0", "key": "meta_schedule.tiling_structure", "value": "SSR"},
        {"op": "parallel", "loop": "l1"},
        {"op": "vectorize", "loop": "l2"},
        {"op": "enter_postproc"},
    ],
}


def _error(text: str) -> str:
    with pytest.raises(DiagnosticError) as caught:
        read_plan(text, "plan.json")
    return format_plain(caught.value.diagnostics[0])


def test_both_forms_read_as_the_same_steps() -> None:
    trace = read_plan(json.dumps(TRACE), "trace.json")
    readable = read_plan(json.dumps(READABLE), "plan.json")
    assert [s.op for s in trace.steps] == [s.op for s in readable.steps]
    assert trace.steps[3].args["value"] == Ref("v3")
    assert readable.steps[3].args["value"] == Ref("v3")
    assert trace.steps[4].args["value"] == "SSR"  # TVM's quotes are gone
    assert readable.steps[4].args["value"] == "SSR"  # not a handle: no step defined it
    assert trace.steps[2].decision == readable.steps[2].decision == 1


def test_both_forms_schedule_alike_and_the_trace_replays() -> None:
    module = parse(KERNEL)
    from_trace, applied = apply_plan(module, read_plan(json.dumps(TRACE), "trace.json"))
    from_readable, _ = apply_plan(module, read_plan(json.dumps(READABLE), "plan.json"))
    assert find_difference(from_trace, from_readable) is None
    replayed, again = apply_plan(module, read_plan(applied.to_json(), "applied.json"))
    assert find_difference(replayed, from_trace) is None
    assert again.to_json() == applied.to_json()


def test_written_trace_is_the_readable_form() -> None:
    _, applied = apply_plan(parse(KERNEL), read_plan(json.dumps(TRACE), "trace.json"))
    data = json.loads(applied.to_json())
    assert data["version"] == 1 and data["func"] == "main"
    assert data["steps"][2] == {
        "op": "sample_categorical",
        "candidates": [16, 32],
        "probs": [0.5, 0.5],
        "decision": 1,
        "out": "v3",
    }
    assert data["steps"][3]["value"] == "v3"


def test_bad_json_is_located_at_line_and_column() -> None:
    text = '{"version": 1,\n "steps": [\n  {"op": "get_sblock" "name": "B"}\n ]}\n'
    rendered = _error(text)
    assert "not valid JSON" in rendered
    assert "plan.json:3:23" in rendered


def test_unknown_op_suggests_the_closest() -> None:
    text = json.dumps({"version": 1, "steps": [{"op": "vectorise", "loop": "l1"}]})
    assert "unknown schedule primitive 'vectorise'; did you mean 'vectorize'?" in _error(text)
    trace = json.dumps([[["Paralel", ["l1"], [], []]], []])
    assert "did you mean 'Parallel'?" in _error(trace)


def test_missing_parameter_is_named() -> None:
    text = json.dumps({"version": 1, "steps": [{"op": "bind", "loop": "l1"}]})
    assert "step 'bind' needs 'thread'" in _error(text)
    trace = json.dumps([[["Annotate", ["b0", 1], [], []]], []])
    assert "Annotate is missing its 'key'" in _error(trace)


def test_unknown_parameter_suggests_the_closest() -> None:
    text = json.dumps({"version": 1, "steps": [{"op": "bind", "loop": "l1", "threads": "x"}]})
    assert "has no parameter 'threads'; did you mean 'thread'?" in _error(text)


def test_undefined_handle_is_reported_at_its_step() -> None:
    text = (
        '{"version": 1, "steps": [\n'
        '  {"op": "get_sblock", "name": "B", "out": "b0"},\n'
        '  {"op": "parallel", "loop": "l9"}\n'
        "]}\n"
    )
    with pytest.raises(DiagnosticError) as caught:
        apply_plan(parse(KERNEL), read_plan(text, "plan.json"))
    rendered = format_plain(caught.value.diagnostics[0])
    assert "step 2 (parallel): 'l9' (for loop) is not the output of an earlier step" in rendered
    assert "plan.json:3:3" in rendered


def test_handle_of_the_wrong_kind_is_refused() -> None:
    plan = read_plan(
        json.dumps(
            {
                "steps": [
                    {"op": "get_sblock", "name": "B", "out": "b0"},
                    {"op": "vectorize", "loop": "b0"},
                ]
            }
        ),
        "plan.json",
    )
    with pytest.raises(DiagnosticError) as caught:
        apply_plan(parse(KERNEL), plan)
    assert "'b0' (for loop) is not a loop" in caught.value.diagnostics[0].message


def test_sampling_without_decision_is_refused() -> None:
    plan = read_plan(
        json.dumps({"steps": [{"op": "sample_categorical", "candidates": [1, 2], "out": "v0"}]}),
        "plan.json",
    )
    with pytest.raises(DiagnosticError) as caught:
        apply_plan(parse(KERNEL), plan)
    assert "does not sample" in caught.value.diagnostics[0].message


def test_error_points_at_a_loop_an_earlier_step_built() -> None:
    """A loop made by split has no span in the input: the note shows the printed program."""
    plan = read_plan(
        json.dumps(
            {
                "steps": [
                    {"op": "get_sblock", "name": "B", "out": "b0"},
                    {"op": "get_loops", "block": "b0", "out": ["l1", "l2"]},
                    {"op": "split", "loop": "l2", "factors": [None, 16], "out": ["l3", "l4"]},
                    {"op": "bind", "loop": "l4", "thread": "threadIdx.x"},
                    {"op": "bind", "loop": "l3", "thread": "threadIdx.x"},
                ]
            }
        ),
        "plan.json",
    )
    with pytest.raises(DiagnosticError) as caught:
        apply_plan(parse(KERNEL, name="k.tir"), plan)
    rendered = format_plain(caught.value.diagnostics[0])
    assert (
        "loop j_1 (plan: l4) inside loop j_0 (plan: l3) is already bound to threadIdx.x" in rendered
    )
    assert "<the program before step 5>" in rendered
    assert "for i, j_0 in T.grid(128, 4):" in rendered
