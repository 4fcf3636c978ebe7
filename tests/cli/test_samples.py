"""The shipped samples through the real layers: `tirc print` is a fixed point on each, and
`tirc check` finds nothing wrong. Skipped until the parser and verifier exist."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tirc.cli.main import main

SAMPLES = sorted((Path(__file__).parents[2] / "samples").glob("*.tir"))


def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_samples_exist() -> None:
    assert {path.stem for path in SAMPLES} >= {
        "matmul",
        "conv2d",
        "softmax",
        "elementwise",
        "reduction",
    }


@pytest.mark.skipif(not has_module("tirc.text.parser"), reason="no parser yet")
@pytest.mark.parametrize("sample", SAMPLES, ids=lambda path: path.stem)
def test_print_is_a_fixed_point_on_samples(
    sample: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / sample.name
    assert main(["print", str(sample), "-o", str(out)]) == 0, capsys.readouterr().err
    assert out.read_bytes() == sample.read_bytes()


@pytest.mark.skipif(not has_module("tirc.analysis.well_formed"), reason="no verifier yet")
def test_samples_check_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", *map(str, SAMPLES)]) == 0, capsys.readouterr().err
    assert capsys.readouterr() == ("", "")
