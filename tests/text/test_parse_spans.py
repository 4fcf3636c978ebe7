"""Every IR node the parser builds carries the span of the text it came from."""

from __future__ import annotations

from tests.text.parse_helpers import expect_error, parse
from tirc.diagnostics import Span
from tirc.ir import expr as ir
from tirc.ir import stmt as st
from tirc.ir.functor import walk
from tirc.ir.node import Node

PROGRAM = """@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16,), "float32")):
    for i, k in T.grid(16, 16):
        with T.sblock("sum"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk] * T.float32(2)
"""


def where(span: Span | None) -> tuple[int, int]:
    assert span is not None
    return span.line, span.column


def test_statement_and_expression_spans() -> None:
    func = parse(PROGRAM).functions[0][1]
    root = func.body
    loop = root.block.body
    assert isinstance(loop, st.For)
    assert where(loop.span) == (3, 5)
    realize = loop.body.body
    assert isinstance(realize, st.SBlockRealize)
    assert where(realize.span) == (4, 14)  # the T.sblock("sum") call
    block = realize.block
    assert where(block.iter_vars[0].span) == (5, 22)
    assert where(block.init.span) == (7, 17)
    store = block.body
    assert isinstance(store, st.BufferStore)
    assert where(store.span) == (8, 13)
    value = store.value
    assert isinstance(value, ir.Add)
    load = value.a
    assert isinstance(load, ir.BufferLoad) and where(load.span) == (8, 21)
    assert where(value.b.span) == (8, 29)  # A[vi, vk] * T.float32(2) starts at A
    assert where(func.span) == (1, 1)


def test_spans_cover_the_whole_expression() -> None:
    text = PROGRAM
    func = parse(text).functions[0][1]
    store = func.body.block.body.body.body.block.body
    span = store.value.span
    assert text[span.start : span.end] == "B[vi] + A[vi, vk] * T.float32(2)"


def test_buffers_and_variables_have_spans() -> None:
    func = parse(PROGRAM).functions[0][1]
    buffer = func.buffer_map[0][1]
    assert where(buffer.span) == (2, 13)
    loop = func.body.block.body
    assert where(loop.loop_var.span) == (3, 9)
    assert where(loop.body.loop_var.span) == (3, 12)


def test_most_nodes_have_spans() -> None:
    func = parse(PROGRAM).functions[0][1]
    missing: list[str] = []

    def check(node: Node) -> None:
        # constants made by conversion (T.float32(0) stored as float32) may be shared
        if node.span is None and not isinstance(node, (ir.IntImm, ir.FloatImm, st.Attrs)):
            missing.append(type(node).__name__)

    walk(func.body, check)
    assert not missing, missing


def test_a_shape_strings_expression_is_located_in_the_file() -> None:
    """`"n * 2 + m"` is parsed on its own, its nodes located in the file through the string's
    place: the variables at the string, the operations at their columns, a diagnostic too."""
    program = (
        "@T.prim_func\n"
        "def main(a: T.handle):\n"
        '    A = T.match_buffer(a, ("n * 2 + m",), "float32")\n'
        "    A[0] = T.float32(1)\n"
    )
    func = parse(program).functions[0][1]
    (buffer,) = [b for _, b in func.buffer_map]
    extent = buffer.shape[0]
    assert isinstance(extent, ir.Add) and extent.span is not None
    assert extent.span.source.name != "<shape>" and where(extent.span) == (3, 29)
    assert where(extent.a.span) == (3, 29)  # n * 2
    names: dict[str, Span | None] = {}
    walk(extent, lambda n: names.update({n.name: n.span}) if isinstance(n, ir.Var) else None)
    assert where(names["n"]) == (3, 28) and where(names["m"]) == (3, 28)  # the string


def test_an_error_in_a_shape_string_points_at_the_string() -> None:
    program = (
        '@T.prim_func\ndef main(A: T.Buffer(("n * 2.5",), "float32")):\n    A[0] = T.float32(1)\n'
    )
    (diagnostic,) = expect_error(program).diagnostics
    assert "scalar integers" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.source.name == "test.tir"
    assert where(diagnostic.span) == (2, 22)  # the string, not the line or "<shape>"
