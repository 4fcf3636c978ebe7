"""Random plans against Apache TVM 0.27: build plans step by step with tirc over programs,
apply each in TVM through its trace reader, and compare: both accept and agree structurally,
or both refuse.

    .venv/bin/python tests/schedule/tvm_random_plans.py --count 2000 --seed 2026 --out /tmp/rp

Programs: the shared corpus inputs, the samples (samples/*.tir, samples/gpu/*.tir) and
generated elementwise / reduction / matmul / conv programs with constant shapes or one
symbolic dimension (random_programs.py), each as tirc prints it (out/inputs/). Each plan takes
one to six steps drawn from the program as tirc left it, over split, fuse, reorder,
compute_at, reverse_compute_at, compute_inline, reverse_compute_inline, cache_read,
cache_write, cache_inplace, reindex, reindex_cache_read/write, read_at, write_at, set_scope,
storage_align, rfactor, decompose_reduction, decompose_padding, parallel, vectorize, unroll,
bind, annotate, unannotate, blockize, add_unit_loop, loop_partition, transform_layout,
transform_block_layout, reorder_block_iter_var, pad_einsum and rolling_buffer; a step tirc
refuses ends the plan. TVM runs in its own venv (`--tvm`, `$TIRC_TVM_PYTHON`), restarted past
a plan that crashes it; a plan it refuses is replayed step by step to tell an earlier refusal.
Prints the tally, the deliberate differences among the disagreements (DELIBERATE, documented
under each primitive in docs/plans.md) and the disagreements (`--show N`); plans, results and
programs stay under `--out`, the disagreements in out/disagreements.jsonl.
tests/schedule/test_tvm_random_plans.py replays a seeded slice in CI.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.schedule.random_programs import GENERATORS  # noqa: E402
from tirc.diagnostics import DiagnosticError  # noqa: E402
from tirc.ir.expr import IntImm  # noqa: E402
from tirc.ir.function import IRModule  # noqa: E402
from tirc.ir.stmt import For, SBlock, SBlockRealize, SeqStmt  # noqa: E402
from tirc.ir.structural import find_difference  # noqa: E402
from tirc.schedule.apply import apply_plan  # noqa: E402
from tirc.schedule.plan import read_plan  # noqa: E402
from tirc.text import parse, print_module  # noqa: E402

CORPUS = ROOT.parent / "shared" / "conformance" / "cases"
TVM_PYTHON = os.environ.get("TIRC_TVM_PYTHON", "/work/tvm-venv/bin/python")

# Run by TVM's Python: applies each plan of plans.jsonl not yet in tvm.jsonl. Index maps go
# in as lambda text (as tirc reads them) and reach TVM's trace reader as its JSON object graph,
# over the block's index type (as TVM's own transform_layout builds them).
# A plan TVM refuses is tried again step by step, to tell whether TVM refused its last step
# (as tirc did) or an earlier one.
TVM_SIDE = textwrap.dedent(
    """
    import json, os, sys, tvm
    from tvm import s_tir
    from tvm.s_tir.schedule import Trace
    from tvm.tirx import IndexMap
    MAP_INPUT = {"TransformLayout": 1, "ReindexCacheRead": 1, "ReindexCacheWrite": 1}
    def index_map(text, dtype):
        return tvm.ir.save_json(IndexMap.from_func(eval(text), index_dtype=dtype))
    def tvm_trace(plan, trace):
        out = []
        for number, (kind, inputs, attrs, outputs) in enumerate(trace):
            inputs, attrs = list(inputs), list(attrs)
            dtype = plan["index_dtypes"].get(str(number), "int32")
            if kind in MAP_INPUT:
                inputs[MAP_INPUT[kind]] = index_map(inputs[MAP_INPUT[kind]], dtype)
            if kind == "TransformBlockLayout":
                attrs[0] = index_map(attrs[0], dtype)
            out.append([kind, inputs, attrs, outputs])
        return out
    def apply(plan, trace):
        mod = tvm.script.from_source(open(plan["input"]).read())
        if not isinstance(mod, tvm.IRModule):
            mod = tvm.IRModule({"main": mod})
        sch = s_tir.Schedule(mod)
        try:
            Trace.apply_json_to_schedule([tvm_trace(plan, trace), []], sch)
            return sch, "ok"
        except Exception as error:
            text = str(error)
            at = text.find("Error message")
            if at < 0:  # an internal failure: its first line says what, the end where
                return None, "refused: " + text[:150] + " ... " + text[-150:]
            return None, "refused: " + text[at:at + 300]
    out = sys.argv[1]
    if len(sys.argv) > 2:  # fresh ID: the plan's last step on a schedule made afresh
        plan = next(p for p in map(json.loads, open(f"{out}/plans.jsonl"))
                    if p["id"] == int(sys.argv[2]))
        last = plan["starts"][-1]
        sch, status = apply(plan, plan["trace"][:last])
        if sch is not None:
            fresh = s_tir.Schedule(tvm.script.from_source(sch.mod.script()))
            try:
                Trace.apply_json_to_schedule([tvm_trace(plan, plan["trace"])[last:], []], fresh)
                status = "ok"
            except Exception as error:
                status = "refused: " + str(error)[-200:]
        print(status.replace("\\n", " "))
        sys.exit(0)
    done = set()
    if os.path.exists(f"{out}/tvm.jsonl"):
        done = {json.loads(line)["id"] for line in open(f"{out}/tvm.jsonl")}
    results = open(f"{out}/tvm.jsonl", "a")
    for line in open(f"{out}/plans.jsonl"):
        plan = json.loads(line)
        if plan["id"] in done:
            continue
        open(f"{out}/current", "w").write(str(plan["id"]))
        sch, status = apply(plan, plan["trace"])
        if sch is not None:
            open(f"{out}/p{plan['id']}.tvm.tir", "w").write(sch.mod.script())
        else:
            for number, start in enumerate(plan["starts"][1:], 1):
                early = apply(plan, plan["trace"][:start])[1]
                if early != "ok":
                    status = f"refused early, at step {number}: " + early[len("refused: "):]
                    break
        results.write(json.dumps({"id": plan["id"], "tvm": status}) + "\\n")
        results.flush()
    """
)


THREADS = ("blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y", "vthread.x")
SCOPES = ("shared", "local", "global")
ANNOTATIONS = (
    ("pragma_auto_unroll_max_step", 16),
    ("pragma_unroll_explicit", 1),
    ("meta_schedule.tiling_structure", '"SSRSRS"'),
    ("software_pipeline_stage", [0, 0, 1]),
    ("pragma_ratio", 0.5),
)
# each kind of step once, the loop-structure ones twice
KINDS = (
    ["split", "fuse", "reorder", "compute_at", "reverse_compute_at", "compute_inline"]
    + ["reverse_compute_inline", "cache_read", "cache_write", "rfactor", "decompose_reduction"]
    + ["parallel", "vectorize", "unroll", "blockize", "set_scope", "reindex", "add_unit_loop"]
    + ["loop_partition", "bind", "annotate", "unannotate", "storage_align", "decompose_padding"]
    + ["transform_layout", "transform_block_layout", "cache_inplace", "reindex_cache_read"]
    + ["reindex_cache_write", "read_at", "write_at", "rolling_buffer", "reorder_block_iter_var"]
    + ["pad_einsum", "split", "fuse", "reorder", "compute_at", "blockize", "rfactor"]
)


class _Names:
    def __init__(self) -> None:
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"


def _blocks(module: IRModule) -> list[tuple[str, list[For], SBlock]]:
    """(name, loops above it in its scope, block) for every block but the root."""
    found: list[tuple[str, list[For], SBlock]] = []

    def visit(node: object, loops: list[For]) -> None:
        if isinstance(node, For):
            visit(node.body, loops + [node])
        elif isinstance(node, SBlockRealize):
            if node.block.name != "root":
                found.append((node.block.name, loops, node.block))
            visit(node.block.body, [])
        elif isinstance(node, SeqStmt):
            for stmt in node.stmts:
                visit(stmt, loops)
        else:
            for name in ("body", "then_case", "else_case"):
                child = getattr(node, name, None)
                if child is not None:
                    visit(child, loops)

    visit(module[module.names()[0]].body, [])
    return found


def _extent(expr: object) -> int | None:
    return expr.value if isinstance(expr, IntImm) else None


def _layout_map(rng: random.Random, shape: tuple[object, ...]) -> str:
    """An index map over a buffer of this shape: a permutation, a dimension split or the last
    two fused (a split that does not divide the dimension is refused by both: no pad value)."""
    names = [f"a{axis}" for axis in range(len(shape))]
    out = list(names)
    choice = rng.choice(["permute", "split", "fuse", "identity"])
    if choice == "permute":
        rng.shuffle(out)
    elif choice == "split" and names:
        axis = rng.randrange(len(names))
        factor = rng.choice([2, 4, 8, 3])
        out[axis : axis + 1] = [f"{names[axis]} // {factor}", f"{names[axis]} % {factor}"]
    elif choice == "fuse" and len(names) >= 2 and _extent(shape[-1]) is not None:
        out[-2:] = [f"{names[-2]} * {_extent(shape[-1])} + {names[-1]}"]
    return f"lambda {', '.join(names)}: ({', '.join(out)},)"


def _block_map(rng: random.Random, block: SBlock) -> str:
    """An index map over a block's iterators: a permutation, or two adjacent ones fused."""
    names = [f"v{axis}" for axis in range(len(block.iter_vars))]
    out = list(names)
    if len(names) >= 2 and rng.random() < 0.4:
        axis = rng.randrange(len(names) - 1)
        dom = block.iter_vars[axis + 1].dom
        extent = _extent(dom.extent) if dom is not None else None
        if extent is not None:
            out[axis : axis + 2] = [f"{names[axis]} * {extent} + {names[axis + 1]}"]
    else:
        rng.shuffle(out)
    return f"lambda {', '.join(names)}: ({', '.join(out)},)"


