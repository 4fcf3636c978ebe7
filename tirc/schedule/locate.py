"""Where a loop or block is in program text, for the notes of a schedule diagnostic.

A node that came from the parser has a span: a loop's is narrowed to its name in the `for`
line, a block's is `T.sblock("C")`. A node an earlier primitive built has none; it is then
found in the program as printed before the failing step, by its place among same-named
loops (the printer keeps program order) or by its block name (unique in a function).
"""

from __future__ import annotations

import re

from tirc.diagnostics import Source, Span
from tirc.ir.stmt import For, SBlock
from tirc.schedule.sref import SRef
from tirc.schedule.state import ScheduleState, children

_FOR_HEADER = re.compile(r"^[ \t]*for (?P<targets>[^:\n]*?) in ", re.MULTILINE)


def parsed_span(sref: SRef) -> Span | None:
    """The span the parser gave the loop or block, narrowed to the loop's name; None when
    the span no longer shows this loop or block (a rewrite kept an older node's span)."""
    stmt = sref.stmt
    span = getattr(stmt, "span", None)
    if span is None:
        return None
    if isinstance(stmt, For):
        return _name_in_header(span.source, span.start, stmt.loop_var.name)
    if isinstance(stmt, SBlock) and f'"{stmt.name}"' in span.source.text[span.start : span.end]:
        return span
    return None


def printed_span(sref: SRef, state: ScheduleState, printed: Source) -> Span | None:
    """The loop's name or the block's `T.sblock(...)` in `printed`, the printed module."""
    stmt = sref.stmt
    text = printed.text
    start = text.find(f"def {state.func_name}(")
    if start < 0:
        return None
    if isinstance(stmt, SBlock):
        needle = f'T.sblock("{stmt.name}")'
        at = text.find(needle, start)
        return Span(printed, at, at + len(needle)) if at >= 0 else None
    if not isinstance(stmt, For):
        return None
    name = stmt.loop_var.name
    ordinal = _ordinal(state, stmt)
    for match in _FOR_HEADER.finditer(text, start):
        targets = [t.strip() for t in match.group("targets").split(",")]
        if name not in targets:
            continue
        if ordinal == 0:
            return _name_in_header(printed, match.start(), name)
        ordinal -= 1
    return None


def _ordinal(state: ScheduleState, target: For) -> int:
    """How many loops named like `target` come before it in program order."""
    count = 0
    pending: list[object] = [state.root.stmt]
    while pending:
        node = pending.pop()
        if node is target:
            return count
        if isinstance(node, For) and node.loop_var.name == target.loop_var.name:
            count += 1
        pending.extend(reversed(children(node)))
    return count


def _name_in_header(source: Source, start: int, name: str) -> Span | None:
    """The loop variable `name` among the targets of the `for` line starting at `start`."""
    end = source.text.find("\n", start)
    line = source.text[start : end if end >= 0 else len(source.text)]
    header = line.split(" in ", 1)[0]
    match = re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", header)
    if match is None:
        return None
    return Span(source, start + match.start(), start + match.end())
