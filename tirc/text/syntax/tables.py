"""The parse tables of grammar/tir.lark, computed by Lark and shipped as tables.json.

A run reads tables.json (no Lark import, no grammar analysis) when the grammar text recorded
in it is the grammar's; otherwise it computes the tables with Lark, so an edited grammar still
works, only slower. (The whole text, not a hash of it: hashlib costs more to import than the
comparison.) `python -m tirc.text.syntax.tables` rewrites the file after a grammar
change; tests/text/test_parse_speed.py checks that the shipped file is current.

The file holds what the lexer and driver run and nothing of Lark's: the terminals, each
rule's shape (which children its callback receives) and the LALR states, numbered in a
canonical order so that the file does not depend on the hash seed Lark ran under.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TABLES_PATH = Path(__file__).with_name("tables.json")
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


FORMAT = 1

# The file's layout (all JSON):
#   terminals: [name, pattern, is_string]   (is_string: a literal, not a regular expression)
#   rules:     [origin, callback, size, expand_single, include, append_none]
#              callback: the SyntaxBuilder method (the alias, else the rule's name);
#              expand_single: a `?rule`, whose one child stands for it;
#              include: [[index, splice, nones_before], ...] the children kept, a spliced
#              `_rule`'s children inlined, None placeholders for absent `[optional]` parts;
#              null when the callback receives the children as they are.
#   states:    [{symbol: action}], action >= 0 shifts to (or, for a rule, goes to) that
#              state, action < 0 reduces by rule ~action.
Tables = dict[str, Any]


def load_tables(grammar_text: str) -> Tables:
    """The shipped tables when they were computed from `grammar_text`, else fresh ones."""
    try:
        tables: Tables = json.loads(TABLES_PATH.read_bytes())
    except (OSError, ValueError):
        tables = {}
    if tables.get("format") == FORMAT and tables.get("grammar") == grammar_text:
        return tables
    return compute_tables(grammar_text)


def compute_tables(grammar_text: str) -> Tables:
    """The tables Lark computes for `grammar_text` (cached by Lark on disk)."""
    # deferred: lark (and its logging) loads only to compute tables for an edited grammar
    import logging

    from lark import Lark, logger
    from lark.parse_tree_builder import maybe_create_child_filter
    from lark.parsers.lalr_analysis import Shift

    logger.setLevel(logging.CRITICAL)  # a cache that cannot be written is not worth a warning
    lark: Any = Lark(
        grammar_text,
        parser="lalr",
        lexer="basic",
        maybe_placeholders=True,
        propagate_positions=False,
        cache=True,
    )
    table = lark.parser.parser.parser.parse_table
    start = table.start_states["start"]

    # Number states in the order a walk from the start state, by sorted symbols, meets them.
    order = [start]
    number = {start: 0}
    for state in order:
        for symbol in sorted(table.states[state]):
            action, target = table.states[state][symbol]
            if action is Shift and target not in number:
                number[target] = len(order)
                order.append(target)
    assert len(order) == len(table.states), "a state is unreachable from the start"

    rules: list[list[Any]] = []
    rule_number: dict[int, int] = {}
    states: list[dict[str, int]] = []
    for state in order:
        row: dict[str, int] = {}
        for symbol in sorted(table.states[state]):
            action, argument = table.states[state][symbol]
            if action is Shift:
                row[symbol] = number[argument]
                continue
            if id(argument) not in rule_number:
                rule_number[id(argument)] = len(rules)
                rules.append(rule_shape(argument, maybe_create_child_filter))
            row[symbol] = ~rule_number[id(argument)]
        states.append(row)

    terminals = sorted([t.name, t.pattern.value, t.pattern.type == "str"] for t in lark.terminals)
    return {
        "format": FORMAT,
        "grammar": grammar_text,
        "start": 0,
        "end": number[table.end_states["start"]],
        "terminals": terminals,
        "rules": rules,
        "states": states,
    }


def rule_shape(rule: Any, make_child_filter: Any) -> list[Any]:
    """[origin, callback, size, expand_single, include, append_none] of a Lark rule, with
    the child filter Lark itself would wrap the callback in (maybe_placeholders=True)."""
    options = rule.options
    size = len(rule.expansion)
    child_filter = make_child_filter(
        rule.expansion, options.keep_all_tokens, False, options.empty_indices
    )
    include: list[list[Any]] | None = None
    append_none = 0
    if child_filter is not None:
        arguments = child_filter.args
        if len(arguments) == 2:  # ChildFilterLALR(to_include, append_none)
            include = [[i, bool(splice), nones] for i, splice, nones in arguments[0]]
            append_none = arguments[1]
        else:  # ChildFilterLALR_NoPlaceholders(to_include)
            include = [[i, bool(splice), 0] for i, splice in arguments[0]]
    if include == [[i, False, 0] for i in range(size)] and append_none == 0:
        include = None  # the children as they are
    callback = rule.alias or options.template_source or rule.origin.name
    expand_single = bool(options.expand1) and not rule.alias
    return [rule.origin.name, callback, size, expand_single, include, append_none]


def write_tables(tables: Tables, path: Path = TABLES_PATH) -> None:
    """One terminal, rule or state a line, so that a grammar change shows as a small diff."""
    lines = ["{"]
    for key in ("format", "start", "end", "grammar"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(tables[key])},")
    for key in ("terminals", "rules", "states"):
        items = [f"    {json.dumps(item, ensure_ascii=False)}" for item in tables[key]]
        closing = "]" if key == "states" else "],"
        lines += [f"  {json.dumps(key)}: [", ",\n".join(items), f"  {closing}"]
    lines.append("}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    write_tables(compute_tables(grammar_path().read_text(encoding="utf-8")))
    print(f"wrote {TABLES_PATH}")


if __name__ == "__main__":
    main()
