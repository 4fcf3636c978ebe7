/* The gallery as the clients see it: each kernel's buffers (in parameter order, with the
   shapes its .tir declares) and a naive reference that computes the outputs from the inputs.
   Shared by c_client/main.c (C) and cuda_client/main.cu (CUDA C++), so it is plain C that
   also compiles as C++. */
#ifndef SAMPLES_GALLERY_H
#define SAMPLES_GALLERY_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

enum element { F32, I8, I32 };

struct buffer_spec {
    const char *name;
    enum element type;
    size_t count;
    int is_output;
};

struct kernel_spec {
    const char *name;  /* the sample's file stem, e.g. "matmul" */
    const char *title; /* what the client prints, e.g. "128x128 matmul" */
    int buffer_count;
    struct buffer_spec buffers[4];
    void (*reference)(void **buffers); /* writes the outputs from the inputs */
};

static void reference_matmul(void **b) {
    const float *A = (const float *)b[0], *B = (const float *)b[1];
    float *C = (float *)b[2];
    for (int i = 0; i < 128; ++i)
        for (int j = 0; j < 128; ++j) {
            double sum = 0.0;
            for (int k = 0; k < 128; ++k) sum += (double)A[i * 128 + k] * B[k * 128 + j];
            C[i * 128 + j] = (float)sum;
        }
}

static void reference_batch_matmul(void **b) {
    const float *A = (const float *)b[0], *B = (const float *)b[1];
    float *C = (float *)b[2];
    for (int n = 0; n < 4; ++n)
        for (int i = 0; i < 64; ++i)
            for (int j = 0; j < 64; ++j) {
                double sum = 0.0;
                for (int k = 0; k < 64; ++k)
                    sum += (double)A[(n * 64 + i) * 64 + k] * B[(n * 64 + k) * 64 + j];
                C[(n * 64 + i) * 64 + j] = (float)sum;
            }
}

/* a 3x3 convolution, stride 1, zero padding 1, over a 1xCxHxW image; groups == C when
   `depthwise` (weight C x 1 x 3 x 3), else a dense one (weight F x C x 3 x 3, F == C) */
static void reference_conv3x3(const float *data, const float *weight, float *out, int channels,
                              int size, int depthwise) {
    for (int f = 0; f < channels; ++f)
        for (int y = 0; y < size; ++y)
            for (int x = 0; x < size; ++x) {
                double sum = 0.0;
                int first = depthwise ? f : 0, last = depthwise ? f + 1 : channels;
                for (int c = first; c < last; ++c)
                    for (int ry = 0; ry < 3; ++ry)
                        for (int rx = 0; rx < 3; ++rx) {
                            int h = y + ry - 1, w = x + rx - 1;
                            if (h < 0 || h >= size || w < 0 || w >= size) continue;
                            int wc = depthwise ? 0 : c;
                            sum += (double)data[(c * size + h) * size + w] *
                                   weight[((f * (depthwise ? 1 : channels) + wc) * 3 + ry) * 3 + rx];
                        }
                out[(f * size + y) * size + x] = (float)sum;
            }
}

static void reference_conv2d(void **b) {
    reference_conv3x3((const float *)b[0], (const float *)b[1], (float *)b[2], 16, 14, 0);
}

static void reference_depthwise_conv2d(void **b) {
    reference_conv3x3((const float *)b[0], (const float *)b[1], (float *)b[2], 32, 28, 1);
}

static void reference_softmax(void **b) {
    const float *A = (const float *)b[0];
    float *B = (float *)b[1];
    for (int i = 0; i < 4; ++i) {
        double top = -INFINITY, sum = 0.0;
        for (int k = 0; k < 64; ++k) top = fmax(top, A[i * 64 + k]);
        for (int k = 0; k < 64; ++k) sum += exp(A[i * 64 + k] - top);
        for (int j = 0; j < 64; ++j) B[i * 64 + j] = (float)(exp(A[i * 64 + j] - top) / sum);
    }
}

static void reference_layernorm(void **b) {
    const float *A = (const float *)b[0], *gamma = (const float *)b[1], *beta = (const float *)b[2];
    float *B = (float *)b[3];
    for (int i = 0; i < 32; ++i) {
        double mean = 0.0, variance = 0.0;
        for (int k = 0; k < 256; ++k) mean += A[i * 256 + k];
        mean /= 256.0;
        for (int k = 0; k < 256; ++k) variance += (A[i * 256 + k] - mean) * (A[i * 256 + k] - mean);
        variance /= 256.0;
        for (int j = 0; j < 256; ++j)
            B[i * 256 + j] =
                (float)((A[i * 256 + j] - mean) / sqrt(variance + 1e-5) * gamma[j] + beta[j]);
    }
}

static void reference_reduction(void **b) {
    const float *A = (const float *)b[0];
    float *B = (float *)b[1];
    for (int i = 0; i < 64; ++i) {
        double sum = 0.0;
        for (int k = 0; k < 256; ++k) sum += A[i * 256 + k];
        B[i] = (float)sum;
    }
}

static void reference_transpose(void **b) {
    const float *A = (const float *)b[0];
    float *B = (float *)b[1];
    for (int i = 0; i < 128; ++i)
        for (int j = 0; j < 256; ++j) B[i * 256 + j] = A[j * 128 + i];
}

