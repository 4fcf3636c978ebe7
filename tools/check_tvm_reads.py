"""Does TVM 0.27 read what tirc prints? tirc parses each .tir file given (or each in a folder),
prints it, and TVM's parser (`tvm.script.from_source`, in TVM's own Python) reads the print.

    .venv/bin/python tools/check_tvm_reads.py /work/tvm_programs [--show N]
    .venv/bin/python tools/check_tvm_reads.py samples/gpu/*.tir --lower cuda

With --lower TARGET each file is first scheduled by its X.plan.json (where there is one) and
lowered for TARGET, as `tirc print --lower` does. Files tirc cannot read or its verifier
rejects are counted apart.
TVM runs in a child process (TIRC_TVM_PYTHON, else /work/tvm-venv/bin/python); it is never
imported here. tests/interop/test_tvm_reads_samples.py checks the lowered GPU samples.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tirc.api import lower, parse, schedule  # noqa: E402
from tirc.diagnostics import DiagnosticError  # noqa: E402
from tirc.text import print_module  # noqa: E402

_READ = """
import json, sys
import tvm
verdicts = {}
for name, text in json.load(sys.stdin).items():
    try:
        tvm.script.from_source(text)
        verdicts[name] = "ok"
    except Exception as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        verdicts[name] = " | ".join(lines[:3])[:300]
json.dump(verdicts, sys.stdout)
"""


def printed(path: Path, target: str | None) -> str:
    if target is None:
        return print_module(parse(path))
    plan = path.with_suffix(".plan.json")
    module = schedule(path, plan) if plan.exists() else parse(path)
    return print_module(lower(module, target=target))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help=".tir files or folders of them")
    parser.add_argument("--lower", metavar="TARGET", help="schedule and lower for TARGET first")
    parser.add_argument("--show", type=int, default=20, help="failures to list")
    options = parser.parse_args()
    files = [
        file
        for path in options.paths
        for file in (sorted(path.glob("*.tir")) if path.is_dir() else [path])
    ]
    texts: dict[str, str] = {}
    unread = 0
    for file in files:
        try:
            texts[str(file)] = printed(file, options.lower)
        except DiagnosticError:
            unread += 1
    tvm_python = os.environ.get("TIRC_TVM_PYTHON", "/work/tvm-venv/bin/python")
    done = subprocess.run(
        [tvm_python, "-c", _READ], input=json.dumps(texts), capture_output=True, text=True
    )
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)
        return 2
    verdicts: dict[str, str] = json.loads(done.stdout)
    failures = {name: verdict for name, verdict in verdicts.items() if verdict != "ok"}
    print(
        f"{len(files)} files: tirc read and verified {len(texts)} (not {unread}); "
        f"TVM read {len(texts) - len(failures)} of tirc's prints"
    )
    for name, verdict in sorted(failures.items())[: options.show]:
        print(f"[TVM cannot read] {name}: {verdict}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
