"""Regenerate the expected halves of the cache and buffer primitives' golden pairs with
Apache TVM 0.27, and check that TVM refuses the plans marked `# error:`.

Run under a Python that has TVM: `/work/tvm-venv/bin/python tests/schedule/golden/oracle_caches.py`.
Index maps in plans are TVMScript text (tirc's form); TVM's trace reader wants its own
serialized objects, so they are converted first. Kept free of tirc imports.
"""

import sys

import groups
from oracle_common import HERE, befores, header, schedule, tvm_plan, write_after
from tvm.s_tir.schedule import Trace

FOLDERS = groups.CACHES


def main() -> None:
    for before in befores(FOLDERS):
        text = before.read_text()
        plan = tvm_plan(header(text, "plan"))
        sch = schedule(text)
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
        after = write_after(before, sch.mod.script())
        print(after.relative_to(HERE), file=sys.stderr)


if __name__ == "__main__":
    main()
