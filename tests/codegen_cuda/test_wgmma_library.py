"""The wgmma family of the intrinsic library (cuda_wgmma.tir: N in 64, 128, 256; float16 and
bfloat16 operands): the family written out by the registry, tensorize finding each instance
from a 64 x N x 16 block of a plain GEMM, the tensorized and lowered program computing in the
interpreter what the plain program computes (the bfloat16 m64n256 sample,
gemm_wgmma_tensorize_bf16, runs with the others in test_wgmma.py)."""

from __future__ import annotations

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tirc.codegen.cuda import emit_cuda
from tirc.diagnostics import DiagnosticError
from tirc.driver.lower import lower_module
from tirc.interp import run
from tirc.ir import expr as E
from tirc.ir.function import IRModule
from tirc.schedule.apply import apply_plan
from tirc.schedule.intrinsics import builtin_intrinsics
from tirc.schedule.intrinsics.registry import expand_families
from tirc.schedule.plan import read_plan
from tirc.text import parse

SAMPLES = Path(__file__).parents[2] / "samples" / "gpu"
FAMILY = [(n, ab) for n in (64, 128, 256) for ab in ("f16", "bf16")]
DTYPES = {"f16": ("float16", np.float16), "bf16": ("bfloat16", ml_dtypes.bfloat16)}


