"""How `tirc diff` shows the first structural difference: where it is in both files (the
nearest enclosing node with a span), and what each side has there.

Differing is the command's ordinary outcome, not an error: the report carries no `error:`
label, and the exit status (1) says the rest."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tirc.diagnostics import Diagnostic, Note, Severity, Span
from tirc.text import script

if TYPE_CHECKING:
    from tirc.ir.structural import Difference

FRAGMENT_LIMIT = 80


def difference_report(difference: Difference, left_name: str, right_name: str) -> Diagnostic:
    """The report, as a diagnostic to render without its label (`render(..., label=False)`)."""
    message = f"{left_name} and {right_name} differ at {difference.path or 'the top'}"
    if difference.message:
        message += f": {difference.message}"
    return Diagnostic(
        Severity.NOTE,
        message,
        None,
        (
            side_note(left_name, difference.lhs, difference.lhs_span),
            side_note(right_name, difference.rhs, difference.rhs_span),
        ),
    )


def side_note(name: str, value: object, span: Span | None) -> Note:
    where = "" if span is not None else " (no source location)"
    return Note(f"{name} has `{fragment(value)}`{where}", span)


def fragment(value: object) -> str:
    """Value as it reads in its source where it has a span, else as printed; one line at most."""
    first, _, rest = text_of(value).partition("\n")
    if rest or len(first) > FRAGMENT_LIMIT:
        first = first[: FRAGMENT_LIMIT - 3].rstrip() + "..."
    return first


def text_of(value: object) -> str:
    if isinstance(value, (tuple, list)):  # printed item by item: their spans may be shared
        inner = ", ".join(printed(item) for item in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else f"({inner})"
    if hasattr(value, "span") and isinstance(value.span, Span):
        return value.span.source.text[value.span.start : value.span.end].strip()
    return printed(value)


def printed(value: object) -> str:
    if not hasattr(value, "span"):  # a plain value: a name, a number, a dtype
        return repr(value) if isinstance(value, str) else str(value)

    return script(value)
