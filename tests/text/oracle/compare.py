"""Compare tirc's parse of .tir files with TVM 0.27's, structure by structure.

    .venv/bin/python tests/text/oracle/compare.py [--tvm PYTHON] [--show N] FILE.tir...

TVM runs in its own interpreter (default /work/tvm-venv/bin/python) through
canonical_tvm.py; its answers are cached next to the system's temporary files. Prints, per
file, the first place the two canonical forms differ, and a summary.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from tests.text.oracle.canonical_tirc import canonical  # noqa: E402
from tirc.diagnostics import DiagnosticError  # noqa: E402
from tirc.text.parser import parse_module  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "tirc-oracle-cache"


def tvm_canonical(python: str, files: list[str]) -> dict[str, Any]:
    CACHE.mkdir(exist_ok=True)
    results: dict[str, Any] = {}
    missing = []
    for path in files:
        digest = hashlib.sha256(
            Path(path).read_bytes() + (HERE / "canonical_tvm.py").read_bytes()
        ).hexdigest()
        cached = CACHE / f"{digest}.json"
        if cached.exists():
            results[path] = json.loads(cached.read_text())
        else:
            missing.append((path, cached))
    for start in range(0, len(missing), 50):
        chunk = missing[start : start + 50]
        output = subprocess.run(
            [python, str(HERE / "canonical_tvm.py"), *[p for p, _ in chunk]],
            capture_output=True,
            text=True,
            env={**os.environ, "TVM_LOG_DEBUG": "0"},
        ).stdout
        for line, (path, cached) in zip(output.splitlines(), chunk, strict=False):
            record = json.loads(line)
            cached.write_text(json.dumps(record))
            results[path] = record
    return results


# Deliberate differences: these builtins return nothing in TVM 0.27 (void); tirc's intrinsic
# registry types them as handle or int32, as TVM did before.
UNTYPED_CALLS = {
    "tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_store_matrix_sync", "tvm_mma_sync",
    "tvm_bmma_sync", "tvm_storage_sync", "tvm_thread_allreduce",
}  # fmt: skip


def normalize(value: Any) -> Any:
    """Both sides with the deliberate differences written one way: tirc keeps an AttrStmt
    node `0` or `"text"` as an IR constant (TVM: a Python value), types `a: T.handle` as a
    plain handle (TVM: a pointer to nothing), and has Break/Continue statements where TVM
    evaluates T.break_loop() / T.continue_loop()."""
    if isinstance(value, list):
        items = [normalize(item) for item in value]
        if len(items) == 4 and items[0] == "call" and items[2] in UNTYPED_CALLS:
            items[1] = "*"
        if items and items[0] == "attr" and items[1][:2] == ["py", "int"]:
            items[1] = ["int", items[1][2], "int32"]
        if items and items[0] == "attr" and items[1][:2] == ["py", "str"]:
            items[1] = ["str", items[1][2]]
        if len(items) == 3 and items[0] == "v" and items[2] == "handle::global":
            items[2] = "handle"  # an untyped pointer (`a: T.handle`)
        if items and items[0] == "eval" and isinstance(items[1], list) and items[1][0] == "call":
            if items[1][2] in ("break_loop", "continue_loop"):
                return [items[1][2].removesuffix("_loop")]
        return items
    return value


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}: {short(a)} vs {short(b)}"
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            head = a[0] if a and isinstance(a[0], str) else ""
            found = first_difference(x, y, f"{path}/{head}[{index}]")
            if found:
                return found
        return None
    if a != b:
        return f"{path}: {short(a)} vs {short(b)}"
    return None


def short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) < 160 else text[:157] + "..."


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--tvm", default="/work/tvm-venv/bin/python")
    parser.add_argument("--show", type=int, default=10)
    args = parser.parse_args()
    oracle = tvm_canonical(args.tvm, args.files)
    counts: collections.Counter[str] = collections.Counter()
    shown = 0
    for path in args.files:
        record = oracle[path]
        try:
            mine = canonical(parse_module(Path(path).read_text(), name=path))
        except DiagnosticError as error:
            mine = {"error": str(error)}
        theirs = record.get("canonical", {"error": record.get("error")})
        if isinstance(mine, dict) or isinstance(theirs, dict):
            same = isinstance(mine, dict) and isinstance(theirs, dict)
            outcome = (
                "both reject"
                if same
                else ("tirc rejects" if isinstance(mine, dict) else "tvm rejects")
            )
            counts[outcome] += 1
            if not same and shown < args.show:
                shown += 1
                print(f"{path}: {outcome}: {mine if isinstance(mine, dict) else theirs}")
            continue
        difference = first_difference(normalize(json.loads(json.dumps(mine))), normalize(theirs))
        if difference is None:
            counts["same"] += 1
        else:
            counts["different"] += 1
            if shown < args.show:
                shown += 1
                print(f"{path}:\n  {difference}")
    print(dict(counts))
    return 0 if counts["different"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
