"""Loading grammar/tir.lark: Lark computes the LALR tables once (cached on disk), and the
lexer and driver of this package run them.

The grammar ships inside the package (tirc/text/grammar links to the repository's grammar/);
a source checkout without the link falls back to the repository path. Lark keeps the analyzed
tables in a cache file in the temporary directory; if that is not writable it rebuilds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tirc.text.syntax.driver import Driver
from tirc.text.syntax.lexer import Lexer, Terminal

GRAMMAR_NAME = "tir.lark"


def grammar_path() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (
        here.parent / "grammar" / GRAMMAR_NAME,  # tirc/text/grammar -> ../../grammar
        here.parents[2] / "grammar" / GRAMMAR_NAME,  # the repository's grammar/
    ):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"cannot find the grammar file {GRAMMAR_NAME}")


@dataclass(frozen=True)
class Grammar:
    lexer: Lexer
    driver: Driver
    terminals: dict[str, Terminal]


@cache
def grammar() -> Grammar:
    import logging

    from lark import Lark, logger

    from tirc.text.syntax.transformer import SyntaxBuilder

    logger.setLevel(logging.CRITICAL)  # a cache that cannot be written is not worth a warning
    lark: Any = Lark(
        grammar_path().read_text(encoding="utf-8"),
        parser="lalr",
        lexer="basic",
        transformer=SyntaxBuilder(),
        maybe_placeholders=True,
        propagate_positions=False,
        cache=True,
    )
    terminals = [Terminal(t.name, t.pattern.value, t.pattern.type == "str") for t in lark.terminals]
    return Grammar(Lexer(terminals), Driver.from_lark(lark), {t.name: t for t in terminals})
