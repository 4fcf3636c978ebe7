"""Regenerate the expected halves of the golden pairs of the inlining and reduction
primitives with Apache TVM 0.27 (the oracle).

Run under a Python that has TVM: `/work/tvm-venv/bin/python
tests/schedule/golden/oracle_reductions.py`. For each `<name>.before.tir` of those folders
with a `# plan:` header (and `# decisions:` for sampling steps) and no `# error:` header,
writes `<name>.after.tir`: TVM's result. Cases tirc refuses but TVM accepts are listed
(tirc is stricter on purpose there). Kept free of tirc imports.
"""

import groups
from oracle_common import regenerate

FOLDERS = groups.REDUCTIONS


def main() -> None:
    regenerate(FOLDERS)


if __name__ == "__main__":
    main()
