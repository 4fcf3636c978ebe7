"""Regenerates the TVM halves of the golden pairs: run under Apache TVM 0.27's Python,

    /work/tvm-venv/bin/python tests/transform/golden/oracle_passes.py

For each `<pass>/<name>.before.tir` whose `.after.tir` is not marked `# by hand`, applies
TVM's pass of the same meaning and writes what TVM prints. Options are not translated:
pairs with options are written by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tvm
from tvm import s_tir, tirx

TVM_PASSES = {
    "lower-init-block": s_tir.transform.LowerInitBlock,
    "plan-buffer-allocation": s_tir.transform.PlanAndUpdateBufferAllocationLocation,
    "convert-blocks-to-opaque": s_tir.transform.ConvertBlocksToOpaque,
    "compact-buffer-allocation": s_tir.transform.CompactBufferAllocation,
    "lower-match-buffer": s_tir.transform.LowerMatchBuffer,
    "simplify": s_tir.transform.StmtSimplify,
    "lower-opaque-block": s_tir.transform.LowerOpaqueBlock,
    "flatten-buffer": tirx.transform.FlattenBuffer,
    "vectorize-loop": tirx.transform.VectorizeLoop,
    "unroll-loop": tirx.transform.UnrollLoop,
    "remove-no-op": tirx.transform.RemoveNoOp,
}


def main() -> int:
    root = Path(__file__).parent
    for before in sorted(root.glob("*/*.before.tir")):
        after = before.with_name(before.name.replace(".before.", ".after."))
        if after.exists() and after.read_text().startswith("# by hand"):
            continue
        text = before.read_text()
        name = next(
            line.split(":", 1)[1].strip()
            for line in text.splitlines()
            if line.startswith("# pass:")
        )
        module = TVM_PASSES[name]()(tvm.script.from_source(text))
        header = f"# {before.name} after {name}, as Apache TVM 0.27 prints it\n"
        after.write_text(header + module.script() + "\n")
        print(f"wrote {after.relative_to(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
