"""The TVM side of `bench_kernels.py`, run by TVM's own Python (never imported by tirc).

`python tvm_worker.py kernel KERNEL.tir PLAN.json SECONDS PARAMS [MCPU]` (PARAMS: a JSON
list of `[shape, dtype]`, one per parameter) parses the kernel with
TVMScript, replays tirc's readable plan as TVM schedule calls (the readable form's ops and
parameters are TVM's method and keyword names; index maps are `T.index_map(lambda ...)`
text), builds it with LLVM for this CPU (or for `llvm -mcpu=MCPU`), and prints
one JSON line: the median wall and CPU (process time) seconds of a call after a warm-up,
and the build seconds.
`python tvm_worker.py build KERNEL.tir PLAN.json OUT` only builds (for whole-process timing).
`python tvm_worker.py asm KERNEL.tir PLAN.json MCPU OUT` writes the assembly TVM makes.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

INDEX_MAP = "T.index_map("


def replay(schedule: Any, plan: dict[str, Any]) -> None:
    """Each readable step as the schedule method of its name; names in arguments that an
    earlier step bound ("out") become that step's results."""
    bound: dict[str, Any] = {}

    def resolve(value: Any) -> Any:
        if isinstance(value, str) and value in bound:
            return bound[value]
        if isinstance(value, str) and value.startswith(INDEX_MAP) and value.endswith(")"):
            from tvm.script import tirx

            return eval(value, {"T": tirx})  # the plan's own index map, as TVMScript
        if isinstance(value, list):
            return [resolve(item) for item in value]
        return value

    for step in plan["steps"]:
        step = dict(step)
        op, out = step.pop("op"), step.pop("out", None)
        args = {key: resolve(value) for key, value in step.items()}
        method = getattr(schedule, op)
        if op in ("reorder", "fuse"):
            loops = args.pop("ordered_loops", None) or args.pop("loops")
            result = method(*loops, **args)
        elif "buffer_index_type" in args:  # TVM takes the buffer as ("read"|"write", index)
            kind = args.pop("buffer_index_type")
            kind = {0: "read", 1: "write"}.get(kind, kind)
            result = method(buffer=(kind, args.pop("buffer_index")), **args)
        elif op == "get_sblock":
            result = method(args["name"], plan.get("func", "main"))
        else:
            result = method(**args)
        if isinstance(out, list):
            for name, value in zip(out, result, strict=True):
                bound[name] = value
        elif out is not None:
            bound[out] = result


def build(kernel: str, plan_path: str | None, mcpu: str | None = None) -> Any:
    import tvm
    from tvm import s_tir

    with open(kernel) as file:
        module = tvm.script.from_source(file.read())
    if plan_path:
        with open(plan_path) as file:
            plan = json.load(file)
        schedule = s_tir.Schedule(module)
        replay(schedule, plan)
        module = schedule.mod
    cpu = mcpu or tvm.target.codegen.llvm_get_system_cpu()
    return tvm.compile(module, target=tvm.target.Target({"kind": "llvm", "mcpu": cpu}))


def random_arguments(params: list[list[Any]]) -> list[Any]:
    """One random tensor per `[shape, dtype]`."""
    import numpy as np
    import tvm

    rng = np.random.default_rng(0)
    return [
        tvm.runtime.tensor(rng.standard_normal(shape).astype(dtype), tvm.cpu())
        for shape, dtype in params
    ]


def kernel_main(
    kernel: str, plan: str, seconds: float, params: str, mcpu: str | None = None
) -> None:
    begin = time.perf_counter()
    executable = build(kernel, plan, mcpu)
    built = time.perf_counter() - begin
    arrays = random_arguments(json.loads(params))
    main = executable["main"]
    main(*arrays)  # warm-up
    wall: list[float] = []
    cpu: list[float] = []
    started = time.perf_counter()
    while len(wall) < 5 or (time.perf_counter() - started < seconds and len(wall) < 1000):
        begin, begin_cpu = time.perf_counter(), time.process_time()
        main(*arrays)
        cpu.append(time.process_time() - begin_cpu)
        wall.append(time.perf_counter() - begin)
    result = {"median": statistics.median(wall), "cpu": statistics.median(cpu), "build_s": built}
    print(json.dumps(result))


def main() -> None:
    mode = sys.argv[1]
    if mode == "kernel":
        mcpu = sys.argv[6] if len(sys.argv) > 6 else None
        kernel_main(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5], mcpu)
    elif mode == "build":
        executable = build(sys.argv[2], sys.argv[3] or None)
        executable.export_library(sys.argv[4])
    elif mode == "asm":
        executable = build(sys.argv[2], sys.argv[3], sys.argv[4])
        with open(sys.argv[5], "w") as file:
            file.write(executable.mod.inspect_source("asm"))
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
