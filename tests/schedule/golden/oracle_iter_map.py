"""Regenerate golden/iter_map/normal_forms.json: block bindings after a fuse (mixed-radix
sums of loops, some of extent 1, with adjacent loops fused into one variable and substituted
back as `f // stride % extent`), and TVM 0.27's normal form of each (`iter_map_simplify`,
unit iterators kept), as block bindings print after fuse and split.

Run under a Python that has TVM: `/work/tvm-venv/bin/python
tests/schedule/golden/oracle_iter_map.py`. Kept free of tirc imports; the cases are plain
data (extents, the fused range, the order of the terms), rebuilt by the test on tirc's side.
"""

import json
import pathlib
import random

import tvm
from tvm.ir import Range
from tvm.sym.iter_affine_map import iter_map_simplify

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "iter_map" / "normal_forms.json"


def cases(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        size = rng.randint(2, 5)
        extents = [rng.choice([1, 1, 2, 4, 8, 32]) for _ in range(size)]
        first = rng.randint(0, size - 2)
        last = rng.randint(first + 1, size - 1)
        order = list(range(size))
        if rng.random() < 0.3:
            rng.shuffle(order)
        found.append({"extents": extents, "fused": [first, last], "order": order})
    return found


def expression(case: dict) -> tuple[object, dict]:
    """The binding over loops `l<k>` and the fused `f` (the test builds the same)."""
    extents, (first, last) = case["extents"], case["fused"]
    const = lambda value: tvm.tirx.IntImm("int32", value)  # noqa: E731
    loops = [tvm.tirx.Var(f"l{k}", "int32") for k in range(len(extents))]
    fused = tvm.tirx.Var("f", "int32")
    terms = {}
    scale = 1
    for k in reversed(range(len(extents))):
        value = loops[k]
        if first <= k <= last:
            stride = 1
            for inner in range(k + 1, last + 1):
                stride *= extents[inner]
            value = fused if stride == 1 else tvm.tirx.floordiv(fused, const(stride))
            if k != first:
                value = tvm.tirx.floormod(value, const(extents[k]))
        terms[k] = value if scale == 1 else value * const(scale)
        scale *= extents[k]
    expr = None
    for k in case["order"]:
        expr = terms[k] if expr is None else expr + terms[k]
    domains = {
        loops[k]: Range(0, const(e)) for k, e in enumerate(extents) if not first <= k <= last
    }
    size = 1
    for k in range(first, last + 1):
        size *= extents[k]
    domains[fused] = Range(0, const(size))
    return expr, domains


def main() -> None:
    result = []
    for case in cases(23, 300):
        expr, domains = expression(case)
        normal = iter_map_simplify([expr], domains, True, simplify_trivial_iterators=False)[0]
        result.append({**case, "written": str(expr), "tvm": str(normal)})
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("[\n" + ",\n".join(json.dumps(item) for item in result) + "\n]\n")
    print(OUT.relative_to(HERE))


if __name__ == "__main__":
    main()