MAP_KINDS = ("TransformLayout", "TransformBlockLayout", "ReindexCacheRead", "ReindexCacheWrite")


def _index_dtype(module: IRModule, get_block: list[Any]) -> str:
    """The index type TVM builds a step's index map over: its block's first iterator's."""
    for name, _, block in _blocks(module):
        if name == get_block[2][0] and block.iter_vars:
            return str(block.iter_vars[0].var.dtype)
    return "int32"


def _step(rng: random.Random, module: IRModule, names: _Names, func: str) -> list[list[Any]] | None:
    """The instructions of one random step (handles fetched afresh), or None."""
    blocks = _blocks(module)
    if not blocks:
        return None
    name, loops, block = rng.choice(blocks)
    b = names.fresh("b")
    ls = [names.fresh("l") for _ in loops]
    steps: list[list[Any]] = [["GetSBlock", [], [name, func], [b]]]
    if loops:
        steps.append(["GetLoops", [b], [], ls])
    kind = rng.choice(KINDS)
    scope = rng.choice(SCOPES)
    side = rng.choice(["reads", "writes"])
    regions = getattr(block, side)
    index = rng.randrange(len(regions)) if regions else 0
    if kind == "split" and loops:
        factor = rng.choice([2, 3, 4, 8, 16])
        factors = rng.choice([["None", factor], [factor, "None"], ["None", 2, factor]])
        outs = [names.fresh("l") for _ in factors]
        steps.append(["Split", [rng.choice(ls), *factors], [True, False], outs])
    elif kind == "fuse" and len(loops) >= 2:
        start = rng.randrange(len(loops) - 1)
        count = rng.randint(2, min(3, len(loops) - start))
        steps.append(["Fuse", ls[start : start + count], [True], [names.fresh("l")]])
    elif kind == "reorder" and len(loops) >= 2:
        chosen = sorted(rng.sample(range(len(loops)), rng.choice([2, 2, min(3, len(loops))])))
        order = [ls[position] for position in chosen]
        while order == [ls[position] for position in chosen]:
            rng.shuffle(order)
        steps.append(["Reorder", order, [], []])
    elif kind in ("compute_at", "reverse_compute_at"):
        other = rng.choice(blocks)
        if not other[1] or other[0] == name:
            return None
        ob, ols = names.fresh("b"), [names.fresh("l") for _ in other[1]]
        steps.append(["GetSBlock", [], [other[0], func], [ob]])
        steps.append(["GetLoops", [ob], [], ols])
        tvm_name = "ComputeAt" if kind == "compute_at" else "ReverseComputeAt"
        steps.append([tvm_name, [b, rng.choice(ols)], [rng.choice([True, False]), -1], []])
    elif kind == "compute_inline":
        steps.append(["ComputeInline", [b], [], []])
    elif kind == "reverse_compute_inline":
        steps.append(["ReverseComputeInline", [b], [], []])
    elif kind == "cache_read" and block.reads:
        index = rng.randrange(len(block.reads))
        steps.append(["CacheRead", [b, []], [index, scope], [names.fresh("b")]])
    elif kind == "cache_write" and block.writes:
        index = rng.randrange(len(block.writes))
        steps.append(["CacheWrite", [b, []], [index, scope], [names.fresh("b")]])
    elif kind == "rfactor" and loops:
        steps.append(["RFactor", [rng.choice(ls)], [rng.choice([0, 0, 1])], [names.fresh("b")]])
    elif kind in ("decompose_reduction", "decompose_padding") and loops:
        tvm_name = "DecomposeReduction" if kind == "decompose_reduction" else "DecomposePadding"
        steps.append([tvm_name, [b, rng.choice(ls)], [], [names.fresh("b")]])
    elif kind in ("parallel", "vectorize", "unroll") and loops:
        steps.append([kind.capitalize(), [rng.choice(ls)], [], []])
    elif kind == "bind" and loops:
        steps.append(["Bind", [rng.choice(ls)], [rng.choice(THREADS)], []])
    elif kind in ("annotate", "unannotate"):
        target = rng.choice(ls) if loops and rng.random() < 0.5 else b
        key, value = rng.choice(ANNOTATIONS)
        if kind == "annotate":
            steps.append(["Annotate", [target, value], [key], []])
        else:
            steps.append(["Annotate", [target, value], [key], []])
            steps.append(["Unannotate", [target], [rng.choice(ANNOTATIONS)[0]], []])
    elif kind == "blockize" and loops:
        steps.append(["Blockize", [rng.choice(ls)], [True], [names.fresh("b")]])
    elif kind == "set_scope" and block.writes:
        steps.append(["SetScope", [b], [0, rng.choice(["shared", "local"])], []])
    elif kind == "storage_align" and block.writes:
        ndim = len(block.writes[0].buffer.shape)
        axis = rng.randrange(ndim + 1) if rng.random() < 0.2 else rng.randrange(max(ndim, 1))
        align = [0, axis, rng.choice([8, 16, 32]), rng.choice([0, 1, 4])]
        steps.append(["StorageAlign", [b], align, []])
    elif kind == "reindex" and regions:
        steps.append(["ReIndex", [b], [index, int(side == "writes")], [names.fresh("b")]])
    elif kind == "transform_layout" and regions:
        index_map = _layout_map(rng, regions[index].buffer.shape)
        attrs: list[Any] = [index, int(side == "writes"), None, False]
        steps.append(["TransformLayout", [b, index_map], attrs, []])
    elif kind == "transform_block_layout" and block.iter_vars:
        steps.append(["TransformBlockLayout", [b], [_block_map(rng, block)], []])
    elif kind == "cache_inplace" and block.reads:
        outs = [names.fresh("b"), names.fresh("b")]
        steps.append(["CacheInplace", [b], [rng.randrange(len(block.reads)), scope], outs])
    elif kind in ("reindex_cache_read", "reindex_cache_write") and regions:
        side = "reads" if kind == "reindex_cache_read" else "writes"
        regions = getattr(block, side)
        if not regions:
            return None
        index_map = _block_map(rng, block)
        tvm_name = "ReindexCacheRead" if side == "reads" else "ReindexCacheWrite"
        attrs = [rng.randrange(len(regions)), scope]
        steps.append([tvm_name, [b, index_map], attrs, [names.fresh("b")]])
    elif kind in ("read_at", "write_at") and loops:
        regions = block.reads if kind == "read_at" else block.writes
        if not regions:
            return None
        tvm_name = "ReadAt" if kind == "read_at" else "WriteAt"
        attrs = [rng.randrange(len(regions)), rng.choice(["shared", "local"])]
        steps.append([tvm_name, [rng.choice(ls), b], attrs, [names.fresh("b")]])
    elif kind == "rolling_buffer" and block.writes:
        steps.append(["RollingBuffer", [b], [0], []])
    elif kind == "reorder_block_iter_var" and len(block.iter_vars) >= 2:
        permutation = list(range(len(block.iter_vars)))
        rng.shuffle(permutation)
        steps.append(["ReorderBlockIterVar", [b, permutation], [], []])
    elif kind == "pad_einsum" and block.iter_vars:
        padding = [rng.choice([1, 1, 4, 8, 16]) for _ in block.iter_vars]
        steps.append(["PadEinsum", [b], [padding], []])
    elif kind == "add_unit_loop":
        target = rng.choice(ls) if loops and rng.random() < 0.5 else b
        steps.append(["AddUnitLoop", [target], [], [names.fresh("l")]])
    elif kind == "loop_partition" and loops:
        outs = [names.fresh("l"), names.fresh("l")]
        steps.append(
            ["LoopPartition", [rng.choice(ls), "None", rng.choice([2, 3, 4])], [True], outs]
        )
    else:
        return None
    return steps


