"""`tirc run --bench` says its time as rates: GB/s of the bytes the buffer parameters move
(each read once, each written once) on every target, and TFLOP/s (GFLOP/s below one) of
`--flops N` or of the multiply-add blocks of a GEMM-like program. The counts are checked
exactly; the printed line on the CPU and the interpreter, whose clocks need no GPU."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tirc.cli.main import main
from tirc.ir.function import PrimFunc
from tirc.runtime.throughput import Timing, moved_bytes, multiply_add_flops
from tirc.text import parse

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
Capture = pytest.CaptureFixture[str]

BATCHED = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((2, 8, 16), "float16"), B: T.Buffer((2, 16, 4), "float16"),
         C: T.Buffer((2, 8, 4), "float32")):
    for l0, l1, l2, l3 in T.grid(2, 8, 4, 16):
        with T.sblock("C"):
            b, i, j, k = T.axis.remap("SSSR", [l0, l1, l2, l3])
            with T.init():
                C[b, i, j] = T.float32(0.0)
            C[b, i, j] = T.Cast("float32", A[b, i, k]) * T.Cast("float32", B[b, k, j]) + C[b, i, j]
"""

SYMBOLIC = """
@T.prim_func(s_tir=True)
def main(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 8))
    B = T.match_buffer(b, (n,))
    for i, k in T.grid(n, 8):
        with T.sblock("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0.0)
            B[vi] = B[vi] + A[vi, vk] * A[vi, vk]
"""

IN_PLACE = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.sblock("A"):
            vi = T.axis.remap("S", [i])
            A[vi] = A[vi] * T.float32(2.0)
"""


def _main(text: str, **defines: str) -> PrimFunc:
    return parse(text, defines=defines)["main"]


def test_a_matmul_counts_two_operations_a_multiply_add() -> None:
    text = (SAMPLES / "gpu" / "matmul_fp16_tc.tir").read_text()
    assert multiply_add_flops(_main(text, N="64")) == 2 * 64**3
    assert multiply_add_flops(_main(BATCHED)) == 2 * 2 * 8 * 4 * 16  # b * i * j * k, casts


def test_programs_without_multiply_add_blocks_count_none() -> None:
    # the softmax reduces with max and with a sum of exponentials: not GEMM-like
    assert multiply_add_flops(_main((SAMPLES / "gpu" / "softmax_rows.tir").read_text())) is None
    assert multiply_add_flops(_main((SAMPLES / "gpu" / "elementwise_vec.tir").read_text())) is None
    assert multiply_add_flops(_main(SYMBOLIC)) is None  # an extent that is not a constant


def test_bytes_moved_count_each_parameter_read_once_and_written_once() -> None:
    a, b = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    elementwise = _main((SAMPLES / "gpu" / "elementwise_vec.tir").read_text(), N="1024")
    assert moved_bytes(elementwise, {"A": a, "B": b}) == 2 * 4096
    # C is stored and read back by the update, but its T.init() stores it first: written once
    matmul = _main((SAMPLES / "gpu" / "matmul_fp16_tc.tir").read_text(), N="32")
    arrays = {"A": np.zeros((32, 32), np.float16), "B": np.zeros((32, 32), np.float16)}
    arrays["C"] = np.zeros((32, 32), np.float32)
    assert moved_bytes(matmul, arrays) == 2048 + 2048 + 4096
    # read and written in place: twice
    assert moved_bytes(_main(IN_PLACE), {"A": np.zeros(64, np.float32)}) == 2 * 256


def test_the_timing_line_says_both_rates() -> None:
    timing = Timing(2e-3, 20, "CUDA events")
    assert timing.describe(8_000_000) == (
        "median 2.0000 ms over 20 runs (CUDA events), 4.00 GB/s moved"
    )
    assert timing.describe(8_000_000, 4 * 10**12).endswith("4.00 GB/s moved, 2000.00 TFLOP/s")
    assert Timing(1.0, 3).describe(0, 5 * 10**9).endswith("0.00 GB/s moved, 5.00 GFLOP/s")


def _bench_line(argv: list[str], capsys: Capture) -> str:
    status = main(["run", *argv, "--bench"])
    out, err = capsys.readouterr()
    assert status == 0, err
    lines = [line for line in out.splitlines() if line.startswith("bench: median")]
    assert len(lines) == 1, out
    return lines[0]


def test_cpu_bench_of_a_matmul_says_gb_and_flops(capsys: Capture) -> None:
    line = _bench_line(
        [str(SAMPLES / "gpu" / "matmul_fp16_tc.tir"), "-D", "N=32", "--target", "cpu"], capsys
    )
    assert re.fullmatch(
        r"bench: median \d+\.\d{4} ms over \d+ runs, \d+\.\d\d GB/s moved, "
        r"\d+\.\d\d [GT]FLOP/s",
        line,
    ), line


def test_interpreter_bench_of_a_softmax_says_gb_only(capsys: Capture) -> None:
    line = _bench_line([str(SAMPLES / "gpu" / "softmax_rows.tir"), "-D", "M=2"], capsys)
    assert re.fullmatch(r"bench: median \d+\.\d{4} ms over \d+ runs, \d+\.\d\d GB/s moved", line)


def test_flops_option_gives_the_rate(capsys: Capture) -> None:
    argv = [str(SAMPLES / "gpu" / "softmax_rows.tir"), "-D", "M=2", "--flops", "1e15"]
    line = _bench_line(argv, capsys)
    found = re.fullmatch(r"bench: median (\S+) ms .*, (\S+) TFLOP/s", line)
    assert found, line
    seconds, rate = float(found.group(1)) / 1e3, float(found.group(2))
    assert rate == pytest.approx(1e15 / seconds / 1e12, rel=0.01, abs=0.01)


def test_flops_without_bench_is_an_error(capsys: Capture) -> None:
    status = main(["run", str(SAMPLES / "gpu" / "softmax_rows.tir"), "--flops", "100"])
    assert status == 1
    assert "--flops says what --bench divides by its time" in capsys.readouterr().err
