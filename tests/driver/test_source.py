"""Reading FILE arguments: files, stdin, and every way that can fail, as diagnostics."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tirc.diagnostics import DiagnosticError
from tirc.driver.source import check_stdin_once, read_source


def test_reads_a_file_under_its_own_name(tmp_path: Path) -> None:
    path = tmp_path / "k.tir"
    path.write_text("x = 1\n")
    source = read_source(str(path))
    assert (source.name, source.text) == (str(path), "x = 1\n")


def test_reads_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("ü = 1\n".encode())))
    source = read_source("-")
    assert (source.name, source.text) == ("<stdin>", "ü = 1\n")


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "k.tir"
    path.write_bytes(b"\xef\xbb\xbfx = 1\n")
    assert read_source(str(path)).text == "x = 1\n"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(
        DiagnosticError, match="cannot read '.*nope.tir': no such file or directory"
    ):
        read_source(str(tmp_path / "nope.tir"))


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError, match="cannot read '.*': is a directory"):
        read_source(str(tmp_path))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "k.tir"
    path.write_text("x")
    path.chmod(0)
    with pytest.raises(DiagnosticError, match="permission denied"):
        read_source(str(path))


def test_invalid_utf8_is_located_at_the_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "k.tir"
    path.write_bytes("ü = 1\n".encode() + b"ab\xffcd\n")
    with pytest.raises(DiagnosticError) as caught:
        read_source(str(path))
    (diagnostic,) = caught.value.diagnostics
    assert "not valid UTF-8" in diagnostic.message and "0xff" in diagnostic.message
    assert diagnostic.span is not None
    assert (diagnostic.span.line, diagnostic.span.column) == (2, 3)


def test_stdin_can_be_named_only_once() -> None:
    check_stdin_once(["a.tir", "-"])
    with pytest.raises(DiagnosticError, match="only once"):
        check_stdin_once(["-", "-"])
