"""wmma on the NVPTX path (--ptx-via llvm): every fragment shape, type and layout the CUDA C
backend compiles (f16 into f16 or f32, s8/u8 into s32, bf16 into f32 in m16n16k16, m32n8k16
and m8n32k16; f64 in m8n8k4) becomes NVVM's wmma intrinsics, which ptxas accepts for sm_80
and sm_90 as the instructions the fragments name; what LLVM has no wmma for, or the
architecture lacks, is a located error; fragments stay in registers; calls on plain memory are
the interpreter's loops; and the tensor-core sample runs on the fake driver through both paths
with the interpreter computing what a launch does."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.codegen_cuda.helpers import GPU_SAMPLES, ptxas_accepts, require_tool
from tests.runtime.fake_cuda import FakeDriver, Launch, fake_device
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.cuda.kernel import pointer_element
from tirc.codegen.nvptx import emit_ptx
from tirc.diagnostics import DiagnosticError
from tirc.driver import run_cuda
from tirc.driver.kernel_resources import parse_ptxas_log
from tirc.driver.lower import lower_module
from tirc.driver.schedule import apply_plan_file
from tirc.interp import run
from tirc.ir.function import IRModule
from tirc.text import parse

# one warp: C = A x B + 0 through one fragment of each kind, loaded from global memory
PROGRAM = """
@T.prim_func
def main(A: T.Buffer(({mk},), "{ab}"), B: T.Buffer(({kn},), "{ab}"), C: T.Buffer(({mn},), "{acc}")):
    tx = T.launch_thread("threadIdx.x", 32)
    a = T.alloc_buffer(({mk},), "{ab}", scope="wmma.matrix_a")
    b = T.alloc_buffer(({kn},), "{ab}", scope="wmma.matrix_b")
    c = T.alloc_buffer(({mn},), "{acc}", scope="wmma.accumulator")
    T.tvm_fill_fragment(c.data, {m}, {n}, {k}, 0, T.{acc}(0))
    T.tvm_load_matrix_sync(a.data, {m}, {n}, {k}, 0, T.tvm_access_ptr(T.type_annotation("{ab}"), A.data, 0, {mk}, 1), {a_stride}, "{a_layout}")
    T.tvm_load_matrix_sync(b.data, {m}, {n}, {k}, 0, T.tvm_access_ptr(T.type_annotation("{ab}"), B.data, 0, {kn}, 1), {b_stride}, "{b_layout}")
    T.tvm_mma_sync(c.data, 0, a.data, 0, b.data, 0, c.data, 0)
    T.tvm_store_matrix_sync(c.data, {m}, {n}, {k}, 0, T.tvm_access_ptr(T.type_annotation("{acc}"), C.data, 0, {mn}, 2), {c_stride}, "{c_layout}")
