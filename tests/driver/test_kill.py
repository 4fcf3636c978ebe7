"""`tirc compile` killed with SIGKILL while it writes its output: the output path then holds
the previous complete file (or nothing, when there was none) or, when the kill came after
the rename, the new complete file; never a part of one. A temporary file a kill leaves is
hidden and named `.OUTPUT.PID-XXXXXXXX.tmp`, and the next write of the output removes it.

Writing a few kilobytes takes microseconds, too short for a kill to land in at random, so
the child slows its own writes down (it writes in small chunks with pauses, and pauses
before the rename) and says when it starts writing: every kill lands at a random moment
between the first byte and a little after the rename.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
# Two programs, so that the previous file and the new one differ.
PROGRAMS = tuple(
    ["compile", str(SAMPLES / f"{name}.tir"), "--plan", str(SAMPLES / f"{name}.cpu.plan.json")]
    for name in ("matmul", "elementwise")
)
SUFFIXES = {"ll": ".ll", "obj": ".o"}
CHUNKS = 20
CHUNK_PAUSE_S = 0.004
RENAME_PAUSE_S = 0.03
WRITE_WINDOW_S = CHUNKS * CHUNK_PAUSE_S + RENAME_PAUSE_S + 0.03  # a little past the rename
TEMPORARY = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)-[a-z0-9_]{8}\.tmp")

# The child: `tirc compile` itself, with its file writes slowed and announced on stderr.
SLOW_WRITER = f"""
import os, sys, time
from tirc.cli.main import main

real_fdopen, real_replace = os.fdopen, os.replace

class SlowFile:
    def __init__(self, file):
        self.file = file
    def __enter__(self):
        return self
    def __exit__(self, *problem):
        self.file.close()
    def write(self, data):
        sys.stderr.write("WRITING\\n")
        sys.stderr.flush()
        step = max(1, len(data) // {CHUNKS})
        for start in range(0, len(data), step):
            self.file.write(data[start:start + step])
            self.file.flush()
            time.sleep({CHUNK_PAUSE_S})
        return len(data)

def slow_fdopen(*args, **options):
    return SlowFile(real_fdopen(*args, **options))

def slow_replace(source, destination):
    time.sleep({RENAME_PAUSE_S})
    real_replace(source, destination)

os.fdopen, os.replace = slow_fdopen, slow_replace
sys.exit(main(sys.argv[1:]))
"""


def compile_command(program: int, output: Path, emit: str) -> list[str]:
    return [*PROGRAMS[program], "--target", "cpu", "--emit", emit, "-o", str(output)]


def compile_quietly(program: int, output: Path, emit: str) -> bytes:
    command = [sys.executable, "-m", "tirc", *compile_command(program, output, emit)]
    subprocess.run(command, check=True, cwd=ROOT, capture_output=True, timeout=300)
    return output.read_bytes()


def kill_while_writing(program: int, output: Path, emit: str, rng: random.Random) -> None:
    command = [sys.executable, "-c", SLOW_WRITER, *compile_command(program, output, emit)]
    child = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stderr is not None
        line = child.stderr.readline()  # blocks until the child starts writing (or exits)
        assert line == "WRITING\n", f"the child never wrote: {line!r}{child.stderr.read()}"
        time.sleep(rng.uniform(0, WRITE_WINDOW_S))
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=300)
        if child.stderr is not None:
            child.stderr.close()


def check_directory(directory: Path, output: Path, allowed: set[bytes]) -> tuple[bytes, int]:
    """The output's contents, which must be allowed (b"": no file), and how many temporary
    files lie beside it; anything else in the directory fails the test."""
    contents = output.read_bytes() if output.exists() else b""
    assert contents in allowed, f"{len(contents)} bytes: a partial file"
    strays = 0
    for name in os.listdir(directory):
        if name != output.name:
            found = TEMPORARY.fullmatch(name)
            assert found is not None and found.group("name") == output.name, name
            strays += 1
    return contents, strays


def run_kills(tmp_path: Path, count: int, emit: str, seed: int) -> dict[str, int]:
    """Kill `count` compiles in a row while they write; how the kills ended, counted."""
    suffix = SUFFIXES[emit]
    complete = [
        compile_quietly(index, tmp_path / f"complete{index}{suffix}", emit) for index in (0, 1)
    ]
    assert complete[0] != complete[1]
    directory = tmp_path / "build"
    directory.mkdir()
    output = directory / f"kernel{suffix}"
    rng = random.Random(seed)
    counts = {"before the rename": 0, "after the rename": 0}
    for attempt in range(count):
        program = attempt % 2
        previous = output.read_bytes() if output.exists() else b""  # b"": nothing yet
        kill_while_writing(program, output, emit, rng)
        contents, strays = check_directory(directory, output, {previous, complete[program]})
        # A kill before the rename leaves the temporary (the next write removes it) and the
        # previous file exactly as it was.
        counts["before the rename" if strays else "after the rename"] += 1
        assert not strays or contents == previous
        assert strays <= 1, "a later run leaves an earlier run's temporary file"
    # The next complete run writes its output and removes what the killed ones left.
    assert compile_quietly(0, output, emit) == complete[0]
    assert os.listdir(directory) == [output.name]
    return counts


def test_a_killed_compile_leaves_the_old_file_or_the_new_one(tmp_path: Path) -> None:
    run_kills(tmp_path, 5, "ll", seed=0)


@pytest.mark.sweep  # the README's tests kill five
def test_fifty_kills_in_a_row(tmp_path: Path) -> None:
    counts = run_kills(tmp_path, 50, "obj", seed=1)
    # The kills did land while writing (most before the rename).
    assert counts["before the rename"] >= 10, counts


def test_the_next_write_removes_only_the_temporaries_of_dead_writers(tmp_path: Path) -> None:
    from tirc.driver.output import write_output

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    stale = tmp_path / f".k.o.{dead}-abcdefgh.tmp"
    live = tmp_path / f".k.o.{os.getppid()}-abcdefgh.tmp"  # a writer still running
    other = tmp_path / f".k.o.1.{dead}-abcdefgh.tmp"  # the temporary of an output "k.o.1"
    for path in (stale, live, other):
        path.write_bytes(b"partial")
    write_output(str(tmp_path / "k.o"), b"\x7fELF")
    assert sorted(os.listdir(tmp_path)) == sorted(["k.o", live.name, other.name])