def sources(corpus: Path = CORPUS) -> list[str]:
    """The programs plans draw over: the corpus inputs (cases TVM scheduled, less those that
    need intrinsics), the samples, and `gen:KIND` for a generated program of that kind."""
    cases = sorted(
        path
        for path in glob.glob(f"{corpus}/*/input.tir")
        if os.path.exists(Path(path).with_name("expected.tir"))
        and not os.path.exists(Path(path).with_name("intrinsics.json"))
    )
    samples = sorted(glob.glob(f"{ROOT}/samples/*.tir") + glob.glob(f"{ROOT}/samples/gpu/*.tir"))
    return cases + samples + [f"gen:{kind}" for kind in GENERATORS]


def _program(rng: random.Random, inputs: list[str]) -> tuple[str, str]:
    """(origin, text): a corpus case or sample two times in five, else a generated program
    (constant shapes or one symbolic dimension)."""
    generated = [path for path in inputs if path.startswith("gen:")]
    files = [path for path in inputs if not path.startswith("gen:")]
    if generated and (not files or rng.random() < 0.6):
        kind = rng.choice(generated)
        symbolic = rng.random() < 0.4
        text = GENERATORS[kind[len("gen:") :]](rng, symbolic)
        return f"{kind}{':symbolic' if symbolic else ''}", text
    path = rng.choice(files)
    return path, Path(path).read_text()


