"""Writing an output (a path, or `-` for stdout) all at once or not at all.

A regular file is written to a temporary file in its directory and renamed into place, so a
failed or interrupted run never leaves a half-written file for make to trust. With
`keep_identical`, a file that already holds exactly the output is left alone, timestamp and
all, so that what make builds from it is not rebuilt.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile

from tirc.diagnostics import DiagnosticError
from tirc.driver.source import describe

STDOUT = "-"
# What follows `.NAME.` in a temporary file's name: the writer's pid and mkstemp's letters.
TEMPORARY_TAIL = re.compile(r"(\d+)-[a-z0-9_]{8}\.tmp")


def write_output(path: str, data: str | bytes, *, keep_identical: bool = False) -> None:
    """Write `data` to `path` ('-': stdout) atomically; with `keep_identical`, leave an
    existing file that holds the same bytes untouched."""
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
        elif not (keep_identical and holds(target, payload)):
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


def holds(path: str, payload: bytes) -> bool:
    """Whether the regular file at `path` exists and holds exactly `payload`."""
    try:
        if os.path.getsize(path) != len(payload):
            return False
        with open(path, "rb") as file:
            return file.read() == payload
    except OSError:
        return False


def replace_atomically(path: str, payload: bytes) -> None:

    directory, name = os.path.split(path)
    remove_stale_temporaries(directory, name)
    # `.NAME.PID-XXXXXXXX.tmp`: hidden, never matching the output's own pattern, and naming
    # its writer, so that a later run can tell one a killed run left from one being written.
    prefix = f".{name}.{os.getpid()}-"
    descriptor, temporary = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(payload)
        os.chmod(temporary, 0o666 & ~current_umask())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def remove_stale_temporaries(directory: str, name: str) -> None:
    """Remove the temporary files of `name` whose writer is gone (a run killed while it
    wrote: SIGKILL runs no cleanup). Those of a live writer stay."""
    prefix = f".{name}."
    try:
        entries = [entry for entry in os.listdir(directory or ".") if entry.startswith(prefix)]
    except OSError:
        return
    for entry in entries:
        found = TEMPORARY_TAIL.fullmatch(entry[len(prefix) :])
        if found is None or is_running(int(found.group(1))):
            continue
        try:
            os.unlink(os.path.join(directory, entry))
        except OSError:
            pass  # another run removed it first, or the directory is not ours to clean


def is_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
