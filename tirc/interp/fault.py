"""A run-time error of the interpreted program, raised by generated code and its helpers.

Generated code knows where it is only as a site number; the runner maps sites back to the
IR node (and so the source span) that the error belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass

from tirc.diagnostics.span import Span
from tirc.ir.buffer import Buffer
from tirc.ir.expr import IntImm


class Fault(Exception):
    """The program did something undefined (out-of-bounds access, division by zero, a race)."""

    def __init__(self, site: int, message: str, notes: tuple[tuple[int, str], ...] = ()):
        super().__init__(message)
        self.site = site
        self.message = message
        self.notes = notes  # (site, message) pairs: other places the error involves


@dataclass(frozen=True, slots=True)
class Site:
    """A place in the program that can fail at run time: its span and a short description."""

    span: Span | None
    what: str
    is_access: bool = False  # a buffer access: its faults are out-of-bounds indices


def describe_access(verb: str, buffer: Buffer) -> str:
    """What an access site does, as both models name it: `load from A (shape (4, n))`."""
    dims = [
        str(d.value) if isinstance(d, IntImm) else getattr(d, "name", "?") for d in buffer.shape
    ]
    return f"{verb} {buffer.name} (shape ({', '.join(dims)}{',' if len(dims) == 1 else ''}))"


def thread_name(thread: tuple[int, int, int], block: tuple[int, int, int]) -> str:
    """A GPU thread as both models name it in a fault: `thread (1, 0, 0) of block (2, 0, 0)`."""
    return f"thread {thread} of block {block}"


def fault_in(fault: Fault, where: str) -> Fault:
    """The fault, saying where it happened: `... (in thread (1, 0, 0) of block (2, 0, 0))`."""
    return Fault(fault.site, f"{fault.message} (in {where})", fault.notes)


def index_outside(index: object, extent: object, dim: int) -> str:
    """An out-of-bounds index, as both models say it."""
    return f"index {index} is outside [0, {extent}) in dimension {dim}"