def generate(inputs: list[str], count: int, seed: int, out: Path) -> None:
    """Draw `count` plans into out/plans.jsonl, each applied by tirc as it is drawn; the
    program each starts from is written as tirc prints it (out/inputs/), for both sides."""
    rng = random.Random(seed)
    (out / "inputs").mkdir(exist_ok=True)
    with open(out / "plans.jsonl", "w") as plans:
        for number in range(count):
            origin, source = _program(rng, inputs)
            path = out / "inputs" / f"p{number}.tir"
            text = print_module(parse(source, name=origin))
            path.write_text(text)
            module = parse(text, name=str(path))
            func = module.names()[0]
            trace: list[list[Any]] = []
            names, status, starts = _Names(), "ok", []
            index_dtypes: dict[str, str] = {}
            for _ in range(rng.randint(1, 6)):
                step = None
                for _ in range(10):
                    step = _step(rng, module, names, func)
                    if step:
                        break
                if not step:
                    break
                if step[-1][0] in MAP_KINDS:
                    index_dtypes[str(len(trace) + len(step) - 1)] = _index_dtype(module, step[0])
                starts.append(len(trace))
                trace += step
                try:
                    plan = read_plan(json.dumps([trace, []]))
                    module = apply_plan(parse(text, name=str(path)), plan)[0]
                except DiagnosticError as error:
                    status = f"refused: {error}"[:300]
                    break
                except Exception as error:  # noqa: BLE001 - an internal error is a finding
                    status = f"crash: {error!r}"[:300]
                    break
            if status == "ok":
                (out / f"p{number}.tirc.tir").write_text(print_module(module))
            record = {
                "id": number,
                "origin": origin,
                "input": str(path),
                "trace": trace,
                "starts": starts,
                "index_dtypes": index_dtypes,
                "tirc": status,
            }
            plans.write(json.dumps(record) + "\n")


