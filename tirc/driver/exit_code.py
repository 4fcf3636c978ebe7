"""The exit statuses of the `tirc` command (DESIGN §7), kept import-light for start-up."""

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    USER_ERROR = 1  # a diagnosed mistake in the input or the options
    USAGE = 2  # bad command line, reported by click
    INTERNAL_ERROR = 3  # a bug in tirc
    INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
    BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports `tirc print x | head`
