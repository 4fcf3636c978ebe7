"""Record pass cases from TVM's own pass tests, while TVM runs them.

Run with the TVM 0.27 oracle's interpreter (never with tirc's venv; tirc never imports this):

    /work/tvm-venv/bin/python tools/record_tvm_passes.py --out /work/tvm_pass_cases \
        --programs /work/tvm_programs \
        TVM/tests/python/s_tir/transform TVM/tests/python/tirx-transform ...

Every single pass a test applies to a module from Python (`Pass.__call__`; a Sequential's
inner passes run in C++ and are not seen) becomes a case named after the test:
input.tir (the module as TVM prints it), expected.tir (what the pass returned) or error.txt
(what it raised), and case.json (the pass's TVM name, tirc's name for it, the PassContext's
config and the current target, if any). A case is kept only when TVM re-parses both printed
modules to structurally equal ones (so the text is a faithful record), whether or not the
test itself passed (a test may apply a pass and then fail on an unrelated assertion), and
only once per (pass, input) pair.

With --programs DIR, every module or function TVMScript's parser returns (in a test, or
while a test file is imported) is kept too, as DIR/<test>__<n>.tir, once per text.

TVM crashes (segfaults) in some of its own tests: run one test file a process, e.g.

    for f in TVM/tests/python/s_tir/transform/test_*.py ...; do
        timeout 300 /work/tvm-venv/bin/python tools/record_tvm_passes.py --out ... "$f"
    done

(runs into the same --out share what they saw through its .keys folder).
tools/check_tvm_passes.py then runs tirc's pass of the same name on each input, and
tools/check_tvm_programs.py tirc's front end on each kept program.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest
import tvm
import tvm_ffi


def tirc_name(tvm_name: str) -> str:
    """`s_tir.LowerOpaqueBlock` -> `lower-opaque-block` (tirc names passes after TVM's)."""
    base = tvm_name.split(".")[-1]
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z]|\d|$)|[A-Z]?[a-z]+|\d+|[A-Z]+", base)
    return "-".join(word.lower() for word in words)


def _round_trips(module: Any) -> bool:
    try:
        return bool(tvm_ffi.structural_equal(module, tvm.script.from_source(module.script())))
    except Exception:  # noqa: BLE001  # a module TVM cannot print and re-read is not a case
        return False


class Recorder:
    def __init__(self, out: Path):
        self.out = out
        self.counts: dict[str, int] = {}
        self.errors: list[str] = []
        self.test = "unknown"
        self.index = 0
        self.depth = 0

    def first_time(self, text: str) -> bool:
        """Whether `text` is new to --out, over every run into it (a file per key, so that
        runs one test file at a time, as TVM's crashes require, share what they saw)."""
        key = self.out / ".keys" / hashlib.sha1(text.encode()).hexdigest()
        if key.exists():
            return False
        key.parent.mkdir(parents=True, exist_ok=True)
        key.touch()
        return True

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def install(self) -> None:
        original = tvm.ir.transform.Pass.__call__
        recorder = self

        def call(self: Any, mod: Any) -> Any:
            name = str(self.info.name)
            if recorder.depth or name in ("sequential", "Sequential"):
                return original(self, mod)
            recorder.depth += 1
            try:
                result = original(self, mod)
            except Exception as error:
                recorder.depth -= 1
                recorder.note(name, mod, None, error)
                raise
            recorder.depth -= 1
            recorder.note(name, mod, result, None)
            return result

        tvm.ir.transform.Pass.__call__ = call

    def install_programs(self, folder: Path) -> None:
        """Also keep every module or function TVMScript's parser returns (`--programs`)."""
        from tvm.script.parser.ir import entry as ir_entry
        from tvm.tirx.script.parser import entry as tir_entry

        recorder = self
        folder.mkdir(parents=True, exist_ok=True)
        for module in (ir_entry, tir_entry):
            original = module.parse

            def parse(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                result = _original(*args, **kwargs)
                try:
                    recorder.keep_program(folder, result)
                except Exception:  # noqa: BLE001  # one odd program must not stop the run
                    recorder.count("program recorder error")
                return result

            module.parse = parse

    def keep_program(self, folder: Path, result: Any) -> None:
        if isinstance(result, tvm.tirx.PrimFunc):
            result = tvm.IRModule({"main": result})
        if not isinstance(result, tvm.IRModule):
            return
        text = result.script()
        if not self.first_time(text):
            return
        if not _round_trips(result):
            self.count("program does not round-trip in TVM")
            return
        self.index += 1
        (folder / f"{self.test}__{self.index}.tir").write_text(text)
        self.count("program")

    def note(self, name: str, mod: Any, result: Any, error: Exception | None) -> None:
        try:
            self.write(name, mod, result, error)
        except Exception:  # noqa: BLE001  # one odd module must not stop the recording
            self.count("recorder error")
            self.errors.append(f"{self.test}: {traceback.format_exc()}")

    def write(self, name: str, mod: Any, result: Any, error: Exception | None) -> None:
        if not isinstance(mod, tvm.IRModule):
            self.count("not a module")
            return
        input_text = mod.script()
        if not self.first_time(f"{name}\n{input_text}"):
            self.count("duplicate")
            return
        if not _round_trips(mod):
            self.count("input does not round-trip in TVM")
            return
        if error is None and not (isinstance(result, tvm.IRModule) and _round_trips(result)):
            self.count("output does not round-trip in TVM")
            return
        self.index += 1
        case = self.out / tirc_name(name) / f"{self.test}__{self.index}"
        case.mkdir(parents=True, exist_ok=True)
        (case / "input.tir").write_text(input_text)
        if error is None:
            (case / "expected.tir").write_text(result.script())
        else:
            message = str(error)
            line = next((ln for ln in message.splitlines() if "Error" in ln), message[:200])
            (case / "error.txt").write_text(line.strip() + "\n")
        config = {str(k): str(v) for k, v in tvm.transform.PassContext.current().config.items()}
        target = tvm.target.Target.current(allow_none=True)
        meta = {
            "pass": name,
            "tirc_pass": tirc_name(name),
            "config": config,
            "target": None if target is None else str(target),
            "test": self.test,
        }
        (case / "case.json").write_text(json.dumps(meta, indent=1) + "\n")
        self.count("error case" if error is not None else "case")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: Any) -> Any:
        path = Path(str(item.fspath))
        self.test = re.sub(r"[^A-Za-z0-9_]+", "_", f"{path.stem}__{item.name}").strip("_")
        self.index = 0
        outcome = yield
        self.count("test failed in TVM" if outcome.excinfo is not None else "test passed")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", nargs="+", help="TVM test files or folders")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("-k", default=None, help="pytest -k expression")
    parser.add_argument(
        "--programs", type=Path, default=None, help="also keep every parsed program here"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    recorder = Recorder(args.out)
    # what a test file builds while it is imported is named after the file
    recorder.test = "__".join(Path(test.split("::")[0]).stem for test in args.tests)[:120]
    recorder.install()
    if args.programs is not None:
        recorder.install_programs(args.programs)
    pytest_args = ["-q", "-p", "no:cacheprovider", "--continue-on-collection-errors", *args.tests]
    if args.k:
        pytest_args += ["-k", args.k]
    pytest.main(pytest_args, plugins=[recorder])
    for text in recorder.errors[:20]:
        print(text, file=sys.stderr)
    for what, number in sorted(recorder.counts.items()):
        print(f"{what}: {number}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