def test_the_family_is_written_out() -> None:
    library = builtin_intrinsics()
    for n, ab in FAMILY:
        mma = library[f"wgmma_m64n{n}k16_{ab}f32"]
        assert mma.summary.startswith(f"wgmma.mma_async m64n{n}k16: a 64x{n}x16 {DTYPES[ab][0]}")
        a, b, c = (mma.desc.buffer_map[i][1] for i in range(3))
        assert (str(a.dtype), str(b.dtype), str(c.dtype)) == (DTYPES[ab][0],) * 2 + ("float32",)
        assert _constants(b.shape) == [2, n // 8, 8, 8]
        assert _constants(c.shape) == [128, n // 2]
        for kind in ("fill", "store"):
            suffix = "_f32" if kind == "fill" else "_f32_global"
            assert library[f"wgmma_{kind}_m64n{n}{suffix}"].summary.endswith(
                f"64x{n} wgmma accumulator" + (" to global memory" if kind == "store" else "")
            )


def _constants(shape: tuple[E.PrimExpr, ...]) -> list[int]:
    return [extent.value for extent in shape if isinstance(extent, E.IntImm)]


def test_families_expand_functions_and_summaries_only() -> None:
    text = (
        "# a comment naming {N} stays\n"
        "#% N: 8, 16\n"
        "#% ab, dtype: (f16, float16), (bf16, bfloat16)\n"
        "## f_{N}_{ab}: {N} of {dtype}\n"
        "## g: plain\n"
        "class Module:\n"
        "    @T.prim_func\n"
        '    def f_{N}_{ab}(): T.func_attr({"k": {N}})\n'
        "    @T.prim_func\n"
        "    def g_{N}(): pass\n"
    )
    expanded = expand_families(text, "t.tir")
    assert "# a comment naming {N} stays\n" in expanded
    summaries = [line for line in expanded.splitlines() if line.startswith("## ")]
    assert summaries == [
        "## f_8_f16: 8 of float16",
        "## f_8_bf16: 8 of bfloat16",
        "## f_16_f16: 16 of float16",
        "## f_16_bf16: 16 of bfloat16",
        "## g: plain",
    ]
    defs = [line.strip() for line in expanded.splitlines() if line.strip().startswith("def ")]
    assert defs == [
        'def f_8_f16(): T.func_attr({"k": 8})',
        'def f_8_bf16(): T.func_attr({"k": 8})',
        'def f_16_f16(): T.func_attr({"k": 16})',
        'def f_16_bf16(): T.func_attr({"k": 16})',
        "def g_8(): pass",
        "def g_16(): pass",
    ]
    assert expand_families("## g: {N}\n", "t.tir") == "## g: {N}\n"  # no family: as written


def test_a_family_row_of_the_wrong_width_is_refused() -> None:
    with pytest.raises(ValueError, match=r"t.tir: '#% a, b' needs rows of 2 values"):
        expand_families("#% a, b: (1, 2), (3)\n", "t.tir")


def _gemm(n: int, ab: str, shape: tuple[int, int, int]) -> IRModule:
    """gemm_wgmma_tensorize.tir with `ab` operands at M x N x K = shape."""
    path = SAMPLES / "gemm_wgmma_tensorize.tir"
    text = path.read_text().replace('"float16"', f'"{DTYPES[ab][0]}"')
    defines = dict(zip("MNK", map(str, shape), strict=True))
    return parse(text, name=str(path), defines=defines)


def _family_plan(n: int, ab: str) -> str:
    """gemm_wgmma_tensorize.plan.json for 64 x n tiles and the `ab` intrinsics."""
    text = (SAMPLES / "gemm_wgmma_tensorize.plan.json").read_text()
    text = text.replace("j // 128", f"j // {n}").replace("j % 128", f"j % {n}")
    text = text.replace("m64n128k16_f16f32", f"m64n{n}k16_{ab}f32")
    text = text.replace("_m64n128_", f"_m64n{n}_")
    plan = json.loads(text)
    for step in plan["steps"]:
        if step["op"] == "split" and step["loop"] == "j":
            step["factors"] = [None, n]
    return json.dumps(plan)


# n256 (about 18 s each in the thread model) in `make test-sweep`; n64 and n128 in the tests
@pytest.mark.parametrize(
    ("n", "ab"),
    [
        pytest.param(n, ab, id=f"n{n}_{ab}", marks=[pytest.mark.sweep] if n == 256 else [])
        for n, ab in FAMILY
    ],
)
def test_tensorize_finds_it_and_the_interpreter_agrees(n: int, ab: str) -> None:
    """A 64 x n x 16 block (M = 64, K = 128: two pipeline stages of 4 wgmmas) is tensorized
    by wgmma_m64n{n}k16_{ab}f32 and the fill and store of its N; lowered for sm_90a, it
    computes on random inputs what the plain program computes in the interpreter."""
    shape = (64, n, 128)
    plain = _gemm(n, ab, shape)
    scheduled, applied = apply_plan(plain, read_plan(_family_plan(n, ab)), {})
    intrinsics = [step.args["intrin"] for step in applied.steps if step.op == "tensorize"]
    assert intrinsics == [f"wgmma_fill_m64n{n}_f32", f"wgmma_m64n{n}k16_{ab}f32"] + [
        f"wgmma_store_m64n{n}_f32_global"
    ]
    lowered = lower_module(scheduled, target="cuda")
    source = emit_cuda(lowered)
    ptx_type = "f16" if ab == "f16" else "bf16"
    assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ptx_type}.{ptx_type}" in source
    assert f"float C_warp[{n // 2}];" in source

    rng = np.random.default_rng(n)
    element = DTYPES[ab][1]
    a = rng.uniform(-1, 1, (64, 128)).astype(element)
    b = rng.uniform(-1, 1, (128, n)).astype(element)
    got, want = np.zeros((64, n), np.float32), np.zeros((64, n), np.float32)
    run(lowered["main"], {"A": a, "B": b, "C": got}, module=lowered)
    reference = lower_module(plain, target="cpu")
    run(reference["main"], {"A": a, "B": b, "C": want}, module=reference)
    # the wgmma sums 16 products exactly and rounds once; the plain loop rounds each product
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not np.array_equal(got, np.zeros_like(got))


def test_an_intrinsic_of_the_other_operand_type_does_not_match() -> None:
    plan = _family_plan(256, "f16")  # float16 intrinsics on the bfloat16 program
    with pytest.raises(DiagnosticError) as error:
        apply_plan(_gemm(256, "bf16", (64, 256, 64)), read_plan(plan), {})
    assert "wgmma_m64n256k16_f16f32" in str(error.value)
