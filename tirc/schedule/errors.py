"""ScheduleError: a primitive's precondition failed; says which, and on which loops/blocks."""

from __future__ import annotations

from tirc.schedule.sref import SRef


class ScheduleError(Exception):
    """Raised by a primitive before it changes anything.

    `message` is the failed precondition in words a user understands; `subjects` are the
    loops and blocks it concerns, which the diagnostic points at in the printed program.
    """

    def __init__(self, message: str, *subjects: SRef, notes: tuple[str, ...] = ()):
        super().__init__(message)
        self.message = message
        self.subjects = subjects
        self.notes = notes
