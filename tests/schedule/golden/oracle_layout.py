"""Regenerate the expected halves of the layout primitives' golden pairs with Apache TVM 0.27.

Run under a Python that has TVM: `/work/tvm-venv/bin/python tests/schedule/golden/oracle_layout.py`.
For each `<name>.before.tir` with a `# plan:` header, writes `<name>.after.tir` (TVM's result
of the plan), or, for a `# error:` case, checks that TVM refuses the plan too and prints its
message. Index maps in plans are TVMScript text; they are evaluated to TVM's IndexMap objects
(TVM's trace reader takes their JSON). Kept free of tirc imports.
"""

import json
import sys

import groups
from oracle_common import HERE, befores, header, schedule, tvm_plan, write_after
from tvm.s_tir.schedule import Trace

FOLDERS = groups.LAYOUTS


def main() -> None:
    for before in befores(FOLDERS):
        text = before.read_text()
        plan = tvm_plan(header(text, "plan"))
        sch = schedule(text)
        error = header(text, "error")
        try:
            decisions = json.loads(header(text, "decisions") or "[]")
            Trace.apply_json_to_schedule([plan, decisions], sch)
        except Exception as failure:  # noqa: BLE001 - TVM raises several kinds
            lines = [line for line in str(failure).splitlines() if "Error message" in line]
            print(f"{before.relative_to(HERE)}: TVM refuses: {(lines or [str(failure)])[-1][:300]}")
            if error is None:
                raise
            continue
        if error is not None:
            print(f"{before.relative_to(HERE)}: TVM ACCEPTS a plan tirc refuses", file=sys.stderr)
            continue
        after = write_after(before, sch.mod.script())
        print(after.relative_to(HERE), file=sys.stderr)


if __name__ == "__main__":
    main()
