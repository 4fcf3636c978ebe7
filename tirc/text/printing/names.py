"""Printed names: unique among those visible at one point, freed when their scope closes.
A clash gets `_1`, `_2`, ... (`i_1` meeting a live `i_1` becomes `i_1_1`), as in TVM;
`T` and `I` belong to the module aliases."""

from __future__ import annotations

import re
from functools import lru_cache

RESERVED = ("T", "I")
_INVALID = re.compile(r"[^A-Za-z0-9_]")


@lru_cache(maxsize=4096)
def sanitize(hint: str) -> str:
    """An identifier from a name hint: each byte of a foreign character becomes `_`."""
    if not hint:
        return "v"
    if _INVALID.search(hint) is None:
        return hint
    return _INVALID.sub(lambda match: "_" * len(match.group().encode()), hint)


class NameTable:
    """Maps IR objects (by identity) to their printed text, scope by scope."""

    def __init__(self) -> None:
        self._text: dict[object, str] = {}
        self._live: set[str] = set(RESERVED)
        # per open scope: each object it defined, the live name it holds (if any), and the
        # text it had before (a malformed program may bind one variable twice)
        self._scopes: list[list[tuple[object, str | None, str | None]]] = [[]]

    def get(self, obj: object) -> str | None:
        return self._text.get(obj)

    def __contains__(self, obj: object) -> bool:
        return obj in self._text

    def define(self, obj: object, hint: str) -> str:
        """Give `obj` a fresh name based on `hint`, live until the current scope closes.

        An object that already has a name keeps it: in a malformed program a variable can
        be used before the loop that binds it, and TVM then prints both as one name."""
        known = self._text.get(obj)
        if known is not None:
            return known
        base = sanitize(hint)
        name = base
        index = 1
        live = self._live
        while name in live:
            name = f"{base}_{index}"
            index += 1
        live.add(name)
        self._scopes[-1].append((obj, name, self._text.get(obj)))
        self._text[obj] = name
        return name

    def alias(self, obj: object, text: str) -> None:
        """Print `obj` as `text` (such as `A.data`) without taking a name."""
        self._scopes[-1].append((obj, None, self._text.get(obj)))
        self._text[obj] = text

    def is_live(self, name: str) -> bool:
        return name in self._live

    def push(self) -> None:
        self._scopes.append([])

    def pop(self) -> None:
        for obj, name, previous in reversed(self._scopes.pop()):
            if name is not None:
                self._live.discard(name)
            if previous is None:
                self._text.pop(obj, None)
            else:
                self._text[obj] = previous