static void reference_elementwise(void **b) {
    const float *A = (const float *)b[0], *B = (const float *)b[1];
    float *C = (float *)b[2];
    for (int i = 0; i < 1024; ++i) C[i] = fmaxf(A[i] + B[i], 0.0f);
}

static void reference_gemv_int8(void **b) {
    const int8_t *A = (const int8_t *)b[0], *x = (const int8_t *)b[1];
    int32_t *y = (int32_t *)b[2];
    for (int i = 0; i < 256; ++i) {
        int32_t sum = 0;
        for (int k = 0; k < 512; ++k) sum += (int32_t)A[i * 512 + k] * (int32_t)x[k];
        y[i] = sum;
    }
}

/* in the order of the clients' call tables */
static const struct kernel_spec GALLERY[] = {
    {"matmul", "128x128 matmul", 3,
     {{"A", F32, 128 * 128, 0}, {"B", F32, 128 * 128, 0}, {"C", F32, 128 * 128, 1}},
     reference_matmul},
    {"batch_matmul", "4x64x64 batched matmul", 3,
     {{"A", F32, 4 * 64 * 64, 0}, {"B", F32, 4 * 64 * 64, 0}, {"C", F32, 4 * 64 * 64, 1}},
     reference_batch_matmul},
    {"conv2d", "16-channel 14x14 3x3 conv2d", 3,
     {{"data", F32, 16 * 14 * 14, 0}, {"weight", F32, 16 * 16 * 9, 0},
      {"conv", F32, 16 * 14 * 14, 1}},
     reference_conv2d},
    {"depthwise_conv2d", "32-channel 28x28 3x3 depthwise conv2d", 3,
     {{"data", F32, 32 * 28 * 28, 0}, {"weight", F32, 32 * 9, 0},
      {"conv", F32, 32 * 28 * 28, 1}},
     reference_depthwise_conv2d},
    {"softmax", "4x64 softmax", 2, {{"A", F32, 4 * 64, 0}, {"B", F32, 4 * 64, 1}},
     reference_softmax},
    {"layernorm", "32x256 layernorm", 4,
     {{"A", F32, 32 * 256, 0}, {"gamma", F32, 256, 0}, {"beta", F32, 256, 0},
      {"B", F32, 32 * 256, 1}},
     reference_layernorm},
    {"reduction", "64x256 row sum", 2, {{"A", F32, 64 * 256, 0}, {"B", F32, 64, 1}},
     reference_reduction},
    {"transpose", "256x128 transpose", 2, {{"A", F32, 256 * 128, 0}, {"B", F32, 128 * 256, 1}},
     reference_transpose},
    {"elementwise", "1024-element add+relu", 3,
     {{"A", F32, 1024, 0}, {"B", F32, 1024, 0}, {"C", F32, 1024, 1}},
     reference_elementwise},
    {"gemv_int8", "256x512 int8 gemv (int32 accumulate)", 3,
     {{"A", I8, 256 * 512, 0}, {"x", I8, 512, 0}, {"y", I32, 256, 1}},
     reference_gemv_int8},
};

enum { GALLERY_SIZE = sizeof(GALLERY) / sizeof(GALLERY[0]) };

static size_t element_size(enum element type) {
    return type == F32 ? sizeof(float) : type == I8 ? sizeof(int8_t) : sizeof(int32_t);
}

/* deterministic inputs: small floats in [-1, 1], int8 values over their whole range; outputs
   get a value the kernel must overwrite (NaN, or INT32_MIN) */
static void fill_buffer(void *data, const struct buffer_spec *spec, unsigned seed) {
    for (size_t i = 0; i < spec->count; ++i) {
        unsigned hash = (unsigned)(i * 2654435761u) ^ (seed * 40503u);
        hash ^= hash >> 13;
        hash *= 0x5bd1e995u;
        hash ^= hash >> 15;
        if (spec->type == F32)
            ((float *)data)[i] = spec->is_output ? NAN : (float)(hash % 2001) / 1000.0f - 1.0f;
        else if (spec->type == I8)
            ((int8_t *)data)[i] = (int8_t)(int)(hash % 256 - 128);
        else
            ((int32_t *)data)[i] = INT32_MIN;
    }
}

/* the largest relative error of `got` against `want` (integers: exact, so 0 or 1); NaN-safe */
static double largest_error(const void *got, const void *want, const struct buffer_spec *spec) {
    double worst = 0.0;
    for (size_t i = 0; i < spec->count; ++i) {
        double error;
        if (spec->type == F32) {
            double a = ((const float *)got)[i], b = ((const float *)want)[i];
            error = fabs(a - b) / (1.0 + fabs(b));
        } else if (spec->type == I32) {
            error = ((const int32_t *)got)[i] == ((const int32_t *)want)[i] ? 0.0 : 1.0;
        } else {
            error = ((const int8_t *)got)[i] == ((const int8_t *)want)[i] ? 0.0 : 1.0;
        }
        if (!(error <= worst)) worst = error;
    }
    return worst;
}

#endif /* SAMPLES_GALLERY_H */
