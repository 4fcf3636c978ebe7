"""Register tiles written for one CPU, compiled for another with fewer vector registers: the
accumulator nest runs once per register-sized part (tirc.codegen.llvm.register_tile), so
the hot loop keeps its accumulators in registers instead of spilling them every iteration,
and the results stay those of the unsplit code, bit for bit."""

from __future__ import annotations

from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

from tests.codegen.helpers import SAMPLES, bits_agree
from tirc.codegen.llvm import compile_module
from tirc.codegen.llvm import stmt as stmt_rules
from tirc.codegen.llvm.register_tile import RegisterFile, slice_lanes, split_nest
from tirc.codegen.llvm.spills import hot_loop
from tirc.codegen.llvm.target import vector_registers
from tirc.driver.lower import lower_module
from tirc.driver.run_cpu import compare, jit_function
from tirc.driver.schedule import apply_plan_file
from tirc.driver.target import parse_target
from tirc.interp import random_inputs, run
from tirc.ir import expr as E
from tirc.ir import stmt as S
from tirc.ir.function import IRModule
from tirc.ir.functor import Visitor
from tirc.text import parse

BENCH = SAMPLES / "bench"
PLANS = Path(__file__).resolve().parents[2] / "benchmarks" / "plans"
AVX2 = "cpu -mcpu=znver3"  # 16 registers of 32 bytes
AVX512 = "cpu -mcpu=skylake-avx512"  # 32 registers of 64 bytes


def scheduled(name: str, plan: Path, sizes: dict[str, str] | None = None) -> IRModule:
    text = (BENCH / f"{name}.tir").read_text()
    for old, new in (sizes or {}).items():
        text = text.replace(old, new)
    module, _ = apply_plan_file(parse(text, name=f"{name}.tir"), str(plan))
    return module


def assembly(module: IRModule, target: str) -> str:
    resolved = parse_target(target)
    return compile_module(
        lower_module(module, target=resolved, for_backend=True), resolved
    ).assembly()


def test_vector_registers_follow_the_cpu() -> None:
    assert vector_registers(parse_target(AVX2)) == RegisterFile(16, 32)
    assert vector_registers(parse_target(AVX512)) == RegisterFile(32, 64)
    assert vector_registers(parse_target("cpu -mcpu=x86-64")) == RegisterFile(16, 16)


@pytest.mark.parametrize(
    ("name", "plan", "most"),
    [
        # before register_tile LLVM spilled and reloaded 28, 30 and 12 accumulators in every
        # iteration of these loops for znver3, and 65 values in the last
        ("matmul1024", BENCH / "matmul1024.plan.json", 0),  # 8 x 32 float32: 32 ymm
        ("matmul1024", PLANS / "matmul1024_4x64.plan.json", 0),  # 4 x 64: 32 as well
        ("conv2d56", BENCH / "conv2d56.plan.json", 0),  # 8 x 2 x 8: 16, and their operands
        # 4 x 7 x 8: 28; the parts are 2 x 4 blocks of the f x y grid of updates (blocks of
        # consecutive updates, f0 y0-6 with f1 y0-1, still spilled 33 and reloaded 45)
        ("conv2d56", PLANS / "conv2d56_4x7x8.plan.json", 40),
    ],
)
def test_avx512_plans_do_not_spill_in_the_avx2_hot_loop(name: str, plan: Path, most: int) -> None:
    loop = hot_loop(assembly(scheduled(name, plan), AVX2))
    assert loop is not None and loop.fmas >= 8
    assert loop.spills + loop.reloads <= most, loop


def test_a_tile_too_large_for_avx512_is_split_there_too() -> None:
    """8 x 64 float32 is 32 zmm accumulators: LLVM spilled 7, reloaded 7 and copied 48
    registers per iteration (101 GFLOP/s against 144 split, one thread of a Sapphire
    Rapids-class core)."""
    plan = PLANS / "matmul1024_8x64.plan.json"
    loop = hot_loop(assembly(scheduled("matmul1024", plan), AVX512))
    assert loop is not None and loop.fmas >= 8
    assert (loop.spills, loop.reloads, loop.copies) == (0, 0, 0), loop


