"""Regenerates the TVM halves of the golden pairs: run under Apache TVM 0.27's Python,

    /work/tvm-venv/bin/python tests/transform/golden/oracle_passes.py [FOLDER ...]

For each `<pass>/<name>.before.tir` whose `.after.tir` is not marked `# by hand`, applies
TVM's pass of the same meaning and writes what TVM prints. A header may name several passes
(`a,b`); options are translated only for passes TVM configures through its PassContext
(`PASS_CONFIGS`); other pairs with options are written by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tvm
from tvm import s_tir, tirx


def _lower_thread_allreduce():  # type: ignore[no-untyped-def]
    """TVM's pass reads the warp size from the function's target: lower for cuda, then drop
    the target again."""

    def run(module):  # type: ignore[no-untyped-def]
        target = tvm.target.Target("cuda")
        functions = {g: f.with_attr("target", target) for g, f in module.functions.items()}
        module = s_tir.transform.LowerThreadAllreduce()(tvm.IRModule(functions))
        return tvm.IRModule({g: f.without_attr("target") for g, f in module.functions.items()})

    return run


def _thread_sync():  # type: ignore[no-untyped-def]
    """TVM's ThreadSync("shared") also reads the function's target: run it as for cuda."""

    def run(module):  # type: ignore[no-untyped-def]
        target = tvm.target.Target("cuda")
        functions = {g: f.with_attr("target", target) for g, f in module.functions.items()}
        module = s_tir.transform.ThreadSync("shared")(tvm.IRModule(functions))
        return tvm.IRModule({g: f.without_attr("target") for g, f in module.functions.items()})

    return run


TVM_PASSES = {
    "thread-sync": _thread_sync,
    "lower-cross-thread-reduction": s_tir.transform.LowerCrossThreadReduction,
    "lower-thread-allreduce": _lower_thread_allreduce,
    "lower-init-block": s_tir.transform.LowerInitBlock,
    "plan-buffer-allocation": s_tir.transform.PlanAndUpdateBufferAllocationLocation,
    "convert-blocks-to-opaque": s_tir.transform.ConvertBlocksToOpaque,
    "compact-buffer-allocation": s_tir.transform.CompactBufferAllocation,
    "lower-match-buffer": s_tir.transform.LowerMatchBuffer,
    "simplify": s_tir.transform.StmtSimplify,
    "lower-opaque-block": s_tir.transform.LowerOpaqueBlock,
    "flatten-buffer": tirx.transform.FlattenBuffer,
    "canonicalize-loop": s_tir.transform.CanonicalizeLoop,
    "lift-thread-binding": s_tir.transform.LiftThreadBinding,
    "unify-thread-binding": s_tir.transform.UnifyThreadBinding,
    "hoist-if-then-else": s_tir.transform.HoistIfThenElse,
    "vectorize-loop": tirx.transform.VectorizeLoop,
    "unroll-loop": tirx.transform.UnrollLoop,
    "common-subexpr-elim": tirx.transform.CommonSubexprElim,
    "remove-no-op": tirx.transform.RemoveNoOp,
    "inject-software-pipeline": s_tir.transform.InjectSoftwarePipeline,
    "inject-virtual-thread": s_tir.transform.InjectVirtualThread,
    "inject-double-buffer": s_tir.transform.InjectDoubleBuffer,
    "storage-rewrite": tirx.transform.StorageRewrite,
    "merge-shared-memory-allocations": s_tir.transform.MergeSharedMemoryAllocations,
    "loop-partition": s_tir.transform.LoopPartition,
    "inject-permuted-layout": s_tir.transform.InjectPermutedLayout,
    "narrow-datatype": lambda: tirx.transform.NarrowDataType(32),
}

# passes whose options are TVM PassContext settings: the config key they live under
PASS_CONFIGS = {
    "loop-partition": "s_tir.LoopPartition",
    "unroll-loop": "tirx.UnrollLoop",
    "simplify": "tirx.StmtSimplify",
}


def _option(text: str) -> bool | int | str:
    """An option's value as TVM's PassContext config takes it: a bool, an int or a string."""
    if text in ("true", "false"):
        return text == "true"
    return int(text) if text.lstrip("-").isdigit() else text


def _apply(spelled, module):  # type: ignore[no-untyped-def]
    """`module` after the passes spelled `a,b{opt=true}` in a header."""
    items, depth, current = [], 0, ""
    for char in spelled + ",":
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        current += char
    for item in filter(None, items):
        name, _, options = item.partition("{")
        pairs = [pair.split("=") for pair in options.rstrip("}").split(",") if pair]
        values = {key.strip(): _option(v.strip()) for key, v in pairs}
        config = {PASS_CONFIGS[name]: values} if values else {}
        with tvm.transform.PassContext(config=config):
            module = TVM_PASSES[name]()(module)
    return module


def tvm_spelling(text: str) -> str:
    """TVM 0.27 spells ldmatrix `T.ptx_legacy.ldmatrix`; tirc reads its older spelling."""
    return text.replace('T.ptx_ldmatrix("float16", ', 'T.ptx_legacy.ldmatrix("float16", ')


def tirc_spelling(text: str) -> str:
    """The inverse of tvm_spelling (TVM prints ldmatrix without its dtype)."""
    return text.replace("T.ptx_legacy.ldmatrix(", 'T.ptx_ldmatrix("float16", ')


def main() -> int:
    root = Path(__file__).parent
    only = sys.argv[1:]  # folder names, to regenerate only those
    for before in sorted(root.glob("*/*.before.tir")):
        if only and before.parent.name not in only:
            continue
        after = before.with_name(before.name.replace(".before.", ".after."))
        if after.exists() and after.read_text().startswith("# by hand"):
            continue
        text = before.read_text()
        name = next(
            line.split(":", 1)[1].strip()
            for line in text.splitlines()
            if line.startswith("# pass:")
        )
        module = _apply(name, tvm.script.from_source(tvm_spelling(text)))
        header = f"# {before.name} after {name}, as Apache TVM 0.27 prints it\n"
        after.write_text(header + tirc_spelling(module.script()) + "\n")
        print(f"wrote {after.relative_to(root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
