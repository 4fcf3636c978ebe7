"""The reference interpreter's speed: a 128^3 float32 matmul in s-tir (goal: under 5 s)."""

from __future__ import annotations

import statistics
import time

MATMUL = """
@T.prim_func(s_tir=True)
def main(
    A: T.Buffer((128, 128), "float32"),
    B: T.Buffer((128, 128), "float32"),
    C: T.Buffer((128, 128), "float32"),
):
    for i, j, k in T.grid(128, 128, 128):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0.0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""
RUNS = 3


def matmul_128() -> str:
    from tirc import interp, text

    func = text.parse(MATMUL)["main"]
    args = interp.random_inputs(func, seed=0)
    begin = time.perf_counter()
    interp.compile_function(func)
    compile_ms = (time.perf_counter() - begin) * 1e3
    times = []
    for _ in range(RUNS):
        begin = time.perf_counter()
        interp.run(func, args)
        times.append(time.perf_counter() - begin)
    median = statistics.median(times)
    return (
        f"interp 128^3 float32 matmul: {median:.2f} s median of {RUNS} "
        f"({2 * 128**3 / median / 1e6:.1f} Mflop/s; compile {compile_ms:.0f} ms; goal < 5 s)"
    )


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__).parse_args()  # --help; no stray options
    print(matmul_128())
