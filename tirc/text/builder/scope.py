"""Lexical scopes: what each name means where it is used.

A Scope maps names to values and falls back to its parent; bodies of `for`, `with` and
`if` open child scopes, as TVMScript's var table does, so a name bound inside a loop is
not visible after it. Macros evaluate in a child of the scope they were defined in.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class Scope:
    __slots__ = ("names", "parent")

    def __init__(self, parent: Scope | None = None, names: dict[str, Any] | None = None):
        self.parent = parent
        self.names: dict[str, Any] = names if names is not None else {}

    def child(self) -> Scope:
        return Scope(self)

    def lookup(self, name: str) -> Any:
        """The value of `name`; raises KeyError when no enclosing scope binds it."""
        scope: Scope | None = self
        while scope is not None:
            names = scope.names
            if name in names:
                return names[name]
            scope = scope.parent
        raise KeyError(name)

    def contains(self, name: str) -> bool:
        try:
            self.lookup(name)
        except KeyError:
            return False
        return True

    def bind(self, name: str, value: Any) -> None:
        self.names[name] = value

    def visible_names(self) -> Iterator[str]:
        scope: Scope | None = self
        while scope is not None:
            yield from scope.names
            scope = scope.parent

    def suggest(self, name: str) -> str | None:
        """The visible name closest to a misspelled one, if any is close."""
        return nearest(name, self.visible_names())


def nearest(name: str, candidates: Iterator[str] | list[str]) -> str | None:
    import difflib  # deferred: start-up; only a misspelled name pays for it

    matches = difflib.get_close_matches(name, list(dict.fromkeys(candidates)), n=1, cutoff=0.6)
    return matches[0] if matches else None
