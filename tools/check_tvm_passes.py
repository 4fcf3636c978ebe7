"""tirc's passes on the cases tools/record_tvm_passes.py recorded from TVM's pass tests.

    .venv/bin/python tools/check_tvm_passes.py /work/tvm_pass_cases [--pass NAME] [--show N]

For each case whose pass tirc has (same name, kebab-cased), tirc parses input.tir, runs its
pass with default options and compares the result with expected.tir structurally; where TVM
raised (error.txt), tirc must refuse too. Each case gets one verdict:

    equal           tirc's output is TVM's
    differs         both ran, the outputs differ (the first difference is shown)
    tirc refuses    TVM ran the pass, tirc raised a located error
    tirc crashes    tirc raised something other than a located error (a bug, always)
    both refuse     TVM raised, tirc refused
    tvm refuses     TVM raised, tirc ran the pass
    unparsed        tirc cannot read input.tir or expected.tir (the front end's, not the pass's)
    no such pass    tirc has no pass of that name

Cases recorded under a PassContext config or a target are marked "(config)": TVM ran them
with options tirc's defaults may not match. With `--bytes`, each pass's line also gives the
bytes its outputs allocate, tirc's against TVM's, over the cases where both ran and every
allocation has a constant size (how much a memory pass such as storage-rewrite saves). Not a
test: a tool to find where tirc's passes and TVM's part ways.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import resource
import sys
import traceback
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tirc.diagnostics import DiagnosticError  # noqa: E402
from tirc.ir import stmt as S  # noqa: E402
from tirc.ir.expr import IntImm  # noqa: E402
from tirc.ir.function import IRModule  # noqa: E402
from tirc.ir.functor import walk  # noqa: E402
from tirc.ir.structural import find_difference  # noqa: E402
from tirc.text import parse  # noqa: E402
from tirc.transform.pass_base import ModulePass  # noqa: E402
from tirc.transform.registry import lookup_pass, pass_names  # noqa: E402

# TVM's name (kebab-cased) -> tirc's, where they differ
ALIASES = {
    "stmt-simplify": "simplify",
    "narrow-data-type": "narrow-datatype",
    "plan-and-update-buffer-allocation-location": "plan-buffer-allocation",
}


def configured_pass(name: str, config: dict[str, str]) -> tuple[ModulePass, list[str]]:
    """tirc's pass `name` with the options of TVM's PassContext config that it shares (a
    config entry prints as `Name(field=value, ...)`), and the fields it does not have."""
    klass = lookup_pass(name)
    fields = {field.name: field for field in dataclasses.fields(klass)}
    options: dict[str, object] = {}
    unknown: list[str] = []
    for text in config.values():
        for field, value in re.findall(r"(\w+)=([^,()]+)", text):
            if field not in fields:
                unknown.append(field)
                continue
            value = value.strip()
            options[field] = (
                value == "True"
                if value in ("True", "False")
                else int(value)
                if value.lstrip("-").isdigit()
                else value
            )
    return klass(**options), unknown


def allocated_bytes(module: IRModule) -> int | None:
    """The bytes `module`'s allocations ask for, or None where one's size is not a constant."""
    sizes: list[int | None] = []

    def count(node: object) -> None:
        if isinstance(node, S.AllocBuffer):
            buffer = node.buffer
            size = (buffer.dtype.bits * buffer.dtype.lanes + 7) // 8
            for extent in buffer.shape:
                if not isinstance(extent, IntImm):
                    sizes.append(None)
                    return
                size *= extent.value
            sizes.append(size)

    for _, func in module.functions:
        walk(func.body, count)
    return None if None in sizes else sum(size for size in sizes if size is not None)


# per case, where both ran: the bytes tirc's output and TVM's allocate
BYTES: dict[str, tuple[int, int]] = {}


def check(case: Path) -> tuple[str, str]:
    meta = json.loads((case / "case.json").read_text())
    name = ALIASES.get(meta["tirc_pass"], meta["tirc_pass"])
    if name not in pass_names():
        return "no such pass", name
    try:
        module = parse((case / "input.tir").read_text(), name=str(case / "input.tir"))
        expected = None
        if (case / "expected.tir").exists():
            text = (case / "expected.tir").read_text()
            expected = parse(text, name=str(case / "expected.tir"))
    except DiagnosticError as error:
        return "unparsed", str(error).splitlines()[0][:300]
    except Exception:  # noqa: BLE001
        return "unparsed", traceback.format_exc().splitlines()[-1][:300]
    try:
        result = configured_pass(name, meta["config"])[0].run(module)
    except DiagnosticError as error:
        if expected is None:
            return "both refuse", ""
        return "tirc refuses", str(error).splitlines()[0][:300]
    except Exception:  # noqa: BLE001
        return "tirc crashes", traceback.format_exc()[-600:]
    if expected is None:
        return "tvm refuses", (case / "error.txt").read_text().strip()[:300]
    ours, theirs = allocated_bytes(result), allocated_bytes(expected)
    if ours is not None and theirs is not None:
        BYTES[case.name] = (ours, theirs)
    difference = find_difference(result, expected)
    if difference is None:
        return "equal", ""
    where = f"{difference.path}: {difference.message}"[:400]
    meaning = same_meaning(result, expected)
    return f"differs{'' if meaning is None else ' ' + meaning}", where


def same_meaning(result: IRModule, expected: IRModule) -> str | None:
    """ "(same results)" or "(other results)" where both modules' functions run in the
    interpreter on the same seeded inputs (shape variables 8), else None."""
    import numpy as np

    from tirc.interp import random_inputs, run

    verdicts = []
    for name, func in expected.functions:
        if name not in result:
            return None
        try:
            sizes = {var.name: 8 for var in func.params if var.dtype.is_int}
            inputs = random_inputs(func, 0, sizes=sizes)
            have = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
            want = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
            run(result[name], have, module=result)
            run(func, want, module=expected)
        except Exception:  # noqa: BLE001  # a program the interpreter cannot run: no verdict
            return None
        verdicts.append(
            all(
                np.array_equal(have[key], value, equal_nan=value.dtype.kind == "f")
                for key, value in want.items()
                if isinstance(value, np.ndarray)
            )
        )
    if not verdicts:
        return None
    return "(same results)" if all(verdicts) else "(other results)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path)
    parser.add_argument("--pass", dest="only", default=None, help="only this tirc pass")
    parser.add_argument("--show", type=int, default=3, help="failures shown per pass")
    parser.add_argument("--json", type=Path, default=None, help="write every verdict here")
    parser.add_argument(
        "--bytes", action="store_true", help="bytes allocated, tirc's against TVM's, per pass"
    )
    args = parser.parse_args()
    # a program with huge buffers fails its run (MemoryError: no verdict) instead of the tool
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
    verdicts: dict[str, list[tuple[str, str, str, bool]]] = defaultdict(list)
    for meta_path in sorted(args.cases.glob("*/*/case.json")):
        case = meta_path.parent
        meta = json.loads(meta_path.read_text())
        if args.only and meta["tirc_pass"] != args.only:
            continue
        verdict, detail = check(case)
        configured = bool(meta["config"]) or meta["target"] is not None
        verdicts[meta["tirc_pass"]].append((verdict, case.name, detail, configured))
    total: Counter[str] = Counter()
    for name, rows in sorted(verdicts.items()):
        tally = Counter(verdict for verdict, *_ in rows)
        total.update(tally)
        summary = ", ".join(f"{verdict} {number}" for verdict, number in tally.most_common())
        print(f"{name}: {len(rows)} cases: {summary}")
        if args.bytes:
            sized = [BYTES[case] for _, case, *_ in rows if case in BYTES]
            ours, theirs = sum(pair[0] for pair in sized), sum(pair[1] for pair in sized)
            print(f"    bytes allocated over {len(sized)} cases: tirc {ours:,}, TVM {theirs:,}")
            for _, case, *_ in rows:
                if case in BYTES and BYTES[case][0] != BYTES[case][1] and args.show:
                    print(f"        {case}: tirc {BYTES[case][0]:,}, TVM {BYTES[case][1]:,}")
        shown = 0
        for verdict, case, detail, configured in rows:
            if verdict in ("equal", "both refuse", "no such pass") or shown >= args.show:
                continue
            shown += 1
            mark = " (config)" if configured else ""
            print(f"    [{verdict}]{mark} {case}: {detail}")
    print("total:", ", ".join(f"{verdict} {number}" for verdict, number in total.most_common()))
    if args.json is not None:
        table = {name: [list(row) for row in rows] for name, rows in verdicts.items()}
        args.json.write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
