"""Loading grammar/tir.lark: its LALR tables (shipped in tables.json, else computed by Lark),
run by the lexer and driver of this package.

The grammar ships inside the package (tirc/text/grammar links to the repository's grammar/);
a source checkout without the link falls back to the repository path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

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
    from tirc.text.syntax.tables import load_tables
    from tirc.text.syntax.transformer import SyntaxBuilder

    tables = load_tables(grammar_path().read_text(encoding="utf-8"))
    terminals = [
        Terminal(name, pattern, is_string) for name, pattern, is_string in tables["terminals"]
    ]
    driver = Driver.from_tables(tables, SyntaxBuilder())
    return Grammar(Lexer(terminals), driver, {t.name: t for t in terminals})
