"""What a long measurement shows while it works (`tirc run --bench`,
benchmarks/bench_kernels.py): one transient line on standard error, a spinner, the stage and,
where the stage knows how far it is, a bar.

Shown only when standard error is a terminal (and TERM is not `dumb`), and erased when done:
a pipe, a file or a CI log gets the results and nothing else, byte for byte.

    with meter_for(sys.stderr) as meter:     # Meter(None) where stderr is not a terminal
        meter.stage("compiling main")
        meter.stage("timing main", total=1.0)
        meter.update(0.5)                    # half-way: [━━━━━╸     ]  50%
        meter.describe("timing main again")  # the bar as it is
        meter.print("a result line")         # to stdout, the display out of its way
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

REFRESHES_PER_SECOND = 4  # a repaint holds the GIL; rarely enough to leave timings alone


class Meter:
    """A transient progress line on `console`, or nothing at all when `console` is None."""

    def __init__(self, console: Console | None, total: float | None = None) -> None:
        self.console = console
        self._total = total
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    @property
    def shown(self) -> bool:
        return self.console is not None

    def __enter__(self) -> Meter:
        if self.console is None:
            return self
        from rich.progress import (  # deferred: rich, only when a progress bar shows
            BarColumn,
            Progress,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
            refresh_per_second=REFRESHES_PER_SECOND,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._task = self._progress.add_task("", total=self._total)
        self._progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def stage(self, text: str, total: float | None = None) -> None:
        """Shows `text`; with `total` a bar to fill with `update`, without one a pulse."""
        if self._progress is not None and self._task is not None:
            self._progress.reset(self._task, total=total, description=text)

    def describe(self, text: str) -> None:
        """Shows `text`, the bar as it is (a stage of a run measured as a whole)."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, description=text)

    def update(self, completed: float) -> None:
        """How far the stage is, out of its `total`."""
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=completed)

    def advance(self, steps: float = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, steps)

    def print(self, text: str, file: TextIO | None = None) -> None:
        """`print(text)` to `file` (stdout), the display erased first and redrawn after, so
        that the text is exactly what it would be without a display."""
        progress = self._progress
        if progress is not None:
            progress.stop()
        print(text, file=file or sys.stdout, flush=True)
        if progress is not None:
            progress.start()


def terminal_console(stream: TextIO) -> Console | None:
    """A rich console on `stream` when it is a terminal that can redraw a line, else None.
    Asks the stream itself: FORCE_COLOR in a CI log does not make a log a terminal."""
    isatty = getattr(stream, "isatty", None)
    try:
        if isatty is None or not isatty():
            return None
    except ValueError:  # a closed stream
        return None
    if os.environ.get("TERM") == "dumb":
        return None
    from rich.console import Console  # deferred: rich, only when a progress bar shows

    return Console(file=stream)


def meter_for(stream: TextIO | None = None, total: float | None = None) -> Meter:
    """A Meter on `stream` (default stderr) where it is a terminal, else one that shows
    nothing."""
    return Meter(terminal_console(stream if stream is not None else sys.stderr), total)
