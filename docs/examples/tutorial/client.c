/* Calls the tutorial's matmul kernel (docs/tutorial.md) through its header and object file,
   and checks it against a naive loop. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "matmul.h"

enum { N = 128 };

int main(void) {
    /* the kernel relies on the 64-byte alignment its buffers declare */
    float *a = aligned_alloc(64, sizeof(float) * N * N);
    float *b = aligned_alloc(64, sizeof(float) * N * N);
    float *c = aligned_alloc(64, sizeof(float) * N * N);
    if (!a || !b || !c) return 2;
    for (int i = 0; i < N * N; ++i) {
        a[i] = (float)((i * 7) % 17 - 8) / 8.0f;
        b[i] = (float)((i * 5) % 13 - 6) / 4.0f;
    }
    if (matmul_main(a, b, c) != 0) return 1;
    double worst = 0.0;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < N; ++j) {
            double expected = 0.0;
            for (int k = 0; k < N; ++k) expected += (double)a[i * N + k] * b[k * N + j];
            double error = fabs(expected - c[i * N + j]) / (1.0 + fabs(expected));
            if (!(error <= worst)) worst = error;
        }
    printf("largest relative error %g\n", worst);
    free(a), free(b), free(c);
    return worst < 1e-5 ? 0 : 1;
}
