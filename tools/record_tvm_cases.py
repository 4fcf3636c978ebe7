"""Record conformance cases from TVM's own schedule tests, while TVM runs them.

Run with the TVM 0.27 oracle's interpreter (never with tirc's venv; tirc never imports this):

    PYTHONPATH=<dir with pytest> /work/tvm-venv/bin/python tools/record_tvm_cases.py \
        --out /work/extra_cases --skip-like /work/shared/conformance/cases \
        TVM/tests/python/s_tir/schedule/test_tir_schedule_split_fuse.py ...

Every `tvm.s_tir.Schedule` a test constructs from Python is watched (schedules TVM builds in
C++, such as meta_schedule's design spaces, are not). When the test passes, each watched
schedule whose trace does more than look up blocks and loops becomes a `schedule` case
(input.tir, plan.json, expected.tir); each primitive that raised ScheduleError (the test
caught it) becomes a `must_reject` case whose plan ends with the failing instruction
(error.json). A case is kept only when TVM replays the trace (its own JSON, of which plan.json
is the text form) on the re-parsed input.tir to the same module (or to the same error), and
when its input and plan differ from every case in the --skip-like folders.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest
import tvm
import tvm_ffi
from tvm.s_tir import schedule as tvm_schedule
from tvm.s_tir.schedule import Instruction, InstructionKind, Schedule, Trace, _ffi_api

TESTS_COMMIT = "5d4dc8721307cf9677becacf0395c19be130e206"


def _int(value: Any) -> Any:
    return tvm.tirx.IntImm("int32", int(value)) if isinstance(value, (bool, int)) else value


def _bool(value: Any) -> Any:
    return tvm.tirx.IntImm("bool", bool(value)) if isinstance(value, (bool, int)) else value


# How a traced primitive turns its FFI arguments (those after the schedule) into the inputs
# and attributes of its instruction, as TVM's traced schedule does
# (src/s_tir/schedule/traced_schedule.cc): needed only for a primitive that failed, which TVM
# leaves out of the trace.
ARGUMENT_RULES: dict[str, Any] = {
    "ComputeInline": lambda a: ([a[0]], []),
    "ReverseComputeInline": lambda a: ([a[0]], []),
    "ComputeAt": lambda a: ([a[0], a[1]], [_int(a[2]), _int(a[3])]),
    "ReverseComputeAt": lambda a: ([a[0], a[1]], [_int(a[2]), _int(a[3])]),
    "RFactor": lambda a: ([a[0]], [_int(a[1])]),
    "Fuse": lambda a: (list(a[0]), [_int(a[1])]),
    "Merge": lambda a: (list(a[0]), []),
    "Reorder": lambda a: (list(a[0]), []),
    "Split": lambda a: ([a[0], *a[1]], [bool(a[2]), bool(a[3])]),
    "LoopPartition": lambda a: ([a[0], *a[1]], [_int(a[2])]),
    "Parallel": lambda a: ([a[0]], []),
    "Vectorize": lambda a: ([a[0]], []),
    "Unroll": lambda a: ([a[0]], []),
    "Bind": lambda a: ([a[0]], [a[1]]),
    "CacheRead": lambda a: ([a[0], list(a[3])], [_int(a[1]), a[2]]),
    "CacheWrite": lambda a: ([a[0], list(a[3])], [_int(a[1]), a[2]]),
    "ReindexCacheRead": lambda a: ([a[0], a[3]], [_int(a[1]), a[2]]),
    "ReindexCacheWrite": lambda a: ([a[0], a[3]], [_int(a[1]), a[2]]),
    "CacheInplace": lambda a: ([a[0]], [_int(a[1]), a[2]]),
    "ReIndex": lambda a: ([a[0]], [_int(a[1]), _int(a[2])]),
    "StorageAlign": lambda a: ([a[0]], [_int(a[1]), _int(a[2]), _int(a[3]), _int(a[4])]),
    "SetScope": lambda a: ([a[0]], [_int(a[1]), a[2]]),
    "UnsafeSetDType": lambda a: ([a[0]], [_int(a[1]), a[2]]),
    "DecomposeReduction": lambda a: ([a[0], a[1]], []),
    "DecomposePadding": lambda a: ([a[0], a[1]], []),
    "Blockize": lambda a: ([a[0]], [_bool(a[1])]),
    "Tensorize": lambda a: ([a[0]], [a[1], _bool(a[2])]),
    "TransformBlockLayout": lambda a: ([a[0]], [a[1]]),
    "PadEinsum": lambda a: ([a[0]], [list(a[1])]),
    "RollingBuffer": lambda a: ([a[0]], [_int(a[1])]),
    "ReorderBlockIterVar": lambda a: ([a[0], list(a[1])], []),
    "FuseReductionEpilogue": lambda a: ([a[0], a[1]], []),
    "AddUnitLoop": lambda a: ([a[0]], []),
}


def to_json_value(value: Any) -> Any:
    """A trace's JSON object as plain Python, index maps as TVMScript text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, str) and value.startswith("{") and '"root_index"' in value:
            loaded = tvm.ir.load_json(value)
            if type(loaded).__name__ == "IndexMap":
                return index_map_text(loaded)
        return value
    name = type(value).__name__
    if name == "IntImm":
        return bool(value.value) if str(value.ty) == "bool" else int(value.value)
    if name == "FloatImm":
        return float(value.value)
    if isinstance(value, (list, tuple)) or name in ("Array", "List"):
        return [to_json_value(item) for item in value]
    if name == "String":
        return str(value)
    if name in ("Map", "Dict") or isinstance(value, dict):
        return {str(key): to_json_value(item) for key, item in value.items()}
    raise TypeError(f"cannot write {name} into a plan: {value!r}")


