"""How `tirc diff` words a structural difference."""

from __future__ import annotations

from dataclasses import dataclass

from tirc.diagnostics import Source, Span
from tirc.diagnostics.render import format_plain
from tirc.driver.difference import difference_report, fragment
from tirc.ir.structural import Difference


@dataclass
class Located:
    span: Span | None


def test_both_places_and_both_fragments_are_shown() -> None:
    left = Source("a.tir", "for i in range(128):\n")
    right = Source("b.tir", "\nfor i in range(64):\n")
    left_span = Span(left, 15, 18)
    right_span = Span(right, 16, 18)
    difference = Difference(
        "main.body.extent",
        Located(left_span),
        Located(right_span),
        "constants differ",
        left_span,
        right_span,
    )
    text = format_plain(difference_report(difference, "a.tir", "b.tir"), label=False)
    assert text == (
        "a.tir and b.tir differ at main.body.extent: constants differ\n"
        "note: a.tir has `128`\n"
        " --> a.tir:1:16\n"
        "  |\n"
        "1 | for i in range(128):\n"
        "  |                ^~~\n"
        "note: b.tir has `64`\n"
        " --> b.tir:2:16\n"
        "  |\n"
        "2 | for i in range(64):\n"
        "  |                ^~\n"
    )


def test_plain_values_inside_a_located_node() -> None:
    source = Source("a.tir", 'A = T.Buffer((4,), "float32")')
    span = Span(source, 0, len(source.text))
    difference = Difference("main.params[0].dtype", "float32", "int8", "", span, None)
    lines = format_plain(difference_report(difference, "a.tir", "b.tir"), label=False).splitlines()
    assert lines[0] == "a.tir and b.tir differ at main.params[0].dtype"
    assert lines[1] == "note: a.tir has `'float32'`"
    assert lines[2] == " --> a.tir:1:1"
    assert lines[-1] == "note: b.tir has `'int8'` (no source location)"


def test_fragments_are_one_short_line() -> None:
    assert fragment(12) == "12"
    source = Source("a.tir", "x" * 200 + "\nmore")
    text = fragment(Located(Span(source, 0, len(source.text))))
    assert len(text) == 80 and text.endswith("...")


def test_a_tuple_of_nodes_prints_item_by_item() -> None:
    from tirc.ir import dtype as dt
    from tirc.ir.expr import IntImm

    source = Source("a.tir", "T.Buffer((128, 128))")
    shared = Span(source, 9, 19)  # the parser gives a shape's items the span of the tuple
    shape = (IntImm(128, dt.INT32, span=shared), IntImm(64, dt.INT32, span=shared))
    assert fragment(shape) == "(128, 64)"
