"""Device helpers the generated code may call, each included only where it is used.

Keyed by function name; `helpers_used` finds the calls in emitted text.
"""

from __future__ import annotations

import re

from tirc.codegen.cuda.cluster import DEVICE_HELPERS as CLUSTER_DEVICE
from tirc.codegen.cuda.cluster import HELPER_PATTERN as CLUSTER_PATTERN
from tirc.codegen.cuda.tma_helpers import DEVICE_HELPERS as TMA_DEVICE
from tirc.codegen.cuda.tma_helpers import HOST_HELPERS as TMA_HOST

FLOOR = """\
// Floor division and modulo for signed integers (C's / and % truncate toward zero).
template <typename T>
__host__ __device__ __forceinline__ T tirc_floordiv(T a, T b) {
    T q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T>
__host__ __device__ __forceinline__ T tirc_floormod(T a, T b) {
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
"""

Q_MULTIPLY_SHIFT = """\
// ((x << left) * y) shifted right by `right`, rounding half up: exact in 128 bits.
template <typename T>
__device__ __forceinline__ T tirc_multiply_round_shift(T x, T y, int left, int right) {
    __int128 product = ((__int128)x << left) * (__int128)y;
    if (right > 0) product = (product + ((__int128)1 << (right - 1))) >> right;
    return (T)product;
}
// round(x * y * 2^(s - q)), half up: a fixed-point multiply.
template <typename T>
__device__ __forceinline__ T tirc_q_multiply_shift(T x, T y, int q, int s) {
    return tirc_multiply_round_shift(x, y, s > 0 ? s : 0, (s < 0 ? -s : 0) + q);
}
// the per-channel form: each shift taken only where its flag is set.
template <typename T>
__device__ __forceinline__ T tirc_q_multiply_shift_per_axis(T x, T y, int left, int right,
                                                            int q, bool left_required,
                                                            bool right_required) {
    return tirc_multiply_round_shift(x, y, left_required ? left : 0,
                                     q + (right_required ? right : 0));
}
"""

WMMA = """\
// tvm_*_matrix_sync on memory that is not a fragment: the interpreter's definition, one
// thread at a time (fragments row-major, fragment `index` at element index * size).
template <typename T, typename V>
__device__ void tirc_fill_fragment(T* f, int size, long long index, V value) {
    for (int e = 0; e < size; ++e) f[index * size + e] = (T)value;
}
template <typename T, typename P>
__device__ void tirc_load_matrix_sync(T* f, int rows, int cols, long long index, const P* p,
                                      long long stride, bool row_major) {
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c)
            f[index * rows * cols + r * cols + c] =
                (T)p[row_major ? r * stride + c : c * stride + r];
}
template <typename T, typename P>
__device__ void tirc_store_matrix_sync(const T* f, int m, int n, long long index, P* p,
                                       long long stride, bool row_major) {
    for (int r = 0; r < m; ++r)
        for (int c = 0; c < n; ++c)
            p[row_major ? r * stride + c : c * stride + r] = (P)f[index * m * n + r * n + c];
}
template <typename D, typename A, typename B, typename C>
__device__ void tirc_mma_sync(D* d, long long di, const A* a, long long ai, const B* b,
                              long long bi, const C* c, long long ci, int m, int n, int k) {
    for (int r = 0; r < m; ++r)
        for (int col = 0; col < n; ++col) {
            C sum = c[ci * m * n + r * n + col];
            for (int x = 0; x < k; ++x)
                sum += (C)a[ai * m * k + r * k + x] * (C)b[bi * k * n + x * n + col];
            d[di * m * n + r * n + col] = (D)sum;
        }
}
"""

DP4A = """\
// __dp4a for operands of mixed signs, which CUDA does not overload: PTX dp4a.atype.btype
// d, a, b, c sums c and the products of a's and b's four bytes (d and c are s32).
__device__ __forceinline__ int tirc_dp4a_s32_u32(int a, unsigned int b, int c) {
    int d;
    asm("dp4a.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
__device__ __forceinline__ int tirc_dp4a_u32_s32(unsigned int a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
// four bytes as one 32-bit word, signed as the bytes are
__device__ __forceinline__ int tirc_dp4a_word(char4 v) { return *(int*)&v; }
__device__ __forceinline__ unsigned int tirc_dp4a_word(uchar4 v) { return *(unsigned int*)&v; }
"""

ALLOCA = """\
// Per-thread memory whose size only the launch knows, from the thread's stack. PTX's alloca,
// as NVRTC has no alloca().
#define TIRC_ALLOCA(pointer, bytes) \\
    asm volatile("{\\n\\t.reg .u64 tirc_p;\\n\\talloca.u64 tirc_p, %1, 16;\\n\\t" \\
                 "cvta.local.u64 %0, tirc_p;\\n\\t}" \\
                 : "=l"(pointer) : "l"((unsigned long long)(bytes)))
"""

MMA_REGISTERS = """\
// mma.sync accumulators in registers (T.mma_fill, T.mma_store): lane l of the warp holds
// elements (l / 4 + 8 * (e / 2), 2 * (l % 4) + e % 2) of each m16n8 tile, e = 0..3.
__device__ __forceinline__ unsigned tirc_lane_id() {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}
template <typename T>
__device__ __forceinline__ void tirc_mma_fill(T* registers, int size) {
    for (int i = 0; i < size; ++i) registers[i] = T(0);
}
// A lane's two elements of a row are neighbours: one store of both where they are aligned.
template <typename T>
struct alignas(2 * sizeof(T)) tirc_pair { T x, y; };
template <typename T, typename S>
__device__ __forceinline__ void tirc_mma_store(T* dst, const T* registers, int tiles, S stride) {
    unsigned lane = tirc_lane_id();
    unsigned long long bytes = (unsigned long long)stride * sizeof(T);
    bool paired = (((unsigned long long)dst | bytes) % (2 * sizeof(T))) == 0;
    for (int i = 0; i < 4 * tiles; i += 2) {
        int e = i % 4;
        long long row = lane / 4 + 8 * (e / 2);
        long long col = 8 * (i / 4) + 2 * (lane % 4);
        T* at = dst + row * stride + col;
        if (paired) {
            *(tirc_pair<T>*)at = tirc_pair<T>{registers[i], registers[i + 1]};
        } else {
            at[0] = registers[i];
            at[1] = registers[i + 1];
        }
    }
}
"""

# the first helper whose name a piece of code calls brings in its whole text
_HELPERS: tuple[tuple[str, str], ...] = (
    (r"tirc_floor(div|mod)\(", FLOOR),
    (r"tirc_q_multiply_shift(_per_axis)?\(", Q_MULTIPLY_SHIFT),
    (r"tirc_dp4a_\w+\(", DP4A),
    (r"TIRC_ALLOCA\(", ALLOCA),
    (r"tirc_(fill_fragment|load_matrix_sync|store_matrix_sync|mma_sync)\(", WMMA),
    (r"tirc_mma_(fill|store)\(", MMA_REGISTERS),
    (r"\btirc_tensor_map\b|tirc_mbarrier_wait\(", TMA_DEVICE),
    (r"tirc_encode_tensor_map\(", TMA_HOST),
    (CLUSTER_PATTERN, CLUSTER_DEVICE),
)


def helpers_used(code: str) -> list[str]:
    return [text for pattern, text in _HELPERS if re.search(pattern, code)]
