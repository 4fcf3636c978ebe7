"""Shrinking a failing input to a small one that fails the same way (same signature): whole
lines first, then runs of characters; `python -m tests.fuzz --minimize FILE` prints it."""

from __future__ import annotations

from collections.abc import Callable

from tests.fuzz.harness import run_input


def same_failure(text: str, lower: bool = True) -> Callable[[str], bool]:
    wanted = run_input(text, lower=lower).signature()
    return lambda candidate: run_input(candidate, lower=lower).signature() == wanted


def minimize(text: str, is_interesting: Callable[[str], bool]) -> str:
    """A 1-minimal-ish reduction of `text`: no single line or run removed keeps it failing."""
    text = shrink(text, is_interesting, lambda t: t.split("\n"), "\n")
    return shrink(text, is_interesting, lambda t: list(t), "")


def shrink(
    text: str, is_interesting: Callable[[str], bool], split: Callable[[str], list[str]], join: str
) -> str:
    parts = split(text)
    chunk = max(1, len(parts) // 2)
    while chunk >= 1:
        index = 0
        changed = False
        while index < len(parts):
            candidate = parts[:index] + parts[index + chunk :]
            if candidate and is_interesting(join.join(candidate)):
                parts = candidate
                changed = True
            else:
                index += chunk
        if not changed:
            chunk //= 2
    return join.join(parts)
