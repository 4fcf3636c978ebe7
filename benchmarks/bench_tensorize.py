"""The tuner's tensorize rule against plain tiling on an int8 dense, on this CPU, one thread.

Generates candidates of a uint8 x int8 -> int32 dense (256 x 512 x 512) from the CPU design
space as it is (on a host with AVX-512 VNNI the tensorize rule takes the block) and with the
tensorize rule switched off (multi-level-tiling takes it), checks each against numpy, and
prints the best and the median of their times (the best of 5 calls each).
Not a test: `OMP_NUM_THREADS=1 python benchmarks/bench_tensorize.py [--candidates N]`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tirc.driver.run_cpu import jit_function  # noqa: E402
from tirc.text import parse  # noqa: E402
from tirc.tune.rules import tensorize  # noqa: E402
from tirc.tune.space import generate  # noqa: E402

DENSE = """
@T.prim_func(s_tir=True)
def main(X: T.Buffer((256, 512), "uint8"), W: T.Buffer((512, 512), "int8"),
         C: T.Buffer((256, 512), "int32")):
    for i, j, k in T.grid(256, 512, 512):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0
            C[vi, vj] = C[vi, vj] + T.Cast("int32", X[vi, vk]) * T.Cast("int32", W[vj, vk])
"""


def times(count: int) -> tuple[list[float], set[str]]:
    module = parse(DENSE)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (256, 512)).astype("uint8")
    w = rng.integers(-128, 128, (512, 512)).astype("int8")
    want = x.astype(np.int32) @ w.astype(np.int32).T
    found, rules = [], set()
    for seed in range(count):
        candidate = generate(module, "main", "cpu", random.Random(seed))
        assert candidate.module is not None
        rules |= {rule for rule, _ in candidate.applied}
        call = jit_function(candidate.module, "main")
        out = np.zeros((256, 512), "int32")
        call({"X": x, "W": w, "C": out})
        assert np.array_equal(out, want), f"candidate {seed} is wrong"
        samples = []
        for _ in range(5):
            begin = time.perf_counter()
            call({"X": x, "W": w, "C": out})
            samples.append(time.perf_counter() - begin)
        found.append(min(samples))
    return found, rules


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=8)
    args = parser.parse_args()
    print("intrinsics on this host:", ", ".join(tensorize.cpu_intrinsics()) or "none")
    for label in ("the design space", "without tensorize"):
        if label == "without tensorize":
            tensorize.cpu_intrinsics = list  # no intrinsic: the rule steps aside
        found, rules = times(args.candidates)
        ops = 2 * 256 * 512 * 512
        print(
            f"{label:<18} best {min(found) * 1e3:8.2f} ms ({ops / min(found) / 1e9:6.1f} GOP/s)"
            f"  median {statistics.median(found) * 1e3:8.2f} ms  rules: {', '.join(sorted(rules))}"
        )


if __name__ == "__main__":
    main()
