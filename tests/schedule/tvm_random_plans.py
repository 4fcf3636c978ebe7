"""Random plans against Apache TVM 0.27: build plans step by step with tirc over programs
(the shared corpus inputs by default), apply each in TVM through its trace reader, and
compare: both accept and agree structurally, or both refuse.

    .venv/bin/python tests/schedule/tvm_random_plans.py --count 1000 --seed 5 --out /tmp/rp

Each plan takes one to six steps (split, fuse, reorder, compute_at, reverse_compute_at,
compute_inline, reverse_compute_inline, cache_read, cache_write, rfactor,
decompose_reduction, parallel, vectorize, unroll, blockize, set_scope, reindex,
add_unit_loop, loop_partition), each drawn from the program as tirc left it; a step tirc
refuses ends the plan. TVM runs in its own venv (`--tvm`), restarted past a plan that crashes
it. Prints the tally and the disagreements (`--show N`); the plans, both results and the
programs stay under `--out`. A tool, not a test: some disagreements are TVM's bugs that tirc
refuses on purpose (see docs/plans.md).
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tirc.diagnostics import DiagnosticError  # noqa: E402
from tirc.ir.function import IRModule  # noqa: E402
from tirc.ir.stmt import For, SBlock, SBlockRealize, SeqStmt  # noqa: E402
from tirc.ir.structural import find_difference  # noqa: E402
from tirc.schedule.apply import apply_plan  # noqa: E402
from tirc.schedule.plan import read_plan  # noqa: E402
from tirc.text import parse, print_module  # noqa: E402

CORPUS = ROOT.parent / "shared" / "conformance" / "cases"

# Run by TVM's Python: applies each plan of plans.jsonl not yet in tvm.jsonl.
TVM_SIDE = textwrap.dedent(
    """
    import json, os, sys, tvm
    from tvm import s_tir
    from tvm.s_tir.schedule import Trace
    out = sys.argv[1]
    done = set()
    if os.path.exists(f"{out}/tvm.jsonl"):
        done = {json.loads(line)["id"] for line in open(f"{out}/tvm.jsonl")}
    results = open(f"{out}/tvm.jsonl", "a")
    for line in open(f"{out}/plans.jsonl"):
        plan = json.loads(line)
        if plan["id"] in done:
            continue
        open(f"{out}/current", "w").write(str(plan["id"]))
        mod = tvm.script.from_source(open(plan["input"]).read())
        if not isinstance(mod, tvm.IRModule):
            mod = tvm.IRModule({"main": mod})
        sch = s_tir.Schedule(mod)
        try:
            Trace.apply_json_to_schedule([plan["trace"], []], sch)
            open(f"{out}/p{plan['id']}.tvm.tir", "w").write(sch.mod.script())
            status = "ok"
        except Exception as error:
            text = str(error)
            at = text.find("Error message")
            status = "refused: " + (text[at:at + 200] if at >= 0 else text[-200:])
        results.write(json.dumps({"id": plan["id"], "tvm": status}) + "\\n")
        results.flush()
    """
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


def _step(rng: random.Random, module: IRModule, names: _Names) -> list[list[Any]] | None:
    """The instructions of one random step (handles fetched afresh), or None."""
    blocks = _blocks(module)
    if not blocks:
        return None
    name, loops, block = rng.choice(blocks)
    b = names.fresh("b")
    ls = [names.fresh("l") for _ in loops]
    steps: list[list[Any]] = [["GetSBlock", [], [name, "main"], [b]]]
    if loops:
        steps.append(["GetLoops", [b], [], ls])
    kind = rng.choice(
        ["split", "fuse", "reorder", "compute_at", "reverse_compute_at", "compute_inline"]
        + ["reverse_compute_inline", "cache_read", "cache_write", "rfactor"]
        + ["decompose_reduction", "parallel", "vectorize", "unroll", "blockize", "set_scope"]
        + ["reindex", "add_unit_loop", "loop_partition", "split", "fuse", "compute_at"]
    )
    scope = rng.choice(["shared", "local", "global"])
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
        outer, inner = sorted(rng.sample(range(len(loops)), 2))
        steps.append(["Reorder", [ls[inner], ls[outer]], [], []])
    elif kind in ("compute_at", "reverse_compute_at"):
        other = rng.choice(blocks)
        if not other[1] or other[0] == name:
            return None
        ob, ols = names.fresh("b"), [names.fresh("l") for _ in other[1]]
        steps.append(["GetSBlock", [], [other[0], "main"], [ob]])
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
    elif kind == "decompose_reduction" and loops:
        steps.append(["DecomposeReduction", [b, rng.choice(ls)], [], [names.fresh("b")]])
    elif kind in ("parallel", "vectorize", "unroll") and loops:
        steps.append([kind.capitalize(), [rng.choice(ls)], [], []])
    elif kind == "blockize" and loops:
        steps.append(["Blockize", [rng.choice(ls)], [True], [names.fresh("b")]])
    elif kind == "set_scope" and block.writes:
        steps.append(["SetScope", [b], [0, rng.choice(["shared", "local"])], []])
    elif kind == "reindex":
        side = rng.choice(["reads", "writes"])
        regions = getattr(block, side)
        if not regions:
            return None
        kind_code = 0 if side == "reads" else 1
        steps.append(["ReIndex", [b], [rng.randrange(len(regions)), kind_code], [names.fresh("b")]])
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


def generate(inputs: list[str], count: int, seed: int, out: Path) -> None:
    rng = random.Random(seed)
    with open(out / "plans.jsonl", "w") as plans:
        for number in range(count):
            path = rng.choice(inputs)
            text = Path(path).read_text()
            module = parse(text, name=path)
            names, trace, status = _Names(), [], "ok"
            for _ in range(rng.randint(1, 6)):
                step = None
                for _ in range(10):
                    step = _step(rng, module, names)
                    if step:
                        break
                if not step:
                    break
                trace += step
                try:
                    plan = read_plan(json.dumps([trace, []]))
                    module = apply_plan(parse(text, name=path), plan)[0]
                except DiagnosticError:
                    status = "refused"
                    break
                except Exception as error:  # noqa: BLE001 - an internal error is a finding
                    status = f"crash: {error!r}"[:200]
                    break
            if status == "ok":
                (out / f"p{number}.tirc.tir").write_text(print_module(module))
            record = {"id": number, "input": path, "trace": trace, "tirc": status}
            plans.write(json.dumps(record) + "\n")


def run_tvm(python: str, out: Path) -> None:
    script = out / "tvm_side.py"
    script.write_text(TVM_SIDE)
    while subprocess.run([python, str(script), str(out)], capture_output=True).returncode:
        current = (out / "current").read_text()
        with open(out / "tvm.jsonl", "a") as results:  # a crash: past that plan
            results.write(json.dumps({"id": int(current), "tvm": "refused: TVM crashed"}) + "\n")


def compare(out: Path, show: int) -> None:
    plans = {p["id"]: p for p in map(json.loads, open(out / "plans.jsonl"))}
    tvm = {r["id"]: r["tvm"] for r in map(json.loads, open(out / "tvm.jsonl"))}
    tally: collections.Counter[str] = collections.Counter()
    disagreements = []
    for number, plan in plans.items():
        ours, theirs = plan["tirc"], tvm.get(number, "missing")
        if ours.startswith("crash"):
            kind, why = "tirc internal error", ours
        elif ours == "ok" and theirs == "ok":
            got = parse((out / f"p{number}.tirc.tir").read_text())
            want = parse((out / f"p{number}.tvm.tir").read_text())
            difference = find_difference(got, want)
            kind = "equal" if difference is None else "differ"
            why = "" if difference is None else f"{difference.message} at {difference.path}"
        elif ours != "ok" and theirs != "ok":
            kind, why = "both refuse", ""
        elif ours == "ok":
            kind, why = "TVM refuses", theirs
        else:
            kind, why = "tirc refuses", ""
        tally[kind] += 1
        if kind not in ("equal", "both refuse"):
            disagreements.append((number, kind, why))
    agree = tally["equal"] + tally["both refuse"]
    print(f"{agree}/{len(plans)} agree: {dict(tally)}")
    for number, kind, why in disagreements[:show]:
        plan = plans[number]
        print(f"p{number} {kind}: {Path(plan['input']).parent.name}")
        print(f"    last step {json.dumps(plan['trace'][-1])[:150]}")
        if why:
            print(f"    {why[:200]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="/tmp/tirc-random-plans")
    parser.add_argument("--inputs", default=str(CORPUS), help="folder of case folders")
    parser.add_argument("--tvm", default="/work/tvm-venv/bin/python", help="TVM's Python")
    parser.add_argument("--show", type=int, default=20)
    args = parser.parse_args()
    inputs = sorted(
        path
        for path in glob.glob(f"{args.inputs}/*/input.tir")
        if os.path.exists(Path(path).with_name("expected.tir"))
        and not os.path.exists(Path(path).with_name("intrinsics.json"))
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("plans.jsonl", "tvm.jsonl"):
        (out / stale).unlink(missing_ok=True)
    generate(inputs, args.count, args.seed, out)
    run_tvm(args.tvm, out)
    compare(out, args.show)


if __name__ == "__main__":
    main()
