"""Regenerate the expected halves of the loop primitives' golden pairs with Apache TVM 0.27.

Run under a Python that has TVM: `/work/tvm-venv/bin/python tests/schedule/golden/oracle_loops.py`.
For each `<name>.before.tir` with a `# plan:` header and no `# error:` header, writes
`<name>.after.tir`: TVM's result of the plan. Kept free of tirc imports.
"""

import groups
from oracle_common import regenerate_accepted

FOLDERS = groups.LOOPS


def main() -> None:
    regenerate_accepted(FOLDERS)


if __name__ == "__main__":
    main()
