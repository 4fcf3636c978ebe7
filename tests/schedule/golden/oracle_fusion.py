"""Regenerate the expected halves of the golden pairs of the block-fusing primitives
(fuse_reduction_epilogue) with Apache TVM 0.27 (the oracle).

Run under a Python that has TVM: `/work/tvm-venv/bin/python
tests/schedule/golden/oracle_fusion.py`. For each `<name>.before.tir` of those folders
with a `# plan:` header (and `# decisions:` for sampling steps) and no `# error:` header,
writes `<name>.after.tir`: TVM's result. Cases tirc refuses but TVM accepts are listed
(tirc is stricter on purpose there). Kept free of tirc imports.
"""

import re

import groups
from oracle_common import regenerate

FOLDERS = groups.FUSION


def _valid(script: str) -> str:
    """TVM's cache_index gives every index buffer strides (1,), which for a buffer of more
    dimensions does not parse back (in TVM either); such buffers are left compact."""
    lines = []
    for line in script.splitlines():
        match = re.search(r"sblock_alloc_buffer\(\(([^)]*)\)", line)
        if match and "," in match.group(1).strip(", "):
            line = line.replace(", strides=(1,)", "")
        lines.append(line)
    return "\n".join(lines) + ("\n" if script.endswith("\n") else "")


def main() -> None:
    regenerate(FOLDERS, _valid)


if __name__ == "__main__":
    main()
