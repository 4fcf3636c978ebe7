"""Regenerate the expected halves of the layout primitives' golden pairs with Apache TVM 0.27.

Run under a Python that has TVM: `/work/tvm-venv/bin/python tests/schedule/golden/oracle_layout.py`.
For each `<name>.before.tir` with a `# plan:` header, writes `<name>.after.tir` (TVM's result
of the plan), or, for a `# error:` case, checks that TVM refuses the plan too and prints its
message. Index maps in plans are TVMScript text; they are evaluated to TVM's IndexMap objects
(TVM's trace reader takes their JSON). Kept free of tirc imports.
"""

import json
import pathlib
import sys

import tvm
from tvm import s_tir
from tvm.s_tir.schedule import Trace
from tvm.script import tirx as T

HERE = pathlib.Path(__file__).resolve().parent
FOLDERS = ("transform_block_layout", "transform_layout", "pad_einsum", "decompose_padding")


def header(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def tvm_value(value):  # type: ignore[no-untyped-def]
    """Index-map text as the JSON of TVM's IndexMap object, which its trace reader expects."""
    if isinstance(value, str) and value.startswith(("T.index_map(", "lambda")):
        return tvm.ir.save_json(eval(value, {"T": T}))  # noqa: S307 - our own golden plans
    if isinstance(value, list):
        return [tvm_value(item) for item in value]
    return value


def main() -> None:
    befores = [path for folder in FOLDERS for path in sorted(HERE.glob(f"{folder}/*.before.tir"))]
    for before in befores:
        text = before.read_text()
        plan = [
            [i[0], tvm_value(i[1]), tvm_value(i[2]), i[3]] for i in json.loads(header(text, "plan"))
        ]
        mod = tvm.script.from_source(text)
        if not isinstance(mod, tvm.IRModule):
            mod = tvm.IRModule({"main": mod})
        sch = s_tir.Schedule(mod)
        error = header(text, "error")
        try:
            Trace.apply_json_to_schedule([plan, []], sch)
        except Exception as failure:  # noqa: BLE001 - TVM raises several kinds
            lines = [line for line in str(failure).splitlines() if "Error message" in line]
            print(f"{before.relative_to(HERE)}: TVM refuses: {(lines or [str(failure)])[-1][:300]}")
            if error is None:
                raise
            continue
        if error is not None:
            print(f"{before.relative_to(HERE)}: TVM ACCEPTS a plan tirc refuses", file=sys.stderr)
            continue
        after = before.with_name(before.name.replace(".before.", ".after."))
        note = f"# {before.name} after its plan, as Apache TVM 0.27 prints it\n"
        after.write_text(note + sch.mod.script())
        print(after.relative_to(HERE), file=sys.stderr)


if __name__ == "__main__":
    main()