"""  # noqa: E501
PTX_TYPES = {
    "float16": "f16",
    "float32": "f32",
    "int8": "s8",
    "uint8": "u8",
    "int32": "s32",
    "bfloat16": "bf16",
    "float64": "f64",
}
SIXTEEN = ((16, 16, 16), (32, 8, 16), (8, 32, 16))
TYPES = (
    ("float16", "float32"),
    ("float16", "float16"),
    ("int8", "int32"),
    ("uint8", "int32"),
    ("bfloat16", "float32"),
)
ROW, COL = "row_major", "col_major"
COMBINATIONS = [
    *[(shape, ab, acc, ROW, COL, ROW) for shape in SIXTEEN for ab, acc in TYPES],
    *[
        ((16, 16, 16), "float16", "float32", a, b, c)
        for a in (ROW, COL)
        for b in (ROW, COL)
        for c in (ROW, COL)
    ],  # fmt: skip
    ((8, 8, 4), "float64", "float64", ROW, COL, ROW),
    ((8, 8, 4), "float64", "float64", COL, ROW, COL),
]


def program(
    shape: tuple[int, int, int],
    ab: str,
    acc: str,
    a_layout: str = ROW,
    b_layout: str = COL,
    c_layout: str = ROW,
) -> str:
    m, n, k = shape
    return PROGRAM.format(
        m=m,
        n=n,
        k=k,
        mk=m * k,
        kn=k * n,
        mn=m * n,
        ab=ab,
        acc=acc,
        a_layout=a_layout,
        b_layout=b_layout,
        c_layout=c_layout,
        a_stride=k if a_layout == ROW else m,
        b_stride=n if b_layout == ROW else k,
        c_stride=n if c_layout == ROW else m,
    )


def lowered(text: str, name: str = "wmma.tir") -> IRModule:
    return lower_module(parse(text, name=name), target="cuda")


def _major(layout: str) -> str:
    return layout.removesuffix("_major")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize(
    ("shape", "ab", "acc", "a_layout", "b_layout", "c_layout"),
    COMBINATIONS,
    ids=lambda x: "x".join(map(str, x)) if isinstance(x, tuple) else str(x),
)
def test_every_combination_assembles(
    shape: tuple[int, int, int],
    ab: str,
    acc: str,
    a_layout: str,
    b_layout: str,
    c_layout: str,
    arch: str,
    tmp_path: Path,
) -> None:
    ptx = emit_ptx(lowered(program(shape, ab, acc, a_layout, b_layout, c_layout)), arch=arch)
    geometry = "m{}n{}k{}".format(*shape)
    t, c = PTX_TYPES[ab], PTX_TYPES[acc]
    a, b = _major(a_layout), _major(b_layout)
    mma = f"{c}.{c}" if t == "f16" else f"{c}.{t}.{t}.{c}"
    expected = [
        f"wmma.load.a.sync.aligned.{a}.{geometry}.{t} ",
        f"wmma.load.b.sync.aligned.{b}.{geometry}.{t} ",
        f"wmma.mma.sync.aligned.{a}.{b}.{geometry}.{mma}",
        f"wmma.store.d.sync.aligned.{_major(c_layout)}.{geometry}.{c} ",
    ]
    for instruction in expected:
        assert ptx.count(instruction) == 1, (instruction, ptx)
    assert ".local" not in ptx
    complaint = ptxas_accepts(ptx, tmp_path, arch=arch)
    assert not complaint, complaint


def test_a_packed_fragment_is_filled_in_every_byte() -> None:
    """An int8 fragment register holds four elements: filling with 1 writes 0x01010101."""
    text = program((16, 16, 16), "int8", "int32").replace(
        "T.tvm_load_matrix_sync(a.data", "T.tvm_fill_fragment(a.data, 16, 16, 16, 0, T.int8(1))\n#"
    )
    ptx = emit_ptx(lowered(text), arch="sm_80")
    assert "wmma.load.a" not in ptx
    assert str(0x01010101) in ptx


def _error(text: str, arch: str = "sm_80") -> tuple[str, str]:
    """(message, the source text it points at) of the one error emitting `text` gives."""
    with pytest.raises(DiagnosticError) as caught:
        emit_ptx(lowered(text), arch=arch)
    (diagnostic,) = caught.value.diagnostics
    span = diagnostic.span
    assert span is not None and span.source.name == "wmma.tir"
    return diagnostic.message, span.source.text[span.start : span.end]


@pytest.mark.parametrize(
    ("shape", "ab", "acc", "message"),
    [
        ((16, 16, 8), "float32", "float32", "no wmma m16n16k8 wmma.matrix_a fragment of float32"),
        ((8, 8, 4), "float16", "float32", "no wmma m8n8k4 wmma.matrix_a fragment of float16"),
        ((16, 16, 16), "float64", "float64", "no wmma m16n16k16 wmma.matrix_a fragment of float64"),
        ((16, 16, 16), "int16", "int32", "no wmma m16n16k16 wmma.matrix_a fragment of int16"),
    ],
)
def test_a_fragment_llvm_has_no_wmma_for_is_refused_at_its_allocation(
    shape: tuple[int, int, int], ab: str, acc: str, message: str
) -> None:
    found, source = _error(program(shape, ab, acc))
    assert found == f"--ptx-via llvm: {message}"
    assert source.startswith("T.alloc_buffer(") and 'scope="wmma.matrix_a"' in source


def test_an_mma_of_mismatched_types_is_refused_at_the_call() -> None:
    found, source = _error(program((16, 16, 16), "int8", "float32"))
    assert found == "T.tvm_mma_sync: no wmma of int8 x int8 + float32 into float32"
    assert source.startswith("T.tvm_mma_sync(")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "T.tvm_mma_sync(c.data, 0, A.data, 0, b.data, 0, c.data, 0)",
            "T.tvm_mma_sync: A is not a wmma fragment, and the call's first operand is",
        ),
        (
            "T.tvm_mma_sync(C.data, 0, a.data, 0, B.data, 0, C.data, 0)",
            "T.tvm_mma_sync: a is a wmma fragment, and the call's first operand is not",
        ),
    ],
)
def test_fragments_and_plain_memory_do_not_mix(call: str, message: str) -> None:
    text = program((16, 16, 16), "float16", "float32").replace(
        "T.tvm_mma_sync(c.data, 0, a.data, 0, b.data, 0, c.data, 0)", call
    )
    found, source = _error(text)
    assert (found, source) == (message, call)


def test_a_fragment_loaded_in_two_layouts_is_refused() -> None:
    text = program((16, 16, 16), "float16", "float32").replace(
        "    T.tvm_mma_sync",
        '    T.tvm_load_matrix_sync(a.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("'
        'float16"), A.data, 0, 256, 1), 16, "col_major")\n    T.tvm_mma_sync',
    )
    found, source = _error(text)
    assert "a col-major load of a fragment first loaded row-major" in found
    assert 'T.type_annotation("float16"), A.data, 0, 256, 1), 16, "col_major")' in source


@pytest.mark.parametrize(
    ("shape", "ab", "acc", "arch", "message"),
    [
        ((16, 16, 16), "bfloat16", "float32", "sm_75", "needs sm_80 and PTX ISA 7.0"),
        ((16, 16, 16), "int8", "int32", "sm_70", "needs sm_72 and PTX ISA 6.3"),
        ((32, 8, 16), "float16", "float32", "sm_70", "needs sm_70 and PTX ISA 6.1"),
    ],
)
def test_an_architecture_without_the_wmma_is_refused_at_the_fragment(
    shape: tuple[int, int, int], ab: str, acc: str, arch: str, message: str
) -> None:
    """LLVM would abort the process ("Cannot select") on these."""
    with pytest.raises(DiagnosticError) as caught:
        emit_ptx(lowered(program(shape, ab, acc)), arch=arch)
    messages = [d.message for d in caught.value.diagnostics]
    assert messages and all(message in m and arch in m for m in messages), messages
    assert all(d.span is not None for d in caught.value.diagnostics)


def test_m16n16k16_float16_is_emitted_for_sm_70() -> None:
    """(ptxas 13 no longer assembles sm_70: the PTX is checked as text.)"""
    ptx = emit_ptx(lowered(program((16, 16, 16), "float16", "float32")), arch="sm_70")
    assert ".version 6.0" in ptx
    assert "wmma.mma.sync.row.col.m16n16k16.f32.f32" in ptx  # PTX ISA 6.0: no .aligned


# a warp computes a 32 x 64 tile of C as 2 x 4 accumulator fragments, over K in steps of 16
TILE = """
@T.prim_func
def main(A: T.Buffer((4096,), "float16"), B: T.Buffer((4096,), "float16"), C: T.Buffer((2048,), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    a = T.alloc_buffer((512,), "float16", scope="wmma.matrix_a")
    b = T.alloc_buffer((1024,), "float16", scope="wmma.matrix_b")
    c = T.alloc_buffer((2048,), "float32", scope="wmma.accumulator")
    for i in range(8):
        T.tvm_fill_fragment(c.data, 16, 16, 16, i, T.float32(0))
    for k in range(4):
        for i in range(2):
            T.tvm_load_matrix_sync(a.data, 16, 16, 16, i, T.tvm_access_ptr(T.type_annotation("float16"), A.data, i * 1024 + k * 16, 256, 1), 64, "row_major")
        for j in range(4):
            T.tvm_load_matrix_sync(b.data, 16, 16, 16, j, T.tvm_access_ptr(T.type_annotation("float16"), B.data, k * 1024 + j * 16, 256, 1), 64, "row_major")
        for i in range(2):
            for j in range(4):
                T.tvm_mma_sync(c.data, i * 4 + j, a.data, i, b.data, j, c.data, i * 4 + j)
    for i in range(2):
        for j in range(4):
            T.tvm_store_matrix_sync(c.data, 16, 16, 16, i * 4 + j, T.tvm_access_ptr(T.type_annotation("float32"), C.data, i * 1024 + j * 16, 256, 2), 64, "row_major")
"""  # noqa: E501


def _ptxas_resources(ptx: str, arch: str, directory: Path) -> tuple[int, int]:
    """(registers, stack frame bytes) of the one kernel, as ptxas -v says."""
    path = directory / "k.ptx"
    path.write_text(ptx)
    done = subprocess.run(
        [require_tool("ptxas"), f"-arch={arch}", "-v", str(path), "-o", str(directory / "k.o")],
        capture_output=True,
        text=True,
        check=True,
    )
    (kernel,) = parse_ptxas_log(done.stderr)
    assert not kernel.spills
    return kernel.registers, kernel.stack_frame


def _nvcc_ptx(module: IRModule, arch: str, directory: Path) -> str:
    cu = directory / "k.cu"
    cu.write_text(emit_cuda(module))
    out = directory / "nvcc.ptx"
    subprocess.run(
        [require_tool("nvcc"), f"-arch={arch}", "-ptx", str(cu), "-o", str(out)], check=True
    )
    return out.read_text()


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_fragments_stay_in_registers(arch: str, tmp_path: Path) -> None:
    """Eight accumulators and six operand fragments, indexed by loop variables: the loops are
    unrolled, so no fragment is in local memory, and ptxas needs no more registers than for
    nvcc's PTX of the CUDA C."""
    module = lowered(TILE)
    registers, stack = _ptxas_resources(emit_ptx(module, arch=arch), arch, tmp_path)
    assert stack == 0
    cuda_registers, cuda_stack = _ptxas_resources(_nvcc_ptx(module, arch, tmp_path), arch, tmp_path)
    assert cuda_stack == 0
    assert registers <= cuda_registers, (registers, cuda_registers)


# tvm_*_matrix_sync on global memory (the conformance cases' opaque-access blocks): loops
PLAIN = """
@T.prim_func
def main(A: T.Buffer((256,), "float16"), B: T.Buffer((256,), "float16"), C: T.Buffer((256,), "float32"), D: T.Buffer((256,), "float32")):
    tx = T.launch_thread("threadIdx.x", 1)
    T.tvm_fill_fragment(D.data, 16, 16, 16, 0, T.float32(2))
    T.tvm_load_matrix_sync(C.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 256, 1), 16, "col_major")
    T.tvm_mma_sync(D.data, 0, A.data, 0, B.data, 0, C.data, 0)
    T.tvm_store_matrix_sync(C.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 256, 2), 16, "row_major")
"""  # noqa: E501


def test_calls_on_plain_memory_are_loops(tmp_path: Path) -> None:
    ir_ptx = emit_ptx(lowered(PLAIN), arch="sm_90", opt_level=0)
    assert "wmma." not in ir_ptx
    # the mma accumulates float16 products in float32 (C's type), as the interpreter does
    assert re.search(r"cvt\.f32\.f16", ir_ptx) and "fma.rn.f32" not in ir_ptx
    assert re.search(r"mul\.rn\.f32", ir_ptx) and re.search(r"add\.rn\.f32", ir_ptx)
    assert not ptxas_accepts(ir_ptx, tmp_path, arch="sm_90")


def test_a_plain_pointer_of_unknown_type_is_refused() -> None:
    text = PLAIN.replace(
        "T.tvm_fill_fragment(D.data",
        "p: T.let[T.handle] = T.address_of(D[0])\n    T.tvm_fill_fragment(p",
    )
    with pytest.raises(DiagnosticError, match="cannot tell what p points at"):
        emit_ptx(lowered(text), arch="sm_90")


SAMPLE = GPU_SAMPLES / "matmul_fp16_tc.tir"


def _sample() -> IRModule:
    """samples/gpu/matmul_fp16_tc at N=64, scheduled (not lowered)."""
    module = parse(SAMPLE.read_text(), name=str(SAMPLE), defines={"N": "64"})
    scheduled, _ = apply_plan_file(module, str(GPU_SAMPLES / "matmul_fp16_tc.plan.json"))
    return scheduled


def test_tiles_in_shared_memory_use_the_shared_form(tmp_path: Path) -> None:
    """The sample's A and B tiles are staged in shared memory: their loads are the `.shared`
    instructions (as nvcc's), C's store to global memory the generic one."""
    ptx = emit_ptx(lower_module(_sample(), target="cuda"), arch="sm_80")
    assert ptx.count("wmma.load.a.sync.aligned.row.m16n16k16.shared.f16") == 2
    assert ptx.count("wmma.load.b.sync.aligned.row.m16n16k16.shared.f16") == 2
    assert ptx.count("wmma.store.d.sync.aligned.row.m16n16k16.f32") == 4
    assert not ptxas_accepts(ptx, tmp_path, arch="sm_80")


def _interpreted(modules: list[IRModule]) -> Callable[[FakeDriver, Launch], None]:
    """A fake GPU's kernel: the interpreter runs the launched kernel of the last of `modules`
    (the one loaded) on the device memory its pointer arguments name."""

    def run_kernel(driver: FakeDriver, launch: Launch) -> None:
        module = modules[-1]
        kernel = module[launch.kernel]
        buffers = {buffer.data: buffer for _, buffer in kernel.buffer_map}
        args: dict[str, np.ndarray | int | float | bool] = {}
        views = []
        for param, (_, value) in zip(kernel.params, launch.args, strict=True):
            if not param.dtype.is_handle:
                assert isinstance(value, (int, float))
                args[param.name] = value
                continue
            element = pointer_element(param, buffers)
            assert element is not None and isinstance(value, int)
            allocation = driver.allocations[value]
            array = np.frombuffer(allocation.data, dtype=str(element)).copy()
            args[param.name] = array
            views.append((value, array))
        run(kernel, args, module=module)
        for address, array in views:
            driver.write(address, array.tobytes())

    return run_kernel


@pytest.mark.parametrize("via", ["cuda-c", "llvm"])
def test_the_sample_runs_on_the_fake_driver(
    via: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The same launch (host code, arguments) fits the kernel from CUDA C (nvcc's PTX) and
    from LLVM, and gives the product the interpreter computes for the lowered kernel."""
    scheduled = _sample()
    made: list[IRModule] = []
    module_image = run_cuda.module_image

    def image(lowered_module: IRModule, arch: str, **options: object) -> bytes:
        made.append(lowered_module)
        if via == "llvm":
            return module_image(lowered_module, arch, ptx=True, via="llvm")
        return _nvcc_ptx(lowered_module, arch, tmp_path).encode() + b"\0"

    monkeypatch.setattr(run_cuda, "module_image", image)
    driver = FakeDriver(run_kernel=_interpreted(made))
    rng = np.random.default_rng(7)
    a = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 64)).astype(np.float16)
    c = np.full((64, 64), np.nan, np.float32)
    arrays: dict[str, np.ndarray | int] = {"A": a, "B": b, "C": c}
    target = "cuda -arch=sm_80"
    run_cuda.run_on_cuda(
        scheduled, "main", scheduled["main"], target, arrays, device=fake_device(driver)
    )
    (launched,) = driver.launches
    assert launched.kernel == "main_kernel" and launched.block == (32, 1, 1)
    assert [kind for kind, _ in launched.args] == ["u64", "u64", "u64"]
    want = a.astype(np.float64) @ b.astype(np.float64)
    result = arrays["C"]  # the array copied back
    assert isinstance(result, np.ndarray)
    np.testing.assert_allclose(result, want, rtol=1e-5, atol=1e-5)
    assert driver.leaks() == []
