"""Regenerate the expected halves of the cache and buffer primitives' golden pairs with
Apache TVM 0.27, and check that TVM refuses the plans marked `# error:`.

Run under a Python that has TVM: `/work/tvm-venv/bin/python tests/schedule/golden/oracle_caches.py`.
Index maps in plans are TVMScript text (tirc's form); TVM's trace reader wants its own
serialized objects, so they are converted first. Kept free of tirc imports.
"""

import json
import pathlib
import sys

import tvm
from tvm import s_tir
from tvm.s_tir.schedule import Trace
from tvm.script import tirx as T

HERE = pathlib.Path(__file__).resolve().parent
# the folders of test_golden_caches.py; plans there are in TVM's trace form
FOLDERS = (
    "cache_read",
    "cache_write",
    "cache_inplace",
    "set_scope",
    "storage_align",
    "unsafe_set_dtype",
    "reindex",
    "reindex_cache_read",
    "reindex_cache_write",
    "annotate_buffer_access",
    "unsafe_hide_buffer_access",
)


def header(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    return None


def tvm_value(value: object) -> object:
    """Index-map text as TVM's serialized IndexMap; everything else as it is."""
    if isinstance(value, list):
        return [tvm_value(item) for item in value]
    if isinstance(value, str) and value.startswith("T.index_map"):
        return tvm.ir.save_json(eval(value, {"T": T}))  # noqa: S307 - our own plan text
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
            if error is None:
                raise
            reason = str(failure).splitlines()[-1][:90]
            print(f"{before.relative_to(HERE)}: TVM refuses too: {reason}", file=sys.stderr)
            continue
        if error is not None:
            raise SystemExit(f"{before}: TVM accepts a plan marked as an error")
        after = before.with_name(before.name.replace(".before.", ".after."))
        note = f"# {before.name} after its plan, as Apache TVM 0.27 prints it\n"
        after.write_text(note + sch.mod.script())
        print(after.relative_to(HERE), file=sys.stderr)


if __name__ == "__main__":
    main()
