"""lower-match-buffer refuses a view whose declared fields are not provably its source's, as
TVM 0.27 does (its test_fail_buffer_bind, test_fail_match_func_param): a variable the view
declares takes the source's value once, and must match it wherever it appears again; a
variable bound elsewhere (a parameter) is never rebound."""

from __future__ import annotations

import pytest

from tests.transform.helpers import run_passes
from tirc.diagnostics import DiagnosticError
from tirc.ir.structural import find_difference
from tirc.text import parse

PROGRAM = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((8, 8), "float32"), m: T.int32, n: T.int32):
    for i, j in T.grid(8, 2):
        with T.sblock(""):
            s0 = T.int32()
            s1 = T.int32()
            sub_A = T.match_buffer(A[i, j * 4:j * 4 + 4], (1, 4), strides=STRIDES)
            for jj in range(4):
                sub_A[0, jj] = T.Cast("float32", s0 + s1)
"""

FRESH = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((8, 8), "float32"), m: T.int32, n: T.int32):
    for i, j in T.grid(8, 2):
        with T.sblock(""):
            T.reads()
            T.writes(A[i, j * 4:j * 4 + 4])
            for jj in range(4):
                A[i, j * 4 + jj] = T.Cast("float32", T.Add(8, 1))
"""


@pytest.mark.parametrize(
    ("strides", "message"),
    [
        ("(s0, s0)", "declares its stride 0 as 1, but its source region A[...] has 8"),
        ("(m, n)", "declares its stride 1 as n, but its source region A[...] has 1"),
        ("(8, 2)", "declares its stride 1 as 2, but its source region A[...] has 1"),
    ],
)
def test_a_view_unlike_its_source_is_refused(strides: str, message: str) -> None:
    module = parse(PROGRAM.replace("STRIDES", strides))
    with pytest.raises(DiagnosticError, match=message.replace("[", r"\[")) as error:
        run_passes(module, "lower-match-buffer")
    span = error.value.diagnostics[0].span
    assert span is not None and span.line == 8


def test_fresh_strides_take_the_source_ones() -> None:
    module = parse(PROGRAM.replace("STRIDES", "(s0, s1)"))
    lowered = run_passes(module, "lower-match-buffer")
    assert find_difference(lowered, parse(FRESH)) is None
