"""Parse and print throughput on a generated 5,000-line module (goal: >= 10,000 lines/s)."""

from __future__ import annotations

import statistics
import time

FUNCTION = """    @T.prim_func(s_tir=True)
    def {name}(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: T.Buffer((128, 128), "float32"), D: T.Buffer((128,), "float32")):
        T.func_attr({{"tirx.noalias": True}})
        # with T.sblock("root"):
        C_local = T.sblock_alloc_buffer((128, 128))
        for i, j, k in T.grid(128, 128, 128):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C_local[vi, vj])
                with T.init():
                    C_local[vi, vj] = T.float32(0.0)
                C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.sblock("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(C_local[vi, vj])
                T.writes(C[vi, vj])
                C[vi, vj] = T.max(C_local[vi, vj], T.float32(0.0))
        for i, k in T.grid(128, 128):
            with T.sblock("rowsum"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(C[vi, vk])
                T.writes(D[vi])
                with T.init():
                    D[vi] = T.float32(0.0)
                D[vi] = D[vi] + T.exp(C[vi, vk] - T.float32(1.0)) * T.float32(0.5)
"""
HEADER = "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n@I.ir_module\nclass Module:\n"


def generated_module(lines: int = 5000) -> str:
    parts = [HEADER]
    count = 0
    index = 0
    while count < lines:
        text = FUNCTION.format(name=f"f{index}")
        parts.append(text)
        count += text.count("\n")
        index += 1
    return "".join(parts)


def measure(repeats: int = 5) -> dict[str, float]:
    from tirc.text import parse, print_module

    text = generated_module()
    lines = text.count("\n")
    module = parse(text)  # warm-up: grammar load, caches
    parse_times, print_times = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        module = parse(text)
        parse_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        print_module(module)
        print_times.append(time.perf_counter() - start)
    parse_s, print_s = statistics.median(parse_times), statistics.median(print_times)
    return {
        "lines": lines,
        "parse_lines_per_s": lines / parse_s,
        "print_lines_per_s": lines / print_s,
        "parse_print_lines_per_s": lines / (parse_s + print_s),
    }


def measure_file(path: str) -> dict[str, float]:
    """One parse, print and structural comparison of a big file, such as a lowered module
    printed after unroll-loop (the round-trip test's largest stage)."""
    from tirc.ir.structural import find_difference
    from tirc.text import parse, print_module

    with open(path, encoding="utf-8") as file:
        text = file.read()
    parse("@T.prim_func\ndef f():\n    T.evaluate(0)\n")  # warm-up: grammar load
    start = time.perf_counter()
    module = parse(text, name=path)
    parse_s = time.perf_counter() - start
    start = time.perf_counter()
    printed = print_module(module)
    print_s = time.perf_counter() - start
    again = parse(printed, name=path)
    start = time.perf_counter()
    difference = find_difference(module, again)
    compare_s = time.perf_counter() - start
    assert difference is None, difference
    return {
        "bytes": len(text),
        "parse_s": parse_s,
        "parse_kb_per_s": len(text) / 1000 / parse_s,
        "print_s": print_s,
        "compare_s": compare_s,
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--file", help="time one parse, print and comparison of this file")
    options = parser.parse_args()
    results = measure_file(options.file) if options.file else measure()
    for key, value in results.items():
        print(f"{key:>26}: {value:,.2f}" if key.endswith("_s") else f"{key:>26}: {value:,.0f}")
