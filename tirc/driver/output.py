"""Writing an output (a path, or `-` for stdout) all at once or not at all.

A regular file is written to a temporary file in its directory and renamed into place, so a
failed or interrupted run never leaves a half-written file for make to trust.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from tirc.diagnostics import DiagnosticError
from tirc.driver.source import describe

STDOUT = "-"


def write_output(path: str, data: str | bytes) -> None:
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if path == STDOUT:
        sys.stdout.flush()
        sys.stdout.buffer.write(payload)
        sys.stdout.buffer.flush()
        return
    target = os.path.realpath(path)
    try:
        if is_special_file(target):
            # /dev/null, a fifo: renaming onto it would replace it, so write through.
            with open(target, "wb") as file:
                file.write(payload)
        else:
            replace_atomically(target, payload)
    except OSError as error:
        raise DiagnosticError.at(None, f"cannot write '{path}': {describe(error)}") from None


def is_special_file(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    return not stat.S_ISREG(mode)


def replace_atomically(path: str, payload: bytes) -> None:
    import tempfile

    directory, name = os.path.split(path)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(payload)
        os.chmod(temporary, 0o666 & ~current_umask())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
