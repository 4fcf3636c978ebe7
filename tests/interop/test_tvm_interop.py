"""Interop with Apache TVM 0.27: what tirc prints parses in TVM and equals TVM's own parse.

Optional: runs when TVM is importable here or when TIRC_TVM_PYTHON names a Python that has
it (TVM lives in a venv of its own, never a dependency of tirc); skips otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tirc.text import parse, print_module

HERE = Path(__file__).resolve().parent
CASES = HERE.parents[2] / "shared" / "conformance" / "cases"


def _tvm_python() -> str | None:
    configured = os.environ.get("TIRC_TVM_PYTHON")
    if configured:
        return configured
    probe = subprocess.run([sys.executable, "-c", "import tvm"], capture_output=True)
    return sys.executable if probe.returncode == 0 else None


@pytest.mark.skipif(not CASES.is_dir(), reason="../shared/conformance is not present")
def test_tirc_print_parses_in_tvm_and_equals_tvm_parse(tmp_path: Path) -> None:
    tvm_python = _tvm_python()
    if tvm_python is None:
        pytest.skip("Apache TVM 0.27 is not importable (set TIRC_TVM_PYTHON)")
    pairs = []
    for case in sorted(CASES.iterdir()):
        original = case / "input.tir"
        printed = tmp_path / f"{case.name}.tir"
        printed.write_text(print_module(parse(original.read_text(), name=str(original))))
        pairs.append([str(original), str(printed)])
    done = subprocess.run(
        [tvm_python, str(HERE / "tvm_compare.py")],
        input=json.dumps(pairs),
        capture_output=True,
        text=True,
        check=True,
    )
    verdicts = json.loads(done.stdout)
    failures = {name: verdict for name, verdict in verdicts.items() if verdict != "ok"}
    rate = 100.0 * (len(verdicts) - len(failures)) / len(verdicts)
    print(f"interop: {len(verdicts) - len(failures)}/{len(verdicts)} ({rate:.1f}%)")
    assert not failures, "\n".join(f"{Path(k).stem}: {v}" for k, v in sorted(failures.items())[:20])
