"""Streaming (non-temporal) stores: an output at least as large as the last-level cache, written
in whole 64-byte lines and never read, is stored around the cache, and the function that does
so ends with a store fence; anything else stays an ordinary store. `-llc=SIZE` in the target
sets the cache size, so small kernels can be checked; the interpreter judges the results."""

from __future__ import annotations

import numpy as np
import pytest

from tests.codegen.helpers import parse_text
from tirc.codegen.llvm import compile_module
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.driver.run_cpu import compare, jit_function
from tirc.driver.target import parse_target
from tirc.interp import random_inputs, run

HEADER = """
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
"""

# B = 2A in vectors of `lanes`, the outer loop `kind` (range or T.parallel)
SCALE = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
        T.func_attr({{"tirx.noalias": True}})
        for i in {kind}({outer}):
            for j in T.vectorized({lanes}):
                with T.sblock("B"):
                    v = T.axis.spatial(4096, i * {lanes} + j)
                    B[v] = A[v] * T.float32(2.0)
"""

# B is read as well as written: its lines are wanted in the cache
ACCUMULATE = """
    @T.prim_func(s_tir=True)
    def main(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32")):
        T.func_attr({"tirx.noalias": True})
        for i in range(256):
            for j in T.vectorized(16):
                with T.sblock("B"):
                    v = T.axis.spatial(4096, i * 16 + j)
                    B[v] = B[v] + A[v]
"""


def scale(kind: str = "range", lanes: int = 16) -> str:
    return HEADER + SCALE.format(kind=kind, outer=4096 // lanes, lanes=lanes)


def llvm_ir(text: str, target: str) -> str:
    lowered = lower_module(parse_text(text), target="cpu")
    return compile_module(lowered, parse_target(target), 3).llvm_ir()


def assembly(text: str, target: str) -> str:
    lowered = lower_module(parse_text(text), target="cpu")
    return compile_module(lowered, parse_target(target), 3).assembly()


@pytest.mark.parametrize("kind", ["range", "T.parallel"])
def test_a_large_output_never_read_streams_and_is_fenced(kind: str) -> None:
    text = llvm_ir(scale(kind), "cpu -llc=4K")
    assert "!nontemporal" in text
    assert "call void @llvm.x86.sse.sfence()" in text
    assert "vmovntps" in assembly(scale(kind), "cpu -llc=4K")


@pytest.mark.parametrize("kind", ["range", "T.parallel"])
def test_streamed_results_match_the_interpreter(kind: str) -> None:
    module = parse_text(scale(kind))
    func = module["main"]
    args = random_inputs(func, 0)
    compiled = {k: np.array(v, copy=True) for k, v in args.items()}
    reference = {k: np.array(v, copy=True) for k, v in args.items()}
    assert jit_function(module, "main", "cpu -llc=4K")(compiled) == 0
    run(func, reference, module=module)
    assert not compare(func, compiled, reference)


@pytest.mark.parametrize(
    ("text", "target", "why"),
    [
        (scale(), "cpu -llc=1M", "the output fits in the cache"),
        (scale(), "cpu -llc=0", "streaming stores are off"),
        (HEADER + ACCUMULATE, "cpu -llc=4K", "the output is read"),
        (scale(lanes=8), "cpu -llc=4K", "a store of 32 bytes is half a cache line"),
        (scale(lanes=1), "cpu -llc=4K", "scalar stores"),
    ],
)
def test_other_stores_stay_ordinary(text: str, target: str, why: str) -> None:
    ir_text = llvm_ir(text, target)
    assert "nontemporal" not in ir_text, why
    assert "sfence" not in ir_text, why


def test_a_target_for_another_cpu_streams_nothing_unless_told() -> None:
    assert parse_target("cpu -mcpu=skylake-avx512").cache_bytes == 0
    assert parse_target("cpu -mcpu=skylake-avx512 -llc=32M").cache_bytes == 32 << 20


def test_a_malformed_cache_size_is_a_clear_error() -> None:
    with pytest.raises(DiagnosticError, match="-llc wants a size in bytes"):
        parse_target("cpu -llc=lots")
