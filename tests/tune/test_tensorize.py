"""The tensorize rule: a reduction an intrinsic of the library computes is tiled to its shape
and tensorized (VNNI on a CPU that has it), the candidates replay, build and match numpy; a
program no intrinsic matches gets the plans it got without the rule."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tirc.ir.function import PrimFunc
from tirc.ir.structural import structural_equal
from tirc.schedule.apply import apply_plan
from tirc.schedule.plan import read_plan
from tirc.text import parse
from tirc.tune.rules import tensorize
from tirc.tune.rules.common import host_features
from tirc.tune.space import generate

DENSE_U8I8 = """
@T.prim_func(s_tir=True)
def main(X: T.Buffer((32, 128), "uint8"), W: T.Buffer((48, 128), "int8"),
         C: T.Buffer((32, 48), "int32")):
    for i, j, k in T.grid(32, 48, 128):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0
            C[vi, vj] = C[vi, vj] + T.Cast("int32", X[vi, vk]) * T.Cast("int32", W[vj, vk])
"""
# Already in VNNI's layout: no copy is needed.
DENSE_PACKED = """
@T.prim_func(s_tir=True)
def main(X: T.Buffer((16, 64), "uint8"), W: T.Buffer((4, 16, 16, 4), "int8"),
         C: T.Buffer((16, 64), "int32")):
    for i, j, k in T.grid(16, 64, 64):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0
            C[vi, vj] = C[vi, vj] + T.Cast("int32", X[vi, vk]) * T.Cast(
                "int32", W[vj // 16, vk // 4, vj % 16, vk % 4])
"""
# Signed activations: vpdpbusd multiplies uint8 by int8, so VNNI does not match.
DENSE_I8I8 = DENSE_U8I8.replace('"uint8"', '"int8"')
MATMUL_F32 = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((32, 64), "float32"), B: T.Buffer((64, 48), "float32"),
         C: T.Buffer((32, 48), "float32")):
    for i, j, k in T.grid(32, 48, 64):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""
needs_vnni = pytest.mark.skipif(
    "+avx512vnni" not in host_features(), reason="the host has no AVX-512 VNNI"
)


def _full_range(shape: tuple[int, ...], dtype: str, rng: np.random.Generator) -> np.ndarray:
    info = np.iinfo(dtype)  # the whole 8-bit range: signedness must matter
    return rng.integers(info.min, info.max + 1, shape).astype(dtype)


@needs_vnni
@pytest.mark.parametrize("program", [DENSE_U8I8, DENSE_PACKED], ids=["plain", "packed"])
def test_vnni_candidates_tensorize_build_and_match_numpy(program: str) -> None:
    from tirc.driver.run_cpu import jit_function

    module = parse(program)
    rng = np.random.default_rng(0)
    for seed in range(3):
        candidate = generate(module, "main", "cpu", random.Random(seed))
        assert ("tensorize", "C") in candidate.applied
        steps = [s for s in candidate.plan.steps if s.op == "tensorize"]
        assert [s.args["intrin"] for s in steps] == ["dot_16x4_vnni"]
        packs = [s for s in candidate.plan.steps if s.op == "transform_layout"]
        assert len(packs) == (1 if program is DENSE_U8I8 else 0)
        replayed, _ = apply_plan(module, read_plan(candidate.plan.to_json()))
        assert candidate.module is not None and structural_equal(replayed, candidate.module)

        func = module["main"]
        shapes = {name: buffer for name, buffer in _buffers(func)}
        x = _full_range(shapes["X"], "uint8", rng)
        w = _full_range(shapes["W"], "int8", rng)
        c = np.zeros(shapes["C"], "int32")
        call = jit_function(candidate.module, "main")
        assert call({"X": x, "W": w, "C": c}) == 0
        weights = w if w.ndim == 2 else w.transpose(0, 2, 1, 3).reshape(c.shape[1], -1)
        np.testing.assert_array_equal(c, x.astype(np.int32) @ weights.astype(np.int32).T)


def _buffers(func: PrimFunc) -> list[tuple[str, tuple[int, ...]]]:
    return [
        (buffer.name, tuple(int(d.value) for d in buffer.shape)) for _, buffer in func.buffer_map
    ]


@pytest.mark.parametrize("program", [DENSE_I8I8, MATMUL_F32], ids=["int8xint8", "float32"])
def test_a_program_no_intrinsic_matches_gets_the_plans_it_got_without_the_rule(
    program: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = parse(program)
    with_rule = [generate(module, "main", "cpu", random.Random(s)) for s in range(3)]
    monkeypatch.setattr(tensorize, "cpu_intrinsics", lambda: [])
    without = [generate(module, "main", "cpu", random.Random(s)) for s in range(3)]
    for a, b in zip(with_rule, without, strict=True):
        assert not any(rule == "tensorize" for rule, _ in a.applied)
        assert ("multi-level-tiling", "C") in a.applied
        assert a.plan.to_json() == b.plan.to_json()


def test_a_host_without_the_intrinsic_tiles_the_block_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tensorize, "cpu_intrinsics", lambda: [])
    candidate = generate(parse(DENSE_U8I8), "main", "cpu", random.Random(0))
    assert candidate.applied[0] == ("multi-level-tiling", "C")
    assert not [s for s in candidate.plan.steps if s.op == "tensorize"]


def test_the_description_shape_of_each_cpu_intrinsic() -> None:
    from tirc.ir.stmt import IterType

    shape = tensorize.description_shape("dot_16x4_vnni")
    assert shape.loops == ((IterType.SPATIAL, 16), (IterType.REDUCE, 4))


GEMV_TEMPLATE = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((16, 64), "{a}"), x: T.Buffer((64,), "{b}"), y: T.Buffer((16,), "int32")):
    for i, k in T.grid(16, 64):
        with T.sblock("y"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                y[vi] = 0
            y[vi] = y[vi] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", x[vk])
"""


@pytest.mark.parametrize(
    ("a", "b", "intrin"),
    [("int8", "int8", "dp4a_s8s8s32"), ("uint8", "int8", "dp4a_u8s8s32")],
)
def test_dp4a_candidates_compile_with_nvcc_and_match_in_the_interpreter(
    a: str, b: str, intrin: str, tmp_path: object
) -> None:
    from pathlib import Path

    from tests.codegen_cuda.helpers import nvcc_accepts, require_tool
    from tirc.codegen.cuda import emit_cuda
    from tirc.driver.lower import lower_module
    from tirc.interp import run

    require_tool("nvcc")
    module = parse(GEMV_TEMPLATE.format(a=a, b=b))
    rng = np.random.default_rng(1)
    for seed in range(2):
        candidate = generate(module, "main", "cuda", random.Random(seed))
        assert candidate.module is not None
        assert ("gpu-multi-level-tiling", "y") in candidate.applied
        steps = [s for s in candidate.plan.steps if s.op == "tensorize"]
        assert [s.args["intrin"] for s in steps] == [intrin]
        source = emit_cuda(lower_module(candidate.module, target="cuda"))
        assert "__dp4a" in source
        complaint = nvcc_accepts(source, Path(str(tmp_path)))
        assert complaint == "", complaint
        matrix, vector = _full_range((16, 64), a, rng), _full_range((64,), b, rng)
        result = np.zeros(16, "int32")
        run(
            candidate.module["main"],
            {"A": matrix, "x": vector, "y": result},
            module=candidate.module,
        )
        np.testing.assert_array_equal(result, matrix.astype(np.int32) @ vector.astype(np.int32))


def test_a_float_matmul_on_the_gpu_is_not_tensorized() -> None:
    candidate = generate(parse(MATMUL_F32), "main", "cuda", random.Random(0))
    assert ("gpu-multi-level-tiling", "C") in candidate.applied
    assert not [s for s in candidate.plan.steps if s.op in ("tensorize", "decompose_reduction")]


FP16_MATMUL = """
@T.prim_func(s_tir=True)
def main(A: T.Buffer((64, 32), "float16"), B: T.Buffer((32, 48), "float16"),
         C: T.Buffer((64, 48), "{out}")):
    for i, j, k in T.grid(64, 48, 32):
        with T.sblock("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.{out}(0)
            C[vi, vj] = C[vi, vj] + {product}
"""


def _fp16_matmul(out: str) -> str:
    """A float16 matmul summed in `out` (the float16 one multiplies without casts, as wmma's
    float16 description does)."""
    if out == "float16":
        return FP16_MATMUL.format(out=out, product="A[vi, vk] * B[vk, vj]")
    product = f'T.Cast("{out}", A[vi, vk]) * T.Cast("{out}", B[vk, vj])'
    return FP16_MATMUL.format(out=out, product=product)


@pytest.mark.parametrize("out", ["float32", "float16"])
def test_tensor_core_candidates_compile_with_nvcc_and_match_in_the_interpreter(
    out: str, tmp_path: object
) -> None:
    """A float16 matmul gets wmma candidates: fill, fragment loads, mma and the store each
    tensorized, nvcc accepts the CUDA C, and the interpreter's product is numpy's."""
    from pathlib import Path

    from tests.codegen_cuda.helpers import nvcc_accepts, require_tool
    from tirc.codegen.cuda import emit_cuda
    from tirc.driver.lower import lower_module
    from tirc.interp import run

    require_tool("nvcc")
    module = parse(_fp16_matmul(out))
    rng = np.random.default_rng(2)
    suffix = "f32" if out == "float32" else "f16"
    for seed in range(2):
        candidate = generate(module, "main", "cuda", random.Random(seed))
        assert candidate.module is not None
        assert candidate.applied[0] == ("tensor-core", "C")
        intrinsics = [s.args["intrin"] for s in candidate.plan.steps if s.op == "tensorize"]
        assert intrinsics == [
            f"wmma_fill_16x16x16_{suffix}",
            "wmma_load_16x16x16_f16_a_shared",
            "wmma_load_16x16x16_f16_b_shared",
            f"wmma_sync_16x16x16_f16f16{suffix}",
            f"wmma_store_16x16x16_{suffix}_global",
        ]
        replayed, _ = apply_plan(module, read_plan(candidate.plan.to_json()))
        assert structural_equal(replayed, candidate.module)
        lowered = lower_module(candidate.module, target="cuda")
        source = emit_cuda(lowered)
        assert "nvcuda::wmma::mma_sync(" in source
        complaint = nvcc_accepts(source, Path(str(tmp_path)))
        assert complaint == "", complaint
        a = rng.uniform(-1, 1, (64, 32)).astype(np.float16)
        b = rng.uniform(-1, 1, (32, 48)).astype(np.float16)
        args = {"A": a, "B": b, "C": np.full((64, 48), np.nan, out)}
        run(lowered["main"], args, module=lowered)
        want = a.astype(np.float64) @ b.astype(np.float64)
        tolerance = 1e-5 if out == "float32" else 2e-2
        np.testing.assert_allclose(args["C"], want, rtol=tolerance, atol=tolerance)


def test_a_float16_matmul_whose_extents_are_not_tiles_of_16_is_left_to_the_tiling() -> None:
    program = _fp16_matmul("float32").replace("48", "40")
    candidate = generate(parse(program), "main", "cuda", random.Random(0))
    assert candidate.applied[0] == ("gpu-multi-level-tiling", "C")
    assert not [s for s in candidate.plan.steps if s.op == "tensorize"]


@needs_vnni
def test_vnni_operands_are_whole_vector_loads_in_the_machine_code() -> None:
    """The intrinsic reads its operands through matched views (`Broadcast(offset) +
    Ramp(0, 1, n)` once lowered): each is one vector load, not a gather of lanes, so the
    inner loop is vpdpbusd on registers (a 15x difference on an int8 dense)."""
    from tirc.codegen.llvm import compile_module
    from tirc.driver.lower import lower_module
    from tirc.driver.target import parse_target

    candidate = generate(parse(DENSE_U8I8), "main", "cpu", random.Random(0))
    assert candidate.module is not None
    target = parse_target("cpu")
    lowered = lower_module(candidate.module, target=target, for_backend=True)
    assembly = compile_module(lowered, target).assembly()
    assert "vpdpbusd" in assembly
    assert "vpgather" not in assembly and "vpinsrb" not in assembly
