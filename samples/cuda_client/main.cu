/* A CUDA host program that calls the launchers tirc generated for the gallery's cuda plans
   (`extern "C" int NAME_main_launch(device pointers..., cudaStream_t)` in build/NAME.cu),
   and checks each result against the naive loops of ../c_client/gallery.h.
   Build: make -C samples (with nvcc on PATH); run, on a machine with a GPU:
   make -C samples run-cuda */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "../c_client/gallery.h"

extern "C" {
int matmul_main_launch(float *A, float *B, float *C, cudaStream_t stream);
int batch_matmul_main_launch(float *A, float *B, float *C, cudaStream_t stream);
int conv2d_main_launch(float *data, float *weight, float *conv, cudaStream_t stream);
int depthwise_conv2d_main_launch(float *data, float *weight, float *conv, cudaStream_t stream);
int softmax_main_launch(float *A, float *B, cudaStream_t stream);
int layernorm_main_launch(float *A, float *gamma, float *beta, float *B, cudaStream_t stream);
int reduction_main_launch(float *A, float *B, cudaStream_t stream);
int transpose_main_launch(float *A, float *B, cudaStream_t stream);
int elementwise_main_launch(float *A, float *B, float *C, cudaStream_t stream);
int gemv_int8_main_launch(int8_t *A, int8_t *x, int32_t *y, cudaStream_t stream);
}

#define F(i) static_cast<float *>(d[i])
static int call_matmul(void **d, cudaStream_t s) { return matmul_main_launch(F(0), F(1), F(2), s); }
static int call_batch_matmul(void **d, cudaStream_t s) {
    return batch_matmul_main_launch(F(0), F(1), F(2), s);
}
static int call_conv2d(void **d, cudaStream_t s) { return conv2d_main_launch(F(0), F(1), F(2), s); }
static int call_depthwise_conv2d(void **d, cudaStream_t s) {
    return depthwise_conv2d_main_launch(F(0), F(1), F(2), s);
}
static int call_softmax(void **d, cudaStream_t s) { return softmax_main_launch(F(0), F(1), s); }
static int call_layernorm(void **d, cudaStream_t s) {
    return layernorm_main_launch(F(0), F(1), F(2), F(3), s);
}
static int call_reduction(void **d, cudaStream_t s) { return reduction_main_launch(F(0), F(1), s); }
static int call_transpose(void **d, cudaStream_t s) { return transpose_main_launch(F(0), F(1), s); }
static int call_elementwise(void **d, cudaStream_t s) {
    return elementwise_main_launch(F(0), F(1), F(2), s);
}
static int call_gemv_int8(void **d, cudaStream_t s) {
    return gemv_int8_main_launch(static_cast<int8_t *>(d[0]), static_cast<int8_t *>(d[1]),
                                 static_cast<int32_t *>(d[2]), s);
}
#undef F

static int (*const CALLS[])(void **, cudaStream_t) = {
    call_matmul,    call_batch_matmul, call_conv2d,    call_depthwise_conv2d, call_softmax,
    call_layernorm, call_reduction,    call_transpose, call_elementwise,      call_gemv_int8,
};
static_assert(sizeof(CALLS) / sizeof(CALLS[0]) == GALLERY_SIZE, "one caller per kernel");

static bool cuda_ok(cudaError_t error, const char *what) {
    if (error == cudaSuccess) return true;
    std::fprintf(stderr, "FAIL: %s: %s\n", what, cudaGetErrorString(error));
    return false;
}

/* 0 when kernel `index` run on the device matches its reference */
static int check(int index) {
    const kernel_spec &kernel = GALLERY[index];
    void *host[4] = {}, *want[4] = {}, *device[4] = {};
    bool ok = true;
    for (int i = 0; i < kernel.buffer_count && ok; ++i) {
        const buffer_spec &spec = kernel.buffers[i];
        size_t bytes = spec.count * element_size(spec.type);
        host[i] = std::malloc(bytes);
        want[i] = std::malloc(bytes);
        fill_buffer(host[i], &spec, static_cast<unsigned>(index * 8 + i));
        std::memcpy(want[i], host[i], bytes);
        ok = cuda_ok(cudaMalloc(&device[i], bytes), "cudaMalloc") &&
             cuda_ok(cudaMemcpy(device[i], host[i], bytes, cudaMemcpyHostToDevice), "copy in");
    }
    if (ok) {
        int status = CALLS[index](device, 0);
        ok = status == 0 || cuda_ok(static_cast<cudaError_t>(status), kernel.name);
        ok = ok && cuda_ok(cudaDeviceSynchronize(), kernel.name);
    }
    kernel.reference(want);
    for (int i = 0; i < kernel.buffer_count && ok; ++i) {
        const buffer_spec &spec = kernel.buffers[i];
        if (!spec.is_output) continue;
        size_t bytes = spec.count * element_size(spec.type);
        ok = cuda_ok(cudaMemcpy(host[i], device[i], bytes, cudaMemcpyDeviceToHost), "copy out");
        double worst = ok ? largest_error(host[i], want[i], &spec) : 1.0;
        if (ok && !(worst < 1e-4)) {
            std::fprintf(stderr, "FAIL: %s: %s differs from the naive loop (largest error %g)\n",
                         kernel.title, spec.name, worst);
            ok = false;
        } else if (ok) {
            std::printf("ok: %s on the GPU matches the naive loop (largest relative error %.3g)\n",
                        kernel.title, worst);
        }
    }
    for (int i = 0; i < kernel.buffer_count; ++i) {
        std::free(host[i]);
        std::free(want[i]);
        if (device[i]) cudaFree(device[i]);
    }
    return ok ? 0 : 1;
}

int main() {
    int count = 0;
    if (!cuda_ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount") || count == 0) {
        std::fprintf(stderr, "no CUDA device\n");
        return 2;
    }
    int failures = 0;
    for (int i = 0; i < GALLERY_SIZE; ++i) failures += check(i);
    if (failures) {
        std::fprintf(stderr, "%d of %d kernels failed\n", failures, static_cast<int>(GALLERY_SIZE));
        return 1;
    }
    std::printf("all %d kernels match on the GPU\n", static_cast<int>(GALLERY_SIZE));
    return 0;
}
