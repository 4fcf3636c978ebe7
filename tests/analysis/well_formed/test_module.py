"""The verifier as a whole: every violation in every function, in source order."""

from __future__ import annotations

from hypothesis import given, settings

from tirc.analysis.well_formed import RULES, verify_module
from tirc.ir import dtype as dt
from tirc.ir.expr import BufferLoad, IntImm, Var
from tirc.ir.function import IRModule, PrimFunc
from tirc.ir.stmt import BufferStore, Evaluate, ForKind, IfThenElse, seq

from ...text.ir_strategies import modules
from .builders import (
    Listing,
    buffer,
    function,
    i32,
    lines,
    loop,
    messages,
    module,
    realize,
    spatial,
)


def test_all_violations_are_reported_in_source_order() -> None:
    text = Listing("""
def main(A: T.Buffer((16,), "float32")):
    for i in T.vectorized(n):
        A[j] = T.int32(0)
    if i:
        B[0] = A[0]
def other(C: T.Buffer((16,), "float32")):
    C[0, 0] = C[0]
""")
    a, c, i, j, n = buffer("A", 16), buffer("C", 16), Var("i"), Var("j"), Var("n")
    b = buffer("B", 16)
    main = function(
        [a],
        seq(
            loop(
                i,
                n,
                BufferStore(a, IntImm(0, dt.INT32), (j,), span=text.at(3)),
                ForKind.VECTORIZED,
                span=text.at(2),
            ),
            IfThenElse(
                i,
                BufferStore(b, BufferLoad(a, (i32(0),)), (i32(0),), span=text.at(5)),
                span=text.at(4),
            ),
        ),
        span=text.at(1),
    )
    other = function(
        [c], BufferStore(c, BufferLoad(c, (i32(0),)), (i32(0), i32(0)), span=text.at(7))
    )
    found = verify_module(module(other, main))
    assert messages(found) == [
        "undefined variable 'n'",
        "undefined variable 'j'",
        "value stored into 'A' has type int32, the element it replaces float32",
        "variable 'i' is used outside the scope of its definition",
        "condition of if is int32, true when nonzero; compare it to 0",
        "undefined buffer 'B'",
        "'C' has 1 dimension but is indexed with 2 indices",
    ]
    assert lines(found) == [2, 3, 3, 4, 4, 5, 7]


def test_rules_are_named_as_in_the_documentation() -> None:
    assert list(RULES) == [
        "dialect",
        "scope",
        "aliasing",
        "blocks",
        "loops",
        "threads",
        "types",
        "calls",
        "accesses",
    ]


@settings(max_examples=200, deadline=None)
@given(modules())
def test_generated_programs_verify_clean(mod: IRModule) -> None:
    assert verify_module(mod) == []


def test_blocks_belong_to_s_tir() -> None:
    a, i, vi = buffer("A", 16), Var("i"), Var("vi")
    block = realize("B", [(spatial(vi, 16), i)], BufferStore(a, BufferLoad(a, (vi,)), (vi,)))
    assert messages(verify_module(module(function([a], loop(i, 16, block))))) == [
        "block 'B' in a function that is not s_tir; "
        "mark it @T.prim_func(s_tir=True) or lower its blocks"
    ]
    # TVM's lowering keeps the mark on functions it lowered: no root block is needed.
    lowered = PrimFunc((), (), loop(Var("j"), 4, Evaluate(i32(0))), is_s_tir=True)
    assert verify_module(module(lowered)) == []
