"""How `tirc diff` shows the first structural difference: where it is in both files (the
nearest enclosing node with a span), and what each side has there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Note, Span

if TYPE_CHECKING:
    from tirc.ir.structural import Difference

FRAGMENT_LIMIT = 80


def difference_diagnostic(difference: Difference, left_name: str, right_name: str) -> Diagnostic:
    message = f"modules differ at {difference.path or 'the top'}"
    if difference.message:
        message += f": {difference.message}"
    return Diagnostic.error(
        message,
        None,
        side_note(left_name, difference.lhs, difference.lhs_span),
        side_note(right_name, difference.rhs, difference.rhs_span),
    )


def side_note(name: str, value: object, span: Span | None) -> Note:
    where = "" if span is not None else " (no source location)"
    return Note(f"{name} has `{fragment(value)}`{where}", span)


def fragment(value: object) -> str:
    """Value as it reads in its source where it has a span, else as printed; one line at most."""
    if not hasattr(value, "span"):  # a plain value: a name, a number, a dtype
        text = repr(value) if isinstance(value, str) else str(value)
    elif isinstance(value.span, Span):
        text = value.span.source.text[value.span.start : value.span.end].strip()
    else:
        from tirc.text import script

        text = script(value)
    first, _, rest = text.partition("\n")
    if rest or len(first) > FRAGMENT_LIMIT:
        first = first[: FRAGMENT_LIMIT - 3].rstrip() + "..."
    return first
