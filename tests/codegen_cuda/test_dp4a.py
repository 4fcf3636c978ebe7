"""CUDA's __dp4a for every pair of operand signs (kernels/dp4a.tir): the interpreter against
numpy, the CUDA C through nvcc (and NVRTC where installed), the LLVM NVPTX path through
ptxas, and in each PTX the `dp4a.atype.btype` the operand types call for; a snapshot of the
CUDA C; a plan that tensorizes an int8 dense with an intrinsic from --intrinsics."""

from __future__ import annotations

import difflib
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts, require_tool
from tests.codegen_cuda.test_snapshots import SNAPSHOTS
from tirc.cli.main import main
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver.cuda_toolchain import has_nvrtc, ptx_from_cuda
from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.interp import run
from tirc.ir.function import IRModule
from tirc.text import parse

KERNELS = Path(__file__).parent / "kernels"
DP4A = KERNELS / "dp4a.tir"
DENSE = KERNELS / "dp4a_dense.tir"

# kernel -> (where lane i of thread t's operands sits: "vector" A[4t + i], "strided"
# A[8t + 2i], "offset" A[4t + 1 + i], "packed" byte i of A[t]; the PTX instruction)
KERNEL_FACTS = {
    "vector_s8s8": ("vector", "dp4a.s32.s32"),
    "vector_s8u8": ("vector", "dp4a.s32.u32"),
    "vector_u8s8": ("vector", "dp4a.u32.s32"),
    "vector_u8u8": ("vector", "dp4a.u32.u32"),
    "packed_s32s32": ("packed", "dp4a.s32.s32"),
    "packed_s32u32": ("packed", "dp4a.s32.u32"),
    "packed_u32s32": ("packed", "dp4a.u32.s32"),
    "packed_u32u32": ("packed", "dp4a.u32.u32"),
    "strided_s8u8": ("strided", "dp4a.s32.u32"),
    "offset_u8s8": ("offset", "dp4a.u32.s32"),
    "signed_result_u8u8": ("vector", "dp4a.u32.u32"),
    "wide_s32u32": ("packed", "dp4a.s32.u32"),
    "wide_u32u32": ("packed", "dp4a.u32.u32"),
}


def module() -> IRModule:
    return parse(DP4A.read_text(), name=str(DP4A))


def lowered() -> IRModule:
    return lower_module(module(), target="cuda")


