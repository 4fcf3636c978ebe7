"""The C helpers of Hopper's mbarriers and TMA loads (tirc.codegen.cuda.tma): the tensor-map
type and the mbarrier wait loop in device code, and the launcher's tensor-map encoding, which
calls the driver through the runtime's entry point so that the launcher links with -lcudart
alone. tirc.codegen.cuda.helpers includes each where the code uses it."""

DEVICE_HELPERS = """\
// CUtensorMap's layout, for the kernels' __grid_constant__ parameters (NVRTC has no cuda.h).
struct __align__(64) tirc_tensor_map { unsigned long long opaque[16]; };
// mbarrier.try_wait.parity until the phase of that parity has completed.
__device__ __forceinline__ void tirc_mbarrier_wait(unsigned barrier, unsigned parity) {
    unsigned done = 0;
    do {
        asm volatile(
            "{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n"
            "selp.u32 %0, 1, 0, p;\\n}\\n" : "=r"(done) : "r"(barrier), "r"(parity) : "memory");
    } while (!done);
}
"""

HOST_HELPERS = """\
#if !defined(__CUDACC_RTC__)
#include <cuda.h>
// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda to link):
// `rank` dimensions innermost first, strides in bytes of all but the innermost.
static int tirc_encode_tensor_map(tirc_tensor_map* map, CUtensorMapDataType dtype,
                                  unsigned rank, void* address, const cuuint64_t* dims,
                                  const cuuint64_t* strides, const cuuint32_t* box, int swizzle) {
    typedef CUresult (*Encode)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                               const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                               const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                               CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
    static Encode encode = nullptr;
    if (encode == nullptr) {
        void* function = nullptr;
        cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000,
                                             cudaEnableDefault, &found) != cudaSuccess ||
            found != cudaDriverEntryPointSuccess)
            return (int)cudaErrorNotSupported;
        encode = (Encode)function;
    }
    const cuuint32_t ones[5] = {1, 1, 1, 1, 1};
    CUtensorMapSwizzle mode = swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                              : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                              : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                              : CU_TENSOR_MAP_SWIZZLE_NONE;
    CUresult result = encode((CUtensorMap*)map, dtype, rank, address, dims, strides, box, ones,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, mode,
                             CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return result == CUDA_SUCCESS ? 0 : (int)cudaErrorInvalidValue;
}
#endif
"""
