"""TVM 0.27 reads what tirc prints for every GPU sample lowered for CUDA (samples/gpu/X.tir with
X.plan.json), and the TVM spelling of each CUDA intrinsic (tests/text/test_tvm_spelling.py).

tirc's wgmma, TMA copies and mapa have no TVM 0.27 spelling (their operands are tirc's own: the
buffers and layouts tirc turns into descriptors and tensor maps); the test stands a
`T.call_extern` in for each, so that TVM reads the rest of the program, and names them.
Optional: runs where TVM is importable or TIRC_TVM_PYTHON names a Python that has it.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.interop.test_tvm_interop import _tvm_python
from tests.text.test_tvm_spelling import TVM
from tirc.api import lower, parse, schedule
from tirc.text import print_module

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "samples" / "gpu").glob("*.tir"))
NO_TVM_SPELLING = ("ptx_wgmma", "ptx_tma_load_multicast", "ptx_tma_load", "ptx_tma_store")
_STATEMENT = re.compile(rf"T\.({'|'.join(NO_TVM_SPELLING)})\(")
_MAPA = re.compile(r"(\w+): T\.let\[(T\.handle\([^\]]*\))\] = T\.ptx_map_shared_cluster\(")
_READ = """
import json, sys
import tvm
verdicts = {}
for name, text in json.load(sys.stdin).items():
    try:
        tvm.script.from_source(text)
        verdicts[name] = "ok"
    except Exception as error:
        verdicts[name] = " ".join(str(error).split())[:400]
json.dump(verdicts, sys.stdout)
"""


def stand_ins(text: str) -> tuple[str, set[str]]:
    """`text` with a call_extern for each call that has no TVM spelling, and their names."""
    names = set(_STATEMENT.findall(text)) | {"ptx_map_shared_cluster" for _ in _MAPA.finditer(text)}
    text = _STATEMENT.sub(r'T.call_extern("void", "\1", ', text)
    text = _MAPA.sub(r'\1: T.let[\2] = T.call_extern(\2.ty, "ptx_map_shared_cluster", ', text)
    return text, names


def test_tvm_reads_lowered_gpu_samples() -> None:
    tvm_python = _tvm_python()
    if tvm_python is None:
        pytest.skip("Apache TVM 0.27 is not importable (set TIRC_TVM_PYTHON)")
    texts = {"tvm_spelling": TVM}
    standing_in: set[str] = set()
    for sample in SAMPLES:
        plan = sample.with_suffix(".plan.json")
        module = schedule(sample, plan) if plan.exists() else parse(sample)
        texts[sample.stem], names = stand_ins(print_module(lower(module, target="cuda")))
        standing_in |= names
    done = subprocess.run(
        [tvm_python, "-c", _READ], input=json.dumps(texts), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    verdicts = json.loads(done.stdout)
    failures = {name: verdict for name, verdict in verdicts.items() if verdict != "ok"}
    assert not failures, "\n".join(f"{name}: {verdict}" for name, verdict in failures.items())
    assert len(verdicts) == len(SAMPLES) + 1
    print(f"TVM read {len(SAMPLES)} lowered samples; stand-ins for {sorted(standing_in)}")