def full_range(rng: np.random.Generator, dtype: np.dtype, shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def operand_lanes(array: np.ndarray, layout: str) -> np.ndarray:
    """(16, 4): the four bytes thread t's operand holds, as integers of their signedness."""
    t = np.arange(16)[:, None]
    i = np.arange(4)[None, :]
    if layout == "packed":
        raw = (array.astype(np.int64)[:, None] >> (8 * i)) & 0xFF
        return raw - 256 * (raw >= 128) if array.dtype.kind == "i" else raw
    index = {"vector": 4 * t + i, "strided": 8 * t + 2 * i, "offset": 4 * t + 1 + i}[layout]
    return array.astype(np.int64)[index]


def wrap(values: np.ndarray, bits: int, signed: bool) -> np.ndarray:
    unsigned = values.astype(np.int64) & ((1 << bits) - 1) if bits < 64 else values
    if signed and bits < 64:
        return unsigned - (unsigned >= (1 << (bits - 1))) * (1 << bits)
    return unsigned


@pytest.mark.parametrize("gpu_model", ["threads", "lockstep"])
@pytest.mark.parametrize("name", list(KERNEL_FACTS))
def test_interpreter_matches_numpy(name: str, gpu_model: str) -> None:
    """Bytes signed as each operand's type says; the 32-bit sum signed if either operand is;
    c and the result converted as C converts."""
    func = module()[name]
    buffers = {buffer.name: buffer for _, buffer in func.buffer_map}
    dtypes = {key: np.dtype(str(buffer.dtype)) for key, buffer in buffers.items()}
    rng = np.random.default_rng(len(name))
    args = {
        key: full_range(rng, dtypes[key], buffer.shape[0].value)  # type: ignore[attr-defined]
        for key, buffer in buffers.items()
    }
    c_before = args["C"].copy()
    run(func, args, module=module(), gpu_model=gpu_model)

    layout, instruction = KERNEL_FACTS[name]
    signed = "s32" in instruction
    a = operand_lanes(args["A"], layout)
    b = operand_lanes(args["B"], layout)
    total = (a * b).sum(axis=1) + wrap(c_before, 32, True)  # c's low 32 bits
    result = wrap(wrap(total, 32, signed), 64, True)
    want = wrap(result, dtypes["C"].itemsize * 8, dtypes["C"].kind == "i")
    np.testing.assert_array_equal(args["C"].astype(np.int64), want)


def test_cuda_c_snapshot() -> None:
    """snapshots/dp4a.cu; regenerate with TIRC_UPDATE_SNAPSHOTS=1 and review the diff."""
    got = emit_cuda(lowered(), source_name="dp4a.tir")
    path = SNAPSHOTS / "dp4a.cu"
    if os.environ.get("TIRC_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(got)
    want = path.read_text()
    if got != want:
        diff = "".join(
            difflib.unified_diff(want.splitlines(True), got.splitlines(True), "snapshot", "emitted")
        )
        pytest.fail(f"{path.name} changed (TIRC_UPDATE_SNAPSHOTS=1 to accept):\n{diff}")


def test_cuda_c_spells_overloads_nvcc_has() -> None:
    """Equal signs: __dp4a on two ints or two unsigneds; mixed signs: the PTX helpers; no
    char4/uchar4 pair reaches __dp4a."""
    source = emit_cuda(lowered())
    calls = re.findall(r"= (.*dp4a.*);", source)
    assert len(calls) == len(KERNEL_FACTS)
    assert not any("char4" in call and call.startswith("__dp4a") for call in calls)
    assert "tirc_dp4a_s32_u32(*(int*)(A + cse_v1), *(unsigned int*)(B + cse_v1), C[t])" in source
    assert 'asm("dp4a.u32.s32 %0, %1, %2, %3;"' in source


def entries_and_instructions(ptx: str) -> dict[str, str]:
    """kernel name -> the dp4a instruction its PTX uses."""
    found: dict[str, str] = {}
    for entry in re.split(r"\.visible \.entry ", ptx)[1:]:
        name = entry.split("_kernel(", 1)[0]
        instructions = set(re.findall(r"\bdp4a\.[su]32\.[su]32\b", entry))
        assert len(instructions) == 1, (name, instructions)
        found[name] = instructions.pop()
    return found


def expected_instructions() -> dict[str, str]:
    return {name: instruction for name, (_, instruction) in KERNEL_FACTS.items()}


def test_cuda_c_compiles_with_nvcc(tmp_path: Path) -> None:
    complaint = nvcc_accepts(emit_cuda(lowered()), tmp_path)
    assert complaint == "", complaint


def test_nvcc_ptx_uses_the_signed_instruction_the_types_call_for(tmp_path: Path) -> None:
    """nvcc's front end stands in for NVRTC's (the same CUDA C) where cuda-python is absent."""
    nvcc = require_tool("nvcc")
    cu = tmp_path / "dp4a.cu"
    cu.write_text(emit_cuda(lowered()))
    ptx = tmp_path / "dp4a.ptx"
    done = subprocess.run(
        [nvcc, "-arch=sm_90", "-ptx", str(cu), "-o", str(ptx)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert entries_and_instructions(ptx.read_text()) == expected_instructions()


def test_nvrtc_ptx_passes_ptxas(tmp_path: Path) -> None:
    if not has_nvrtc():
        pytest.skip("cuda-python (NVRTC) is not installed")
    ptx = ptx_from_cuda(emit_cuda(lowered()), "sm_90")
    assert entries_and_instructions(ptx) == expected_instructions()
    complaint = ptxas_accepts(ptx, tmp_path)
    assert complaint == "", complaint


def test_llvm_ptx_picks_idp4a_signs_and_passes_ptxas(tmp_path: Path) -> None:
    ptx = emit_ptx(lowered(), arch="sm_90")
    assert entries_and_instructions(ptx) == expected_instructions()
    complaint = ptxas_accepts(ptx, tmp_path)
    assert complaint == "", complaint


BAD_OPERAND = """@T.prim_func
def main(A: T.Buffer((4,), "int16"), C: T.Buffer((1,), "int32")):
    for t in T.thread_binding(1, thread="threadIdx.x"):
        C[0] = T.call_pure_extern("int32", "__dp4a", A[T.Ramp(0, 1, 4)], A[T.Ramp(0, 1, 4)], 0)
"""


@pytest.mark.parametrize("backend", ["cuda", "llvm"])
def test_operand_without_four_bytes_is_a_located_error(backend: str) -> None:
    program = lower_module(parse(BAD_OPERAND, name="bad.tir"), target="cuda")
    with pytest.raises(DiagnosticError) as error:
        emit_cuda(program) if backend == "cuda" else emit_ptx(program)
    (diagnostic,) = error.value.diagnostics
    assert "four packed 8-bit integers" in diagnostic.message and "int16x4" in diagnostic.message
    assert diagnostic.span is not None and diagnostic.span.line == 4


def dense_inputs() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "X": full_range(rng, np.dtype("uint8"), 16 * 64).reshape(16, 64),
        "W": full_range(rng, np.dtype("int8"), 16 * 64).reshape(16, 64),
        "compute": np.zeros((16, 16), np.int32),
    }


def test_tensorized_dense_with_user_intrinsic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tirc compile --target cuda --intrinsics`: the plan's tensorize finds the user's mixed-
    sign dp4a; the CUDA C compiles; the tensorized program computes X @ W.T."""
    plan = str(KERNELS / "dp4a_dense.plan.json")
    intrinsics = str(KERNELS / "dp4a_global.intrinsics.json")
    out = tmp_path / "dense.cu"
    argv = ["compile", str(DENSE), "--target", "cuda", "--plan", plan, "--emit", "cu"]
    assert main([*argv, "--intrinsics", intrinsics, "-o", str(out)]) == 0
    source = out.read_text()
    assert "tirc_dp4a_u32_s32(*(unsigned int*)(X + " in source
    complaint = nvcc_accepts(source, tmp_path)
    assert complaint == "", complaint

    scheduled, _ = apply_plan_file(parse(DENSE.read_text(), name=str(DENSE)), plan, intrinsics)
    args = dense_inputs()
    want = args["X"].astype(np.int64) @ args["W"].astype(np.int64).T
    program = lower_module(scheduled, target="cuda")
    run(program["main"], args, module=program)
    np.testing.assert_array_equal(args["compute"], want)