def index_map_text(index_map: Any) -> str:
    """TVMScript's `T.index_map(...)`, naming its index type where that is not T.index_map's
    default (int64), as TVM's printer leaves it out and a reader would take int64."""
    text = str(index_map)
    dtypes = {str(var.ty) for var in index_map.initial_indices}
    if len(dtypes) == 1 and dtypes != {"int64"} and "index_dtype" not in text:
        text = f'{text[:-1]}, index_dtype="{dtypes.pop()}")'
    return text


def plan_text(trace: Trace) -> tuple[str, Any]:
    """The plan as written (index maps as text) and TVM's own JSON object, which replays."""
    raw = trace.as_json()
    return json.dumps(to_json_value(raw)), raw


def case_key(input_tir: str, plan: str) -> str:
    return hashlib.sha256((input_tir.strip() + "\0" + plan.strip()).encode()).hexdigest()


class Watched:
    """A schedule a test built, with what it started from and the primitives that failed."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.input_tir = schedule.mod.script()
        self.rejects: list[tuple[tuple[str, Any], str, str, dict]] = []


class Recorder:
    def __init__(self, out: Path, known: set[str]) -> None:
        self.out = out
        self.known = known
        self.watched: list[Watched] = []
        self.counts: dict[str, int] = {}
        self.errors: list[str] = []

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def find(self, schedule: Any) -> Watched | None:
        for watched in self.watched:
            if watched.schedule.same_as(schedule):
                return watched
        return None

    def install(self) -> None:
        recorder = self
        original_init = Schedule.__init__

        def init(self: Schedule, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            if self.trace is not None:
                recorder.watched.append(Watched(self))

        setattr(Schedule, "__init__", init)  # noqa: B010 (mypy forbids assigning a method)
        for ffi_name in dir(_ffi_api):
            kind = ffi_name.removeprefix("Schedule")
            if not ffi_name.startswith("Schedule") or kind not in ARGUMENT_RULES:
                continue
            setattr(_ffi_api, ffi_name, self.wrap(getattr(_ffi_api, ffi_name), kind, ffi_name))

    def wrap(self, function: Any, kind: str, ffi_name: str) -> Any:
        recorder = self

        def call(schedule: Any, *args: Any) -> Any:
            try:
                return function(schedule, *args)
            except tvm_schedule.ScheduleError as error:
                watched = recorder.find(schedule)
                if watched is not None:
                    recorder.note_reject(watched, kind, ffi_name, list(args), error)
                raise

        return call

    def note_reject(
        self, watched: Watched, kind: str, ffi_name: str, args: list, error: Exception
    ) -> None:
        trace = watched.schedule.trace
        try:
            inputs, attrs = ARGUMENT_RULES[kind](args)
            failing = Instruction(InstructionKind.get(kind), inputs, attrs, [])
            plan = plan_text(Trace([*trace.insts, failing], dict(trace.decisions)))
        except Exception:  # noqa: BLE001  # an argument form the table does not know
            self.count("reject: instruction not rebuilt")
            return
        message = str(error)
        line = next((ln for ln in message.splitlines() if ln.startswith("Error message:")), "")
        watched.rejects.append(
            (
                plan,
                kind,
                ffi_name,
                {"message": message[:400], "line": line, "index": len(trace.insts)},
            )
        )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: Any) -> Any:
        self.watched = []
        outcome = yield
        try:
            if outcome.excinfo is None:
                self.write_cases(item)
            else:
                self.count("test failed in TVM")
        except Exception:  # noqa: BLE001  # one bad test must not stop the recording
            self.count("recorder error")
            self.errors.append(f"{item.nodeid}: {traceback.format_exc()}")
        self.watched = []

    def write_cases(self, item: Any) -> None:
        module = Path(str(item.fspath)).stem
        test = re.sub(r"[^A-Za-z0-9_]+", "_", item.name).strip("_")
        path = Path(str(item.fspath))
        source = f"s_tir/{path.parent.name}/{path.name}::{item.name}"
        index = 0
        for watched in self.watched:
            cases: list[tuple[str, tuple[str, Any], dict | None]] = []
            trace = watched.schedule.trace
            if any(inst.kind.name not in ("GetSBlock", "GetLoops") for inst in trace.insts):
                cases.append(("schedule", plan_text(trace), None))
            for plan, kind, ffi_name, error in watched.rejects:
                cases.append(("must_reject", plan, {"kind": kind, "ffi": ffi_name, **error}))
            for kind, plan, error in cases:
                key = case_key(watched.input_tir, plan[0])
                if key in self.known:
                    self.count("duplicate")
                    continue
                folder = self.out / f"{module}__{test}__{index}"
                if self.write_case(folder, kind, source, watched, plan, error):
                    self.known.add(key)
                    index += 1

    def write_case(
        self,
        folder: Path,
        kind: str,
        source: str,
        watched: Watched,
        plan_and_raw: tuple[str, Any],
        error: dict | None,
    ) -> bool:
        parsed = tvm.script.from_source(watched.input_tir)
        if not tvm_ffi.structural_equal(parsed, tvm.script.from_source(parsed.script())):
            self.count("input does not round-trip")
            return False
        replay = Schedule(parsed, debug_mask="all")
        self.watched = [w for w in self.watched if w.schedule is not replay]
        plan, raw = plan_and_raw
        plan_object = json.loads(plan)
        kinds = [inst[0] for inst in plan_object[0]]
        intrinsics = {}
        for inst in plan_object[0]:
            if inst[0] == "Tensorize":
                intrin = tvm.s_tir.TensorIntrin.get(inst[2][0])
                intrinsics[inst[2][0]] = {
                    "desc": intrin.desc.script(),
                    "impl": intrin.impl.script(),
                }
        replay_error: Exception | None = None
        try:
            Trace.apply_json_to_schedule(raw, replay)
        except Exception as caught:  # noqa: BLE001  # TVM raises several error types
            replay_error = caught
        expected = watched.schedule.mod.script()
        if kind == "schedule":
            if replay_error is not None:
                self.count("replay failed")
                self.errors.append(f"replay failed {folder.name}: {str(replay_error)[:300]}")
                return False
            if not tvm_ffi.structural_equal(replay.mod, tvm.script.from_source(expected)):
                self.count("replay differs")
                return False
        else:
            assert error is not None
            if not isinstance(replay_error, tvm_schedule.ScheduleError) or (
                error["line"] and error["line"] not in str(replay_error)
            ):
                self.count("reject does not replay")
                return False
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        (folder / "input.tir").write_text(watched.input_tir)
        (folder / "plan.json").write_text(plan + "\n")
        if intrinsics:
            (folder / "intrinsics.json").write_text(json.dumps(intrinsics, indent=1))
        meta: dict[str, Any] = {
            "kind": kind,
            "source_test": source,
            "primitives": list(dict.fromkeys(kinds)),
            "targets": target_class(watched.input_tir + expected),
            "tvm_version": f"{tvm.__version__}, apache-tvm-ffi {tvm_ffi.__version__}",
            "tests_commit": TESTS_COMMIT,
            "checks": {
                "roundtrip": "ok",
                "replay_in_tvm": "ok" if kind == "schedule" else "rejects_same_type",
            },
        }
        if intrinsics:
            meta["tensor_intrins"] = sorted(intrinsics)
        if kind == "schedule":
            (folder / "expected.tir").write_text(expected)
        else:
            assert error is not None
            (folder / "error.json").write_text(
                json.dumps(
                    {
                        "error_type": "ScheduleError",
                        "error_class": "tvm.s_tir.schedule.schedule.ScheduleError",
                        "message": error["message"],
                        "error_message_line": error["line"],
                        "expected_by_test": True,
                        "instruction": error["kind"],
                        "instruction_index": error["index"],
                        "ffi_function": error["ffi"],
                    },
                    indent=1,
                )
            )
        (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        self.count(f"written {kind}")
        return True


def target_class(text: str) -> str:
    if re.search(r"threadIdx|blockIdx|vthread|\"shared|\"warp|wmma|\"local", text):
        return "gpu"
    return "any"


def known_keys(folders: list[Path]) -> set[str]:
    keys = set()
    for folder in folders:
        for case in folder.iterdir():
            if (case / "plan.json").exists() and (case / "input.tir").exists():
                keys.add(
                    case_key((case / "input.tir").read_text(), (case / "plan.json").read_text())
                )
    return keys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="+", help="TVM test files (or file::test ids)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--skip-like", type=Path, action="append", default=[])
    parser.add_argument("-k", default=None, help="pytest -k expression")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(args.out, known_keys([*args.skip_like, args.out]))
    recorder.install()
    # The tests' commit names TensorIntrin under tvm.tirx; this wheel keeps it in tvm.s_tir.
    if not hasattr(tvm.tirx, "TensorIntrin"):
        tvm.tirx.TensorIntrin = tvm.s_tir.TensorIntrin
    pytest_args = ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", *args.tests]
    if args.k:
        pytest_args += ["-k", args.k]
    pytest.main(pytest_args, plugins=[recorder])
    for text in recorder.errors:
        print(text, file=sys.stderr)
    for what, number in sorted(recorder.counts.items()):
        print(f"{what}: {number}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
