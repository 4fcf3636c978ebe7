"""Removes assignments of pure values that nothing reads: block iteration variables the body
does not use, and partial sums hoisted for them. Pure values cannot fail, so dropping one
changes no result and no error; the line becomes `pass` so that line numbers stay put."""

from __future__ import annotations

import re
from collections import Counter

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_ASSIGNMENT = re.compile(r"^(\s*)([A-Za-z_][A-Za-z_0-9]*) = (.*)$")


def remove_unread(lines: list[str], removable: set[str]) -> None:
    """Replaces `name = value` by `pass` for each removable name read nowhere else."""
    counts = Counter(name for line in lines for name in _IDENTIFIER.findall(line))
    changed = True
    while changed:
        changed = False
        for index, line in enumerate(lines):
            match = _ASSIGNMENT.match(line)
            if match is None or match.group(2) not in removable or counts[match.group(2)] != 1:
                continue
            counts[match.group(2)] -= 1
            for name in _IDENTIFIER.findall(match.group(3)):
                counts[name] -= 1
            lines[index] = match.group(1) + "pass"
            changed = True
