"""tirc builds the IR TVM 0.27 builds, structure by structure (where TVM is installed).

TVM runs in its own interpreter (never imported here) through oracle/canonical_tvm.py;
oracle/compare.py does the same for any files from the command line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.text.oracle.canonical_tirc import canonical
from tests.text.oracle.compare import first_difference, normalize, tvm_canonical
from tirc.text.parser import parse_module

TVM_PYTHON = os.environ.get("TIRC_TVM_PYTHON", "/work/tvm-venv/bin/python")
HERE = Path(__file__).parent
CORPUS = Path("/work/shared/conformance/cases")
FILES = sorted(HERE.glob("programs/*.tir")) + sorted(HERE.glob("golden/*.tir"))
FILES += sorted(CORPUS.glob("*/input.tir"))[:40] if CORPUS.is_dir() else []

pytestmark = pytest.mark.skipif(
    not Path(TVM_PYTHON).exists(), reason="TVM (the oracle) is not installed"
)


@pytest.fixture(scope="module")
def oracle() -> dict[str, object]:
    return tvm_canonical(TVM_PYTHON, [str(path) for path in FILES])


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_same_structure_as_tvm(path: Path, oracle: dict[str, object]) -> None:
    record = oracle[str(path)]
    assert isinstance(record, dict) and "canonical" in record, record
    mine = json.loads(json.dumps(canonical(parse_module(path.read_text(), name=str(path)))))
    difference = first_difference(normalize(mine), normalize(record["canonical"]))
    assert difference is None, difference
