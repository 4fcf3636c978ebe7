"""Constructs TVM 0.27 prints in its own tests' programs (tools/check_tvm_programs.py).

tvm_constructs/ holds one small program per construct, as TVM prints it: each reads, prints
back byte for byte, reads back to an equal module, and passes the verifier. The tests below
check what each construct reads to, and the located refusal where tirc cannot compile it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tirc.analysis.well_formed import verify_module
from tirc.diagnostics import Severity
from tirc.ir.function import IRModule
from tirc.ir.stmt import TargetAttr
from tirc.ir.structural import find_difference
from tirc.text import parse, print_module

PROGRAMS = Path(__file__).parent / "tvm_constructs"


def _read(name: str) -> IRModule:
    path = PROGRAMS / f"{name}.tir"
    return parse(path.read_text(), name=str(path))


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("*.tir")), ids=lambda path: path.stem)
def test_program_reads_prints_and_verifies(path: Path) -> None:
    text = path.read_text()
    module = parse(text, name=str(path))
    printed = print_module(module)
    assert printed == text
    difference = find_difference(module, parse(printed, name=f"{path} (printed)"))
    assert difference is None, difference
    errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    assert not errors, errors[0]


def test_target_attribute_keeps_its_config() -> None:
    target = _read("target_attr").functions[0][1].attrs.get("target")
    assert isinstance(target, TargetAttr)
    assert not isinstance(target.config, str)
    assert target.config.get("kind") == "cuda"
    assert target.config.get("keys") == ("cuda", "gpu")
    host = target.config.get("host")
    assert not isinstance(host, str) and host is not None


def _refusal(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    from tirc.cli.main import main

    assert main(args) == 1
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "emit"), [("interp", None), ("cpu", "ll"), ("cuda", "cu")], ids=str
)
def test_vscale_reads_but_no_backend_runs_it(
    target: str, emit: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(PROGRAMS / "vscale.tir")
    if emit is None:
        args = ["run", path, "--target", target]
    else:
        args = ["compile", path, "--target", target, "--emit", emit, "-o", str(tmp_path / "out")]
    message = _refusal(args, capsys)
    assert "T.vscale" in message
    assert "vscale.tir:6:27" in message
