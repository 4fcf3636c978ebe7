"""The CUDA emulator's device model on hand-written kernels: barriers, shuffles, 16-bit float
rounding, dynamic shared memory, and what it reports (a deadlock, a crash, inline PTX)."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

from tests.runtime.cuda_emulator import (
    DeviceMemory,
    EmulationError,
    KernelFault,
    Library,
    Unsupported,
    compile_cuda,
    inline_asm_reason,
)

SOURCE = r"""
extern "C" __global__ void __launch_bounds__(64) reverse(float* __restrict__ A, int n) {
    __shared__ __align__(16) float tile[64];
    int t = (int)threadIdx.x;
    tile[t] = A[blockIdx.x * 64 + t];
    __syncthreads();
    A[blockIdx.x * 64 + t] = tile[63 - t] + (float)n;
}

extern "C" __global__ void shuffles(int* __restrict__ out) {
    int lane = (int)threadIdx.x;
    out[lane] = __shfl_down_sync(0xffffffffu, lane, 3, 32);
    out[32 + lane] = __shfl_xor_sync(0xffffffffu, lane, 1, 8);
    out[64 + lane] = __shfl_sync(0xffffffffu, lane * 10, 5, 16);
    out[96 + lane] = __shfl_up_sync(0xffffffffu, lane, 2, 32);
}

extern "C" __global__ void narrow(float* __restrict__ A, unsigned short* __restrict__ H,
                                  unsigned short* __restrict__ B) {
    int t = (int)threadIdx.x;
    H[t] = __half_as_ushort((half)A[t]);
    B[t] = __bfloat16_as_ushort((nv_bfloat16)A[t]);
}

extern "C" __global__ void dynamic(float* __restrict__ A) {
    extern __shared__ __align__(16) unsigned char tirc_dynamic_shared[];
    float* staged = (float*)(tirc_dynamic_shared + 16);
    staged[threadIdx.x] = A[threadIdx.x] * 2.0f;
    __syncthreads();
    A[threadIdx.x] = staged[(threadIdx.x + 1) % blockDim.x];
}

extern "C" __global__ void divergent(float* __restrict__ A) {
    if (threadIdx.x < 16) {
        __syncthreads();
    }
    A[threadIdx.x] = 1.0f;
}

extern "C" __global__ void out_of_bounds(float* __restrict__ A) {
    A[threadIdx.x * 1048576] = 1.0f;
}
"""


@pytest.fixture(scope="module")
def library() -> Library:
    return compile_cuda(SOURCE)


def _memory(array: np.ndarray) -> tuple[DeviceMemory, ctypes.c_void_p]:
    memory = DeviceMemory(array.nbytes)
    memory.view[:] = array.tobytes()
    return memory, ctypes.c_void_p(memory.address)


def _read(memory: DeviceMemory, dtype: str, count: int) -> np.ndarray:
    return np.frombuffer(bytes(memory.view), dtype=dtype, count=count)


def test_a_barrier_orders_shared_memory_across_blocks(library: Library) -> None:
    values = np.arange(128, dtype="float32")
    memory, pointer = _memory(values)
    library.launch("reverse", (2, 1, 1), (64, 1, 1), 0, [pointer, ctypes.c_int(1000)])
    expected = np.concatenate([values[:64][::-1], values[64:][::-1]]) + 1000
    assert np.array_equal(_read(memory, "float32", 128), expected)


def test_shuffles_follow_cuda_lane_rules(library: Library) -> None:
    memory, pointer = _memory(np.zeros(128, "int32"))
    library.launch("shuffles", (1, 1, 1), (32, 1, 1), 0, [pointer])
    out = _read(memory, "int32", 128)
    lanes = np.arange(32)
    assert list(out[:32]) == [lane + 3 if lane + 3 < 32 else lane for lane in lanes]
    assert list(out[32:64]) == list(lanes ^ 1)
    assert list(out[64:96]) == [(lane // 16 * 16 + 5) * 10 for lane in lanes]
    assert list(out[96:]) == [lane - 2 if lane >= 2 else lane for lane in lanes]


def test_half_and_bfloat16_round_to_nearest_even(library: Library) -> None:
    def from_bits(bits: int) -> float:
        return float(struct.unpack("<f", struct.pack("<I", bits))[0])

    values = np.array(
        [
            1.0 + 2.0**-11,  # half: a tie, to even (1.0)
            1.0 + 3 * 2.0**-11,  # half: a tie, to even (1 + 2^-9)
            65520.0,  # half: rounds to infinity
            2.0**-25,  # half: a tie at the smallest subnormal, to zero
            from_bits(0x3F808000),  # bfloat16: a tie, to even (0x3f80)
            from_bits(0x3F818000),  # bfloat16: a tie, to even (0x3f82)
            from_bits(0x3F808001),  # bfloat16: above the tie (0x3f81)
            float("nan"),
        ],
        dtype="float32",
    )
    source, pointer = _memory(values)
    halves, half_pointer = _memory(np.zeros(8, "uint16"))
    bfloats, bfloat_pointer = _memory(np.zeros(8, "uint16"))
    library.launch("narrow", (1, 1, 1), (8, 1, 1), 0, [pointer, half_pointer, bfloat_pointer])
    with np.errstate(over="ignore"):  # 65520 rounds to infinity
        rounded = values[:7].astype("float16").view("uint16")
    assert list(_read(halves, "uint16", 8)[:7]) == list(rounded)
    assert np.isnan(_read(halves, "uint16", 8).view("float16")[7])
    assert list(_read(bfloats, "uint16", 8)[4:7]) == [0x3F80, 0x3F82, 0x3F81]
    assert _read(bfloats, "uint16", 8)[7] & 0x7FC0 == 0x7FC0  # a quiet NaN


def test_dynamic_shared_memory_is_the_launchs(library: Library) -> None:
    values = np.arange(32, dtype="float32")
    memory, pointer = _memory(values)
    library.launch("dynamic", (1, 1, 1), (32, 1, 1), 16 + 32 * 4, [pointer])
    assert np.array_equal(_read(memory, "float32", 32), np.roll(values * 2, -1))


def test_a_barrier_that_half_the_block_skips_is_a_deadlock(library: Library) -> None:
    memory, pointer = _memory(np.zeros(32, "float32"))
    with pytest.raises(EmulationError, match=r"divergent: .*deadlock.*16 threads wait in "):
        library.launch("divergent", (1, 1, 1), (32, 1, 1), 0, [pointer])


def test_an_access_outside_memory_faults(library: Library) -> None:
    memory, pointer = _memory(np.zeros(32, "float32"))
    with pytest.raises(KernelFault, match="out_of_bounds: SIGSEGV"):
        library.launch("out_of_bounds", (1, 1, 1), (32, 1, 1), 0, [pointer])


def test_inline_ptx_is_out_of_scope() -> None:
    source = 'extern "C" __global__ void k() {\n    asm volatile("bar.sync 1, 64;");\n}\n'
    assert inline_asm_reason(source) == (
        "inline PTX (`asm` at line 2 of the CUDA C): out of the emulator's scope"
    )
    with pytest.raises(Unsupported):
        compile_cuda(source)