def run_tvm(python: str, out: Path) -> None:
    script = out / "tvm_side.py"
    script.write_text(TVM_SIDE)
    while subprocess.run([python, str(script), str(out)], capture_output=True).returncode:
        current = (out / "current").read_text()
        with open(out / "tvm.jsonl", "a") as results:  # a crash: past that plan
            results.write(json.dumps({"id": int(current), "tvm": "refused: TVM crashed"}) + "\n")


def _outcome(out: Path, plan: dict[str, Any], theirs: str) -> tuple[str, str]:
    """(class, detail) of one plan: equal, both refuse, or how the two differ."""
    number, ours = plan["id"], plan["tirc"]
    if not plan["trace"]:
        return "no step", "no step could be drawn for the program"
    if ours.startswith("crash"):
        return "tirc internal error", ours
    if theirs.startswith("refused early"):
        return "TVM refuses an earlier step", theirs
    if ours == "ok" and theirs == "ok":
        got = parse((out / f"p{number}.tirc.tir").read_text())
        want = parse((out / f"p{number}.tvm.tir").read_text())
        difference = find_difference(got, want)
        if difference is None:
            return "equal", ""
        return "differ", f"{difference.message} at {difference.path}"
    if ours != "ok" and theirs != "ok":
        return "both refuse", ""
    if ours == "ok":
        return "TVM refuses", theirs
    return "tirc refuses", ours


