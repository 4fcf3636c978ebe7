"""The root of every IR class: an immutable record with a source span that equality ignores.

Nodes compare and hash by identity (`eq=False`); structural comparison, which treats bound
variables up to renaming, lives in `tirc.ir.structural` and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tirc.diagnostics.span import Span


class IRError(ValueError):
    """An IR invariant violated at construction; the parser turns it into a located error."""


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    span: Span | None = field(default=None, kw_only=True, repr=False, compare=False)
