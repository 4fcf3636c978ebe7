"""Loading grammar/tir.lark: its LALR tables (shipped in tables.json, else computed by Lark),
run by the lexer and driver of this package.

The grammar ships inside the package (tirc/text/grammar links to the repository's grammar/);
a source checkout without the link falls back to the repository path.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tirc.text.syntax.driver import Driver
from tirc.text.syntax.lexer import Lexer, Terminal
from tirc.text.syntax.tables import grammar_path, load_tables
from tirc.text.syntax.transformer import SyntaxBuilder


@dataclass(frozen=True)
class Grammar:
    lexer: Lexer
    driver: Driver
    terminals: dict[str, Terminal]


@cache
def grammar() -> Grammar:
    tables = load_tables(grammar_path().read_text(encoding="utf-8"))
    terminals = [
        Terminal(name, pattern, is_string) for name, pattern, is_string in tables["terminals"]
    ]
    driver = Driver.from_tables(tables, SyntaxBuilder())
    return Grammar(Lexer(terminals), driver, {t.name: t for t in terminals})
