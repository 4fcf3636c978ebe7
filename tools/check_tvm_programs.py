"""tirc's front end on the programs tools/record_tvm_passes.py --programs kept from TVM's tests.

    .venv/bin/python tools/check_tvm_programs.py /work/tvm_programs [--show N]

Each program is TVM 0.27's print of a module its TVMScript parser built (and re-read to an
equal module), so TVM accepts every one. For each, tirc must parse it (`parse error` /
`parse crash` otherwise), print it to text that parses back to an equal module (`round trip
differs` / `round trip fails`), and its verifier must accept it (`verifier rejects`: a rule
stricter than TVM's, or a program TVM's tests build on purpose to be odd; look at each). The
structure tirc builds can be compared with TVM's by tests/text/oracle/compare.py.
"""

from __future__ import annotations

import argparse
import collections
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tirc.analysis.well_formed import verify_module  # noqa: E402
from tirc.diagnostics import DiagnosticError, Severity  # noqa: E402
from tirc.ir.structural import find_difference  # noqa: E402
from tirc.text import parse, print_module  # noqa: E402


def check(path: Path) -> tuple[str, str]:
    try:
        module = parse(path.read_text(), name=str(path))
    except DiagnosticError as error:
        return "parse error", str(error).splitlines()[0]
    except Exception:  # noqa: BLE001
        return "parse crash", traceback.format_exc().splitlines()[-1]
    try:
        again = parse(print_module(module), name=f"{path} (printed)")
    except Exception as error:  # noqa: BLE001
        return "round trip fails", str(error).splitlines()[0]
    difference = find_difference(module, again)
    if difference is not None:
        return "round trip differs", f"{difference.path}: {difference.message}"
    try:
        errors = [d for d in verify_module(module) if d.severity is Severity.ERROR]
    except Exception:  # noqa: BLE001
        return "verifier crash", traceback.format_exc().splitlines()[-1]
    if errors:
        return "verifier rejects", str(errors[0]).splitlines()[0]
    return "ok", ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", type=Path)
    parser.add_argument("--show", type=int, default=1000, help="failures listed")
    args = parser.parse_args()
    tally: collections.Counter[str] = collections.Counter()
    failures = []
    for path in sorted(args.programs.glob("*.tir")):
        verdict, detail = check(path)
        tally[verdict] += 1
        if verdict != "ok":
            failures.append(f"[{verdict}] {path.name}: {detail[:300]}")
    print(f"{sum(tally.values())} programs:", dict(tally.most_common()))
    for line in failures[: args.show]:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
