"""Atomic output: a file is replaced whole or not at all, and no temporary file stays behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.driver import output
from tirc.driver.output import is_special_file, write_output


def test_writes_a_new_file_byte_for_byte(tmp_path: Path) -> None:
    target = tmp_path / "out.tir"
    write_output(str(target), "a\nü\n")
    assert target.read_bytes() == "a\nü\n".encode()
    assert os.listdir(tmp_path) == ["out.tir"]


def test_replaces_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "out.o"
    target.write_bytes(b"old contents, longer than the new")
    write_output(str(target), b"\x00new")
    assert target.read_bytes() == b"\x00new"
    assert os.listdir(tmp_path) == ["out.o"]


def test_new_file_mode_follows_the_umask(tmp_path: Path) -> None:
    mask = os.umask(0o027)
    try:
        write_output(str(tmp_path / "out"), "x")
    finally:
        os.umask(mask)
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o640


def test_a_failed_rename_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.tir"
    target.write_text("old")

    def fail(source: str, destination: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output.os, "replace", fail)
    with pytest.raises(DiagnosticError, match="cannot write '.*out.tir': no space left on device"):
        write_output(str(target), "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.tir"]


def test_an_interrupted_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(path: str, mode: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(output.os, "chmod", interrupt)
    with pytest.raises(KeyboardInterrupt):
        write_output(str(tmp_path / "out.tir"), "new")
    assert os.listdir(tmp_path) == []


def test_missing_directory_is_a_diagnosed_error(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError, match="cannot write .*: no such file or directory"):
        write_output(str(tmp_path / "missing" / "out.tir"), "x")


def test_a_directory_as_output_is_a_diagnosed_error(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError, match="cannot write .*: is a directory"):
        write_output(str(tmp_path), "x")
    assert os.listdir(tmp_path) == []


def test_writes_through_a_symlink_to_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real.tir"
    target.write_text("old")
    (tmp_path / "link.tir").symlink_to(target)
    write_output(str(tmp_path / "link.tir"), "new")
    assert (tmp_path / "link.tir").is_symlink()
    assert target.read_text() == "new"


def test_special_files_are_written_in_place_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert is_special_file(str(fifo))
    assert not is_special_file(str(tmp_path / "absent"))


def test_dash_writes_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    write_output("-", "to stdout\n")
    assert capsys.readouterr().out == "to stdout\n"


def test_an_identical_file_is_left_untouched_when_asked(tmp_path: Path) -> None:
    target = tmp_path / "k.h"
    target.write_text("int k(void);\n")
    os.utime(target, (1_000_000, 1_000_000))
    inode = target.stat().st_ino
    write_output(str(target), "int k(void);\n", keep_identical=True)
    assert target.stat().st_mtime == 1_000_000 and target.stat().st_ino == inode
    write_output(str(target), "int k(int);\n", keep_identical=True)
    assert target.read_text() == "int k(int);\n" and target.stat().st_mtime > 1_000_000
    assert os.listdir(tmp_path) == ["k.h"]


def test_an_identical_file_is_rewritten_by_default(tmp_path: Path) -> None:
    target = tmp_path / "k.o"
    target.write_bytes(b"\x7fELF")
    os.utime(target, (1_000_000, 1_000_000))
    write_output(str(target), b"\x7fELF")
    assert target.stat().st_mtime > 1_000_000


def test_compiling_an_unchanged_header_keeps_its_timestamp(tmp_path: Path) -> None:
    from tirc.cli.main import main

    sample = Path(__file__).resolve().parents[2] / "samples" / "elementwise.tir"
    header = tmp_path / "k.h"
    argv = ["compile", str(sample), "--emit", "header", "-o", str(header)]
    assert main(argv) == 0
    os.utime(header, (1_000_000, 1_000_000))
    assert main(argv) == 0
    assert header.stat().st_mtime == 1_000_000
