"""Regenerate the expected halves of the loop primitives' golden pairs with Apache TVM 0.27.

Run under a Python that has TVM: `/work/tvm-venv/bin/python tests/schedule/golden/oracle_loops.py`.
For each `<name>.before.tir` with a `# plan:` header and no `# error:` header, writes
`<name>.after.tir`: TVM's result of the plan. Kept free of tirc imports.
"""

import json
import pathlib
import sys

import tvm
from tvm import s_tir
from tvm.s_tir.schedule import Trace

HERE = pathlib.Path(__file__).resolve().parent
# the folders of test_golden_loops.py; plans there are in TVM's trace form
FOLDERS = (
    "split",
    "fuse",
    "reorder",
    "merge",
    "add_unit_loop",
    "reorder_block_iter_var",
    "loop_partition",
)


def header(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def main() -> None:
    befores = [path for folder in FOLDERS for path in sorted(HERE.glob(f"{folder}/*.before.tir"))]
    for before in befores:
        text = before.read_text()
        plan = header(text, "plan")
        if plan is None or header(text, "error") is not None:
            continue
        mod = tvm.script.from_source(text)
        if not isinstance(mod, tvm.IRModule):
            mod = tvm.IRModule({"main": mod})
        sch = s_tir.Schedule(mod)
        Trace.apply_json_to_schedule([json.loads(plan), []], sch)
        after = before.with_name(before.name.replace(".before.", ".after."))
        note = f"# {before.name} after its plan, as Apache TVM 0.27 prints it\n"
        after.write_text(note + sch.mod.script())
        print(after.relative_to(HERE), file=sys.stderr)


if __name__ == "__main__":
    main()