def test_a_tile_that_fits_is_emitted_as_it_is() -> None:
    """On AVX-512 the bench matmul's 16 accumulators fit: one k loop of 16 FMAs per
    iteration, no spills, as before."""
    loop = hot_loop(assembly(scheduled("matmul1024", BENCH / "matmul1024.plan.json"), AVX512))
    assert loop is not None
    assert (loop.fmas, loop.spills, loop.reloads) == (16, 0, 0), loop


def host_runs_avx2() -> bool:
    llvm.initialize_native_target()
    features = llvm.get_host_cpu_features().flatten().split(",")
    return {"+avx2", "+fma"} <= set(features)


@pytest.mark.skipif(not host_runs_avx2(), reason="the host cannot run AVX2 code")
@pytest.mark.parametrize(
    ("name", "plan", "sizes"),
    [
        ("matmul1024", BENCH / "matmul1024.plan.json", {"1024": "128"}),
        ("conv2d56", BENCH / "conv2d56.plan.json", {"64": "16", "56": "8", "57": "9", "58": "10"}),
        ("conv2d56", PLANS / "conv2d56_4x7x8.plan.json", {"64": "8"}),
    ],
)
def test_split_tiles_compute_what_the_whole_tile_computes(
    name: str, plan: Path, sizes: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The split code agrees with the interpreter, and with the unsplit code bit for bit:
    each accumulator lane still sees its updates in the original order."""
    module = scheduled(name, plan, sizes)
    func = module["main"]
    args = random_inputs(func, 0)
    split = {k: np.array(v, copy=True) for k, v in args.items()}
    assert jit_function(module, "main", AVX2)(split) == 0
    reference = {k: np.array(v, copy=True) for k, v in args.items()}
    run(func, reference, module=module)
    assert not compare(func, split, reference)
    monkeypatch.setattr(stmt_rules, "split_nest", lambda loop, registers: None)
    whole = {k: np.array(v, copy=True) for k, v in args.items()}
    assert jit_function(module, "main", AVX2)(whole) == 0
    for key in split:
        bits_agree(split[key], whole[key], key)


# -- the parts, on small nests --------------------------------------------------------------

AVX2_REGISTERS = RegisterFile(16, 32)


def k_loop(text: str) -> S.For:
    """The `for k` loop of a lowered function `main`."""
    module = lower_module(parse(text, name="<test>"), target=parse_target("cpu"))
    found: list[S.For] = []

    class Loops(Visitor):
        def visit_For(self, node: S.For) -> None:  # noqa: N802 - the Visitor's naming
            if node.loop_var.name == "k":
                found.append(node)
            self.generic_visit(node)

    Loops().visit(module["main"].body)
    assert len(found) == 1
    return found[0]


TILE = """
@I.ir_module
class Module:
    @T.prim_func
    def main(
        A: T.Buffer((64, 64), "float32"),
        B: T.Buffer((64, 64), "float32"),
        C: T.Buffer((64, 64), "float32"),
    ):
        acc = T.alloc_buffer((128,), scope="local")
        for r in range(4):
            acc[r * 32:r * 32 + 32] = T.Broadcast(T.float32(0), 32)
        for k in range(64):
            for r in T.unroll(4):
                UPDATE
        for r in range(4):
            C[r, 0:32] = acc[T.Ramp(r * 32, 1, 32)]
"""
ACCUMULATE = (
    "acc[r * 32:r * 32 + 32] = acc[T.Ramp(r * 32, 1, 32)]"
    " + T.Broadcast(A[r, k], 32) * B[k, T.Ramp(0, 1, 32)]"
)


def test_an_accumulator_tile_too_large_runs_in_register_sized_parts() -> None:
    loop = k_loop(
        TILE.replace("UPDATE", ACCUMULATE)
    )  # 4 rows x 4 ymm: 16 accumulators, 4 + 1 operands
    parts = split_nest(loop, AVX2_REGISTERS)
    assert parts is not None and len(parts) > 1
    stores = [store for part in parts for store in stores_of(part)]
    assert all(store.value.dtype.lanes == 8 for store in stores)  # one register each
    starts = []
    for store in stores:
        index = store.indices[0]
        assert isinstance(index, E.Ramp) and isinstance(index.base, E.IntImm)
        starts.append(index.base.value)
    starts.sort()
    assert starts == list(range(0, 128, 8))  # every lane of the tile, once
    assert split_nest(loop, RegisterFile(32, 64)) is None  # AVX-512: it fits


def stores_of(stmt: S.Stmt) -> list[S.BufferStore]:
    found: list[S.BufferStore] = []

    class Stores(Visitor):
        def visit_BufferStore(self, node: S.BufferStore) -> None:  # noqa: N802
            found.append(node)

    Stores().visit(stmt)
    return found


@pytest.mark.parametrize(
    "update",
    [
        # reads lanes of the accumulator other than those it writes: not independent
        ACCUMULATE.replace("acc[T.Ramp(r * 32, 1, 32)]", "acc[T.Ramp(r * 32 + 1, 1, 32)]"),
        # calls a function with effects: each part would call it again
        ACCUMULATE.replace("A[r, k]", 'T.call_extern("float32", "sample", r, k)'),
        # updates memory that is not local
        "C[r, 0:32] = C[r, T.Ramp(0, 1, 32)] + T.Broadcast(A[r, k], 32) * B[k, T.Ramp(0, 1, 32)]",
    ],
)
def test_a_nest_that_is_not_only_accumulator_updates_stays_whole(update: str) -> None:
    assert split_nest(k_loop(TILE.replace("UPDATE", update)), AVX2_REGISTERS) is None


def test_slice_lanes_takes_the_same_lanes_of_every_operand() -> None:
    func = parse(TILE.replace("UPDATE", ACCUMULATE), name="<test>")["main"]
    b = func.buffer_of(func.params[1])
    assert b is not None
    i = E.Var("i")
    vector = E.Add(E.BufferLoad(b, (E.Ramp(i, E.IntImm(2), 32),)), E.Broadcast(E.FloatImm(1.0), 32))
    part = slice_lanes(vector, 8, 8)
    assert isinstance(part, E.Add) and part.dtype.lanes == 8
    load = part.a
    assert isinstance(load, E.BufferLoad)
    (index,) = load.indices
    assert isinstance(index, E.Ramp) and index.lanes == 8  # i + 8 * 2, stride 2
    assert isinstance(index.base, E.Add)
    shuffled = E.Shuffle((vector,), tuple(E.IntImm(lane) for lane in range(32)))
    assert slice_lanes(shuffled, 0, 8) is None  # not lanewise


SPILLING_LOOP = """
main:
	xorl	%eax, %eax
.LBB0_1:
	vmovups	%ymm3, 32(%rsp)
	vbroadcastss	(%rdi,%rax,4), %ymm4
	vfmadd231ps	%ymm4, %ymm1, %ymm3
	vfmadd231ps	64(%rsp), %ymm4, %ymm2
	vmovups	96(%rsp), %ymm5
	vmovaps	%ymm5, %ymm6
	vmovaps	(%rsi), %ymm7
	incq	%rax
	jne	.LBB0_1
	retq
"""


def test_hot_loop_counts_the_stack_traffic_of_the_innermost_loop() -> None:
    loop = hot_loop(SPILLING_LOOP)
    assert loop is not None
    assert (loop.fmas, loop.spills, loop.reloads, loop.copies) == (2, 1, 2, 1)
    assert hot_loop("main:\n\tretq\n") is None
