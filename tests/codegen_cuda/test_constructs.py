"""Single constructs through the CUDA C backend (text checked, then nvcc where installed) and
through the NVPTX backend (ptxas where installed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.codegen_cuda.helpers import nvcc_accepts, ptxas_accepts
from tirc.codegen.cuda import emit_cuda
from tirc.codegen.nvptx import emit_ptx
from tirc.ir.function import IRModule
from tirc.text import parse
from tirc.transform.passes.flatten_buffer import FlattenBuffer
from tirc.transform.passes.make_c_abi import MakeCAbi
from tirc.transform.passes.split_host_device import SplitHostDevice

HEADER = "@I.ir_module\nclass Module:\n"
KERNELS = Path(__file__).parent / "kernels"

PROGRAMS = {
    "floordiv_signed": """
    @T.prim_func
    def main(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
        with T.launch_thread("threadIdx.x", 64) as tx:
            B[tx] = A[tx] // 3 + A[tx] % 5
""",
    "half_math": """
    @T.prim_func
    def main(A: T.Buffer((64,), "float16"), B: T.Buffer((64,), "float16")):
        with T.launch_thread("threadIdx.x", 64) as tx:
            B[tx] = T.exp(A[tx]) + T.max(A[tx], T.float16(0.0))
""",
    "vector_copy": """
    @T.prim_func
    def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
        with T.launch_thread("threadIdx.x", 64) as tx:
            B[T.Ramp(tx * 4, 1, 4)] = A[T.Ramp(tx * 4, 1, 4)]
""",
    "half_vector_copy": """
    @T.prim_func
    def main(A: T.Buffer((512,), "float16"), B: T.Buffer((512,), "float16")):
        with T.launch_thread("threadIdx.x", 64) as tx:
            B[T.Ramp(tx * 8, 1, 8)] = A[T.Ramp(tx * 8, 1, 8)]
            B[T.Ramp(tx * 4 + 256, 1, 4)] = A[T.Ramp(tx * 4 + 256, 1, 4)]
            B[T.Ramp(tx * 8 + 1, 1, 8)] = A[T.Ramp(tx * 8 + 1, 1, 8)]
""",
    "dynamic_shape": """
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n,))
        B = T.match_buffer(b, (n,))
        with T.launch_thread("blockIdx.x", (n + 63) // 64) as bx:
            tx = T.launch_thread("threadIdx.x", 64)
            if bx * 64 + tx < n:
                B[bx * 64 + tx] = A[bx * 64 + tx] * T.float32(2.0)
""",
    "shared_and_sync": """
    @T.prim_func
    def main(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        with T.launch_thread("threadIdx.x", 64) as tx:
            S = T.alloc_shared((64,))
            S[tx] = A[tx]
            T.tvm_storage_sync("shared")
            B[tx] = S[63 - tx]
""",
    "dynamic_local_in_loop": """
    @T.prim_func
    def main(a: T.handle, b: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (64 * n,))
        B = T.match_buffer(b, (64,))
        with T.launch_thread("threadIdx.x", 64) as tx:
            for k in range(1000):
                L = T.alloc_local((n,))
                for j in range(n):
                    L[j] = A[tx * n + j] * T.float32(k)
                B[tx] = B[tx] + L[0]
""",
}


def split(module: IRModule) -> IRModule:
    """The module in the form the CUDA backends read (the cuda pipeline ends so): kernels
    split from their host functions, which have C signatures."""
    return MakeCAbi().run(SplitHostDevice().run(module))


def module(name: str) -> IRModule:
    return split(parse(HEADER + PROGRAMS[name], name=name))


def test_signed_floor_division_uses_the_helper() -> None:
    text = emit_cuda(module("floordiv_signed"))
    assert "tirc_floordiv(A[tx], 3)" in text and "tirc_floormod(A[tx], 5)" in text


def test_half_math_goes_through_float() -> None:
    text = emit_cuda(module("half_math"))
    assert "#include <cuda_fp16.h>" in text
    assert "(half)expf((float)A[tx])" in text and "__hmax(" in text


def test_aligned_vector_copy_uses_float4() -> None:
    text = emit_cuda(module("vector_copy"))
    assert "*(float4*)(B + tx * 4) = *(float4*)(A + tx * 4);" in text


def test_aligned_half_vector_copy_moves_raw_words() -> None:
    # CUDA has no 8-half vector struct: a 16-byte copy of 8 halves moves a uint4, 4 halves a
    # uint2 (one ld/st.v4.u32 instead of 8 half loads and stores); a misaligned one stays
    # lane by lane
    text = emit_cuda(module("half_vector_copy"))
    assert "*(uint4*)(B + tx * 8) = *(uint4*)(A + tx * 8);" in text
    assert "*(uint2*)(B + tx * 4 + 256) = *(uint2*)(A + tx * 4 + 256);" in text
    assert "B[tx * 8 + 1 + 7] = A[tx * 8 + 1 + 7];" in text


def test_launcher_takes_shape_variables_and_computes_the_grid() -> None:
    text = emit_cuda(module("dynamic_shape"))
    # named after the function's parameters (a, b: `A = T.match_buffer(a, ...)`), as in C headers
    assert (
        'extern "C" int main_launch(float* a, float* b, int64_t n_arg, cudaStream_t stream)' in text
    )
    assert "int n = (int)n_arg;" in text
    assert "dim3 main_kernel_grid((unsigned int)((n + 63) / 64), 1, 1);" in text


def test_barrier_is_syncthreads() -> None:
    text = emit_cuda(module("shared_and_sync"))
    assert "__shared__ __align__(16) float S[64];" in text and "__syncthreads();" in text


def test_per_thread_array_of_launch_size_is_allocated_once_at_the_kernel_start() -> None:
    # An alloca lives until the kernel returns: one in the loop body would take new stack
    # every iteration and overflow it (an illegal address on the GPU).
    text = emit_cuda(module("dynamic_local_in_loop"))
    allocation = text.index("TIRC_ALLOCA(L, ")
    assert text.count("TIRC_ALLOCA(L, ") == 1
    assert allocation < text.index("for (int k = 0; k < 1000; ++k)")
    ptx = emit_ptx(module("dynamic_local_in_loop"), arch="sm_90")
    body = ptx[ptx.index(".entry main_kernel") :]
    assert body.count("alloca") == 1 and body.index("alloca") < body.index("bra")


def test_warp_wide_tensor_core_call_in_a_block_smaller_than_a_warp_is_refused() -> None:
    # mma.sync and ldmatrix spread their operands over the 32 lanes of a warp: in a block of
    # 16 threads half of every fragment is missing, and the GPU computes garbage
    from tirc.diagnostics import DiagnosticError

    text = (KERNELS / "mma_f16f32.tir").read_text()
    small = parse(
        text.replace('T.launch_thread("threadIdx.x", 32)', 'T.launch_thread("threadIdx.x", 16)')
    )
    small = split(FlattenBuffer().run(small))  # its buffers are 2-d: flat, as lowered
    for emit in (emit_cuda, lambda m: emit_ptx(m, arch="sm_90")):
        with pytest.raises(DiagnosticError) as caught:
            emit(small)
        message = str(caught.value)
        assert "T.ptx_ldmatrix" in message and "16 threads" in message
        assert "multiple of 32" in message and ":17:5:" in message  # the call


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cuda_c_compiles(name: str, tmp_path: Path) -> None:
    complaint = nvcc_accepts(emit_cuda(module(name)), tmp_path)
    assert not complaint, complaint


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_llvm_ptx_assembles(name: str, tmp_path: Path) -> None:
    ptx = emit_ptx(module(name), arch="sm_90")
    assert ".target sm_90" in ptx and ".entry main_kernel" in ptx
    complaint = ptxas_accepts(ptx, tmp_path)
    assert not complaint, complaint
