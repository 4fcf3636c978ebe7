"""The parser's shortcuts give what the long way gives: the driver's cache of gotos and
`?rule: item` reduction chains, Signature.bind's all-positional path, and contains_block's
early stop."""

from __future__ import annotations

from pathlib import Path

from tirc.diagnostics import Source
from tirc.ir.structural import find_difference
from tirc.text import parse, print_module
from tirc.text.builder import build_module
from tirc.text.builder.function import contains_block
from tirc.text.syntax.driver import Driver
from tirc.text.syntax.grammar import grammar
from tirc.text.syntax.lexer import LexState
from tirc.text.syntax.tables import grammar_path, load_tables
from tirc.text.syntax.transformer import SyntaxBuilder

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

LOWERED = """# from tvm.script import tirx as T

@T.prim_func
def f(A: T.Buffer((64,), "float32"), n: T.int32):
    for i in range(64):
        A[i] = T.Select(i < n, T.Cast("float32", i * 2 + n // 3), T.float32(0.0))
"""


def test_goto_cache_gives_the_tree_of_a_fresh_driver() -> None:
    text = (SAMPLES / "conv2d.tir").read_text()
    source = Source("conv2d.tir", text)
    fresh = Driver.from_tables(load_tables(grammar_path().read_text()), SyntaxBuilder())
    assert fresh.gotos == {}
    rules = grammar()
    cold = build_module(fresh.parse(rules.lexer.tokens(text, LexState([]))), source, None)
    # expressions went through the chains of `?rule: item` reductions
    states = fresh.states
    assert any(top != states[below][origin] for (below, origin, _), top in fresh.gotos.items())
    warm = build_module(fresh.parse(rules.lexer.tokens(text, LexState([]))), source, None)
    assert find_difference(cold, warm) is None
    assert print_module(cold) == print_module(warm) == print_module(parse(text))


def test_positional_builtins_bind_by_name() -> None:
    module = parse(LOWERED)
    assert 'T.Select(i < n, T.Cast("float32", i * 2 + n // 3), T.float32(0.0))' in (
        print_module(module)
    )
    assert find_difference(module, parse(print_module(module))) is None


def test_contains_block_finds_a_nested_block_and_skips_expressions() -> None:
    with_block = parse((SAMPLES / "matmul.tir").read_text())
    without = parse(LOWERED)
    assert contains_block(with_block.functions[0][1].body)
    assert not contains_block(without.functions[0][1].body)


def test_structural_comparison_still_reports_plain_field_differences() -> None:
    base = parse(LOWERED)
    for old, new, message, path in (
        ("i * 2", "i * 3", "2 vs 3", "f.body"),
        ("T.float32(0.0)", "T.float32(1.0)", "constants differ", "f.body"),
        ("n: T.int32", "n: T.int64", "int32 vs int64", "f.params[1]"),
    ):
        difference = find_difference(base, parse(LOWERED.replace(old, new)))
        assert difference is not None
        assert message in difference.message
        assert difference.path.startswith(path)
