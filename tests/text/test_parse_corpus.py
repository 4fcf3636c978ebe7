"""Every program of the conformance corpus parses: TVM 0.27's printing of TVM's own tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tirc.text.parser import parse_module

CORPUS = Path("/work/shared/conformance/cases")
PROGRAMS = Path(__file__).parent / "programs"
CASE_FILES = sorted(CORPUS.glob("*/*.tir")) if CORPUS.is_dir() else []
INTRINSIC_FILES = sorted(CORPUS.glob("*/intrinsics.json")) if CORPUS.is_dir() else []


@pytest.mark.slow  # test_roundtrip's test_conformance_files_round_trip parses each of them too
@pytest.mark.skipif(not CASE_FILES, reason="the conformance corpus is not here")
def test_every_corpus_program_parses() -> None:
    failures = []
    for path in CASE_FILES:
        try:
            module = parse_module(path.read_text(), name=str(path))
        except Exception as error:  # noqa: BLE001 - collect them all, report at once
            failures.append(f"{path}: {error}")
            continue
        assert module.functions
    assert not failures, "\n".join(failures[:20])


@pytest.mark.skipif(not INTRINSIC_FILES, reason="the conformance corpus is not here")
def test_every_tensor_intrinsic_parses() -> None:
    count = 0
    for path in INTRINSIC_FILES:
        for name, entry in json.loads(path.read_text()).items():
            for part in ("desc", "impl"):
                module = parse_module(entry[part], name=f"{path}:{name}:{part}")
                assert module.is_bare
                count += 1
    assert count


@pytest.mark.parametrize("path", sorted(PROGRAMS.glob("*.tir")), ids=lambda p: p.name)
def test_sample_programs_parse(path: Path) -> None:
    assert parse_module(path.read_text(), name=str(path)).functions
