"""The guard that turns whatever a command raises into its exit status.

A user's mistake (DiagnosticError) is rendered and exits 1; anything else is a bug in tirc,
reported as such, with the Python trace only when asked for.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable

from tirc.diagnostics import DiagnosticError
from tirc.driver.exit_code import ExitCode


def run_guarded(action: Callable[[], int], *, show_traceback: bool) -> int:
    try:
        return action()
    except DiagnosticError as error:
        # deferred: rich, only when there is something to show
        from tirc.diagnostics.render import render

        render(error.diagnostics)
        return ExitCode.USER_ERROR
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        silence_stdout()
        return ExitCode.BROKEN_PIPE
    except Exception as error:
        report_internal_error(error, show_traceback=show_traceback)
        return ExitCode.INTERNAL_ERROR


def report_internal_error(error: BaseException, *, show_traceback: bool) -> None:
    if show_traceback:
        traceback.print_exception(error, file=sys.stderr)
    print(f"internal error: {type(error).__name__}: {error}", file=sys.stderr)
    if not show_traceback:
        print(
            "this is a bug in tirc; rerun with --traceback (or TIRC_TRACEBACK=1) to see the trace",
            file=sys.stderr,
        )


def silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
