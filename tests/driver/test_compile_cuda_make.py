"""`tirc compile --target cuda` in a Makefile: `--prefix` names the kernels and launchers so
that several files link into one program, and `-MD`/`-MF` write the make rule of what was read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tirc.cli.main import main

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
KERNEL = str(SAMPLES / "elementwise.tir")
PLAN = str(SAMPLES / "elementwise.cuda.plan.json")


def test_prefix_names_kernel_and_launcher_and_md_writes_the_depfile(tmp_path: Path) -> None:
    out = tmp_path / "elementwise.cu"
    command = ["compile", KERNEL, "--plan", PLAN, "--target", "cuda", "--emit", "cu"]
    assert main([*command, "--prefix", "ew_", "-o", str(out), "-MD"]) == 0
    source = out.read_text()
    assert 'extern "C" __global__' in source and " ew_main_kernel(" in source
    assert 'extern "C" int ew_main_launch(' in source and " main_kernel(" not in source
    rule = (tmp_path / "elementwise.cu.d").read_text()
    assert rule.startswith(f"{out}: {KERNEL} {PLAN} ")
    assert rule.splitlines()[0].endswith("pipelines/cuda.toml")
    assert f"\n{PLAN}:\n" in rule  # a phony rule, so that deleting the plan breaks nothing


def test_mf_names_the_depfile_of_ptx(tmp_path: Path) -> None:
    out, depfile = tmp_path / "k.ptx", tmp_path / "deps" / "k.d"
    depfile.parent.mkdir()
    command = ["compile", KERNEL, "--plan", PLAN, "--target", "cuda", "--emit", "ptx"]
    assert main([*command, "--ptx-via", "llvm", "-o", str(out), "-MD", "-MF", str(depfile)]) == 0
    assert ".entry main_kernel" in out.read_text()
    assert depfile.read_text().startswith(f"{out}: {KERNEL} {PLAN} ")


def test_md_to_stdout_needs_mf(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", KERNEL, "--target", "cuda", "-MD"]) == 1
    assert "-MD needs -MF DEPFILE when the output is stdout" in capsys.readouterr().err
