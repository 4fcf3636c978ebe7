/* A C program that calls tirc's matmul kernel through its header and object file, and checks
   the result against a naive loop. Build and run: make -C samples/c_client */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "matmul.h"

enum { N = 128 };

static float *aligned_matrix(void) {
    /* the kernel relies on the 64-byte alignment its buffers declare */
    return aligned_alloc(64, sizeof(float) * N * N);
}

int main(void) {
    float *a = aligned_matrix(), *b = aligned_matrix(), *c = aligned_matrix();
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    for (int i = 0; i < N * N; ++i) {
        a[i] = (float)((i * 7) % 17 - 8) / 8.0f;
        b[i] = (float)((i * 5) % 13 - 6) / 4.0f;
        c[i] = NAN; /* the kernel must overwrite every element */
    }
    int status = matmul_main(a, b, c);
    if (status != 0) {
        fprintf(stderr, "matmul_main returned %d\n", status);
        return 1;
    }
    double worst = 0.0;
    for (int i = 0; i < N; ++i) {
        for (int j = 0; j < N; ++j) {
            double expected = 0.0;
            for (int k = 0; k < N; ++k) expected += (double)a[i * N + k] * b[k * N + j];
            double error = fabs(expected - c[i * N + j]) / (1.0 + fabs(expected));
            if (!(error <= worst)) worst = error; /* NaN-safe */
        }
    }
    free(a);
    free(b);
    free(c);
    if (!(worst < 1e-4)) {
        fprintf(stderr, "mismatch: largest relative error %g\n", worst);
        return 1;
    }
    printf("ok: %dx%d matmul matches the naive loop (largest relative error %.3g)\n", N, N, worst);
    return 0;
}
