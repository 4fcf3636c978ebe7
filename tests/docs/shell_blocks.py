"""Shell commands in the Markdown documents: ```sh blocks (one command a line) and ```console
blocks (commands after `$ `, the rest is output). A command ending in `# exits N` is meant to
exit with N; every other one must exit 0."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^```(\w*)\s*$")
EXITS = re.compile(r"#\s*exits\s+(\d+)\s*$")


@dataclass(frozen=True)
class Command:
    document: str
    line: int  # 1-based, in the document
    text: str
    exit_status: int


def commands_of(path: Path, root: Path) -> list[Command]:
    """The commands of every sh/console block of the document, in order."""
    found: list[Command] = []
    language: str | None = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fence = FENCE.match(line)
        if fence:
            language = None if language is not None else fence.group(1)
            continue
        if language == "sh":
            text = line.strip()
        elif language == "console" and line.startswith("$ "):
            text = line[2:].strip()
        else:
            continue
        if not text or text.startswith("#"):
            continue
        marked = EXITS.search(text)
        status = int(marked.group(1)) if marked else 0
        name = str(path.relative_to(root))
        found.append(Command(name, number, text, status))
    return found
