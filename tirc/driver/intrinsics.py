"""`tirc intrinsics`: list the tensor intrinsics tensorize knows, one per line with a summary;
with --intrinsics FILE.json, the user's too (marked, and winning on a name clash)."""

from __future__ import annotations

import sys

from tirc.driver.exit_code import ExitCode
from tirc.driver.schedule import read_intrinsics
from tirc.driver.source import read_source


def list_intrinsics(intrinsics: str | None = None) -> int:
    # deferred: the schedule layer, only to list intrinsics
    from tirc.schedule.intrinsics import builtin_intrinsics

    rows = {name: (entry.summary, "") for name, entry in builtin_intrinsics().items()}
    if intrinsics is not None:
        for name in read_intrinsics(read_source(intrinsics)):
            rows[name] = ("", f"(from {intrinsics})")
    width = max((len(name) for name in rows), default=0)
    lines = []
    for name, (summary, origin) in rows.items():
        text = " ".join(part for part in (summary, origin) if part)
        lines.append(f"{name:<{width}}  {text}".rstrip())
    sys.stdout.write("\n".join(lines) + "\n")
    return ExitCode.OK