def compare(out: Path) -> list[dict[str, Any]]:
    """Each plan's record with its `class` and `detail`; the disagreements are also written
    to out/disagreements.jsonl."""
    tvm = {r["id"]: r["tvm"] for r in map(json.loads, open(out / "tvm.jsonl"))}
    records = []
    with open(out / "disagreements.jsonl", "w") as disagreements:
        for plan in map(json.loads, open(out / "plans.jsonl")):
            plan["tvm"] = tvm.get(plan["id"], "missing")
            plan["class"], plan["detail"] = _outcome(out, plan, plan["tvm"])
            if plan["class"] == "tirc refuses" and "is not a stage pipeline" in plan["detail"]:
                plan["detail"] += _fresh_note(out, plan["id"])
            records.append(plan)
            if plan["class"] not in AGREE:
                disagreements.write(json.dumps(plan) + "\n")
    return records


def _fresh_note(out: Path, number: int) -> str:
    """Whether TVM refuses the plan's last step on a schedule made afresh from the program
    before it: TVM caches a scope's stage-pipeline flag, which a step that breaks the
    pipeline leaves as it was."""
    script = out / "tvm_side.py"
    if not script.exists() or not os.path.exists(TVM_PYTHON):
        return ""
    done = subprocess.run(
        [TVM_PYTHON, str(script), str(out), str(number)], capture_output=True, text=True
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines and lines[-1].startswith("refused"):
        return " [TVM refuses it too on a fresh schedule of the program]"
    return ""


# "no step": nothing to compare, where no step could be drawn for the program (TVM may not
# even read it: a sample with TMA calls).
AGREE = ("equal", "both refuse", "no step")

# Disagreements that are TVM's bugs or deliberate differences (docs/plans.md, under each
# primitive): (class, a pattern of the detail (re.search), the instructions one of which the
# plan must hold (None: any), why). A class matches by prefix ("TVM refuses" also matches
# "TVM refuses an earlier step").
DELIBERATE: tuple[tuple[str, str, tuple[str, ...] | None, str], ...] = (
    (
        "tirc refuses",
        "the block's init would run again",
        None,
        "loop_partition of a reduction loop: TVM's result runs the init again in each partition",
    ),
    (
        "tirc refuses",
        "does not start at 0",
        None,
        "blockize at a partition's loop: TVM binds the inner iterator outside its domain",
    ),
    (
        "tirc refuses",
        "its offset is not a multiple of the inner extent",
        ("Blockize",),
        "blockize where an outer iterator offsets an inner binding: TVM binds the inner "
        "iterator outside its domain",
    ),
    (
        "tirc refuses",
        "must be alone under the loop",
        None,
        "decompose_padding at a loop shared with other blocks: TVM drops the other blocks",
    ),
    (
        "tirc refuses",
        "nested loops on one thread axis must have one extent",
        None,
        "bind: TVM accepts, then fails when lowering",
    ),
    (
        "tirc refuses",
        "reindex needs indices over the block's iterators",
        None,
        "reindex of a block indexed by a loop inside it (a read_at copy): TVM's stage uses the "
        "loop variable outside its loop",
    ),
    (
        "tirc refuses",
        "which its init, moved to the outer block, does not run under",
        None,
        "blockize of a reduction under a predicate: TVM leaves loop variables free in the init",
    ),
    (
        "tirc refuses",
        "with no other consumer",
        ("ReverseComputeInline",),
        "reverse_compute_inline into a producer other blocks read: TVM removes the buffer "
        "they still read",
    ),
    (
        "tirc refuses",
        "TVM refuses it too on a fresh schedule",
        None,
        "a stage-pipeline primitive after a step that broke the pipeline: TVM keeps the "
        "scope's flag cached from before (a fresh schedule of the program refuses)",
    ),
    (
        "differ",
        r"^0 vs -\d+ at .*\.region\[\d+\]\.min",
        ("ReadAt", "WriteAt"),
        "read_at/write_at: a copy region past the buffer is cut to it, where TVM copies from "
        "outside the buffer",
    ),
    (
        "differ",
        r"^\w+ vs IntImm at .*\.predicate$",
        ("CacheRead", "CacheWrite"),
        "cache_read/cache_write: tirc guards a copy whose region can leave the buffer, where "
        "TVM's copy reads outside it",
    ),
    (
        "differ",
        r"^\w+ vs IntImm at .*\.predicate$",
        ("Blockize",),
        "blockize of a block whose predicate bounds a fused iterator: TVM drops the predicate, "
        "and the block runs past its domain",
    ),
    (
        "TVM refuses",
        "key is not in Map",
        ("LoopPartition",),
        "loop_partition of a loop inside a block other than the root: TVM crashes (its block "
        "info lookup)",
    ),
    (
        "TVM refuses",
        "block_realize == old_block_realize_",
        ("RFactor",),
        "rfactor where the reduction's loops also hold a block outside any loop of its own: "
        "TVM fails an internal check",
    ),
    (
        "TVM refuses",
        "index_dtype == arg_dtype",
        ("TransformLayout",),
        "transform_layout of a buffer whose shape mixes int64 and int32 extents: TVM's "
        "legalized map mixes the two types in one index and fails an internal check",
    ),
    (
        "TVM refuses",
        "Could not get the corresponding function",
        ("TransformLayout",),
        "transform_layout of a parameter accessed in a block inside another block: TVM looks "
        "for the function at the inner scope and crashes",
    ),
)


def deliberate_reason(record: dict[str, Any]) -> str | None:
    """Why a disagreement is deliberate (its DELIBERATE entry), or None."""
    detail = str(record["detail"])
    last = {record["trace"][-1][0]} if record["trace"] else set()
    kinds = {step[0] for step in record["trace"]}
    for held in (last, kinds):  # an entry for the last step first, then for any earlier one
        for kind, pattern, steps, why in DELIBERATE:
            if not str(record["class"]).startswith(kind) or not re.search(pattern, detail):
                continue
            if steps is None or held & set(steps):
                return why
    return None


def is_deliberate(record: dict[str, Any]) -> bool:
    return deliberate_reason(record) is not None


def report(records: list[dict[str, Any]], show: int) -> None:
    tally = collections.Counter(record["class"] for record in records)
    agree = sum(tally[kind] for kind in AGREE)
    print(f"{agree}/{len(records)} agree: {dict(tally)}")
    deliberate = collections.Counter(
        deliberate_reason(record)
        for record in records
        if record["class"] not in AGREE and is_deliberate(record)
    )
    print(f"of the disagreements, {sum(deliberate.values())} are deliberate differences:")
    for why, count in deliberate.most_common():
        print(f"    {count:4d}  {why}")
    by_step = collections.Counter(
        record["trace"][-1][0] for record in records if record["class"] not in AGREE
    )
    print(f"disagreements by last step: {dict(by_step.most_common())}")
    shown = [r for r in records if r["class"] not in AGREE and not is_deliberate(r)][:show]
    for record in shown:
        print(f"p{record['id']} {record['class']}: {record['origin']}")
        for step in record["trace"][record["starts"][-1] if record["starts"] else 0 :]:
            print(f"    {json.dumps(step)[:150]}")
        if record["detail"]:
            print(f"    {record['detail'][:200]}")


def run(inputs: list[str], count: int, seed: int, out: Path, python: str) -> list[dict[str, Any]]:
    """Draw, apply on both sides and compare `count` plans from `seed`."""
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("plans.jsonl", "tvm.jsonl"):
        (out / stale).unlink(missing_ok=True)
    generate(inputs, count, seed, out)
    run_tvm(python, out)
    return compare(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="/tmp/tirc-random-plans")
    parser.add_argument("--inputs", default=str(CORPUS), help="folder of case folders")
    parser.add_argument("--tvm", default=TVM_PYTHON, help="TVM's Python")
    parser.add_argument("--show", type=int, default=20)
    parser.add_argument(
        "--compare-only", action="store_true", help="compare the plans already under --out"
    )
    args = parser.parse_args()
    out = Path(args.out)
    if args.compare_only:
        records = compare(out)
    else:
        records = run(sources(Path(args.inputs)), args.count, args.seed, out, args.tvm)
    report(records, args.show)


if __name__ == "__main__":
    main()
