/* A C program that links several of tirc's gallery kernels (objects and headers made by
   `make -C samples`), runs each on deterministic inputs and checks it against a naive loop
   (gallery.h). Build and run: make -C samples run-c (or make -C samples/c_client). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_matmul.h"
#include "conv2d.h"
#include "depthwise_conv2d.h"
#include "elementwise.h"
#include "gallery.h"
#include "gemv_int8.h"
#include "layernorm.h"
#include "matmul.h"
#include "reduction.h"
#include "softmax.h"
#include "transpose.h"

/* one caller per kernel, in GALLERY's order: the buffers, in parameter order */
static int call_matmul(void **b) { return matmul_main(b[0], b[1], b[2]); }
static int call_batch_matmul(void **b) { return batch_matmul_main(b[0], b[1], b[2]); }
static int call_conv2d(void **b) { return conv2d_main(b[0], b[1], b[2]); }
static int call_depthwise_conv2d(void **b) { return depthwise_conv2d_main(b[0], b[1], b[2]); }
static int call_softmax(void **b) { return softmax_main(b[0], b[1]); }
static int call_layernorm(void **b) { return layernorm_main(b[0], b[1], b[2], b[3]); }
static int call_reduction(void **b) { return reduction_main(b[0], b[1]); }
static int call_transpose(void **b) { return transpose_main(b[0], b[1]); }
static int call_elementwise(void **b) { return elementwise_main(b[0], b[1], b[2]); }
static int call_gemv_int8(void **b) { return gemv_int8_main(b[0], b[1], b[2]); }

static int (*const CALLS[])(void **) = {
    call_matmul,  call_batch_matmul, call_conv2d,    call_depthwise_conv2d, call_softmax,
    call_layernorm, call_reduction,  call_transpose, call_elementwise,      call_gemv_int8,
};
_Static_assert(sizeof(CALLS) / sizeof(CALLS[0]) == GALLERY_SIZE, "one caller per kernel");

static void *aligned_buffer(const struct buffer_spec *spec) {
    /* the kernels rely on the 64-byte alignment their buffers declare */
    size_t bytes = (spec->count * element_size(spec->type) + 63) / 64 * 64;
    return aligned_alloc(64, bytes);
}

/* 0 when kernel `index` matches its reference */
static int check(int index) {
    const struct kernel_spec *kernel = &GALLERY[index];
    void *got[4] = {0}, *want[4] = {0};
    int failed = 0;
    for (int i = 0; i < kernel->buffer_count; ++i) {
        const struct buffer_spec *spec = &kernel->buffers[i];
        got[i] = aligned_buffer(spec);
        want[i] = aligned_buffer(spec);
        if (!got[i] || !want[i]) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
        fill_buffer(got[i], spec, (unsigned)(index * 8 + i));
        memcpy(want[i], got[i], spec->count * element_size(spec->type));
    }
    int status = CALLS[index](got);
    kernel->reference(want);
    if (status != 0) {
        fprintf(stderr, "FAIL: %s returned %d\n", kernel->name, status);
        failed = 1;
    }
    for (int i = 0; i < kernel->buffer_count && !failed; ++i) {
        const struct buffer_spec *spec = &kernel->buffers[i];
        double worst = largest_error(got[i], want[i], spec);
        if (!(worst < 1e-4)) {
            fprintf(stderr, "FAIL: %s: %s differs from the naive loop (largest relative error %g)\n",
                    kernel->title, spec->name, worst);
            failed = 1;
        } else if (spec->is_output) {
            printf("ok: %s matches the naive loop (largest relative error %.3g)\n", kernel->title,
                   worst);
        }
    }
    for (int i = 0; i < kernel->buffer_count; ++i) {
        free(got[i]);
        free(want[i]);
    }
    return failed;
}

int main(void) {
    int failures = 0;
    for (int i = 0; i < GALLERY_SIZE; ++i) failures += check(i);
    if (failures) {
        fprintf(stderr, "%d of %d kernels failed\n", failures, (int)GALLERY_SIZE);
        return 1;
    }
    printf("all %d kernels match\n", (int)GALLERY_SIZE);
    return 0;
}
