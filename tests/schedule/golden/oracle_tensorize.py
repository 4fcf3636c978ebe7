"""Regenerate the expected halves of the blockize and tensorize golden pairs with Apache TVM 0.27.

Run under a Python that has TVM:
`/work/tvm-venv/bin/python tests/schedule/golden/oracle_tensorize.py`.
For each `<name>.before.tir` with a `# plan:` header and no `# error:` header, writes
`<name>.after.tir`: TVM's result of the plan, with TVM's own registered intrinsics under the
names tirc's library uses. TVM 0.27 spells the PTX builtins of the mma family
`T.ptx_legacy.*` / `T.cuda.*_legacy`, which tirc reads in their older spelling
(`T.ptx_mma("float32", ...)`); those calls are rewritten here. Kept free of tirc imports.
"""

import re

import groups
import tvm.s_tir.tensor_intrin  # noqa: F401  (registers TVM's intrinsics)
from oracle_common import regenerate_accepted

FOLDERS = groups.TENSORIZE
ACCUMULATOR = {"fp32": "float32", "fp16": "float16"}


def older_spelling(text: str) -> str:
    """TVM 0.27's PTX builtin calls in the spelling tirc parses (dtype as first argument)."""

    def mma(match: re.Match) -> str:
        args = match.group(1)
        accumulator = re.findall(r'"(fp\d+)"', args)[2]
        return f'T.ptx_mma("{ACCUMULATOR[accumulator]}", {args})'

    text = re.sub(r"T\.ptx_legacy\.mma\((.*)\)", mma, text)
    text = text.replace("T.ptx_legacy.ldmatrix(", 'T.ptx_ldmatrix("float16", ')

    def store(match: re.Match) -> str:
        dtype = re.search(r'T\.type_annotation\("(\w+)"\)', match.group(1)).group(1)
        return f'T.mma_store("{dtype}", {match.group(1)})'

    text = re.sub(r"T\.cuda\.mma_store_legacy\((.*)\)", store, text)
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):  # the fill's dtype is that of the view it fills
        if "T.cuda.mma_fill_legacy(" in line:
            view = next(v for v in reversed(lines[:number]) if "T.match_buffer(" in v)
            found = re.search(r'\(32, 8\), "(\w+)"', view)
            dtype = found.group(1) if found else "float32"
            lines[number] = line.replace("T.cuda.mma_fill_legacy(", f'T.mma_fill("{dtype}", ')
    text = "".join(lines)
    return text


def main() -> None:
    regenerate_accepted(FOLDERS, older_spelling)


if __name__ == "__main__":
    main()
