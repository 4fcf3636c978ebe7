"""The generic Visitor / Mutator: dispatch on the nearest `visit_<Class>`, walk order, shared
unchanged subtrees, and visitor classes made per call being freed."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from tirc.ir import expr as E
from tirc.ir.buffer import Buffer
from tirc.ir.functor import Mutator, Visitor, walk
from tirc.ir.node import Node
from tirc.text import parse

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "matmul.tir"

X = E.Var("x", E.IntImm(0).dtype)
TREE = E.Add(E.Mul(X, E.IntImm(2)), E.IntImm(3))


def test_walk_visits_parents_before_children() -> None:
    seen: list[str] = []
    walk(TREE, lambda node: seen.append(type(node).__name__))
    assert seen == ["Add", "Mul", "Var", "IntImm", "IntImm"]


def test_walk_goes_as_a_visitor_goes() -> None:
    """The same nodes in the same order as a Visitor, over statements, tuples of indices and
    buffers; a buffer or variable is called on and not entered (its shape is not walked)."""
    module = parse(SAMPLE.read_text())

    class _Recorder(Visitor):
        def __init__(self) -> None:
            self.seen: list[object] = []

        def visit(self, node: object) -> None:
            if isinstance(node, Node):
                self.seen.append(node)
            super().visit(node)

    recorder = _Recorder()
    recorder.visit(module)
    walked: list[object] = []
    walk(module, walked.append)
    assert len(walked) == len(recorder.seen) > 100
    assert all(a is b for a, b in zip(walked, recorder.seen, strict=True))
    buffers = [node for node in walked if isinstance(node, Buffer)]
    assert buffers and not any(buffer.data in walked for buffer in buffers)


def test_dispatch_takes_the_nearest_base_method() -> None:
    class Binary(Visitor):
        def __init__(self) -> None:
            self.found: list[str] = []

        def visit_PrimExpr(self, node: E.PrimExpr) -> None:  # every expression class's base
            self.found.append(type(node).__name__)
            self.generic_visit(node)

        def visit_Mul(self, node: E.Mul) -> None:
            self.found.append("mul!")

    visitor = Binary()
    visitor.visit(TREE)
    assert visitor.found == ["Add", "mul!", "IntImm"]


def test_mutator_shares_what_it_does_not_change() -> None:
    class Threes(Mutator):
        def visit_IntImm(self, node: E.IntImm) -> E.PrimExpr:
            return E.IntImm(4) if node.value == 3 else node

    new = Threes().visit(TREE)
    assert new is not TREE and new.a is TREE.a and new.b.value == 4
    assert Threes().visit(TREE.a) is TREE.a


def test_a_visitor_class_made_per_call_is_freed() -> None:
    """Dispatch tables live on the visitor class: a global cache keyed by class kept every
    class defined inside a function (and so every call's class) alive for good."""
    refs = []
    for _ in range(3):

        class Local(Visitor):
            def visit_IntImm(self, node: E.IntImm) -> None:
                pass

        Local().visit(TREE)
        refs.append(weakref.ref(Local))
    del Local
    gc.collect()
    assert all(ref() is None for ref in refs)
