/* The kernel's shared definitions: weight blocks (QMat), activation blocks (XBlock), sizes and limits.
 * Included once, by kernel.c (the Python module) or by a C harness (tests/native), never compiled alone. */
#ifndef SL_COMMON_H
#define SL_COMMON_H
#include <fenv.h>
#include <math.h>
#ifndef _WIN32 /* pool.h has the Windows thread layer */
#include <pthread.h>
#include <sched.h>
#endif
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "portable.h" /* C library differences that would change a row's bits (Windows fmaf) */

#define PANEL 16
#define BLOCK 32
#define MAX_TILE 8
#define MAX_THREADS 64
#define MAX_GROUP 16

/* Every pass runs in the default floating-point environment (round to nearest, no flush to zero):
 * a caller that changed its own (torch.set_flush_denormal, fesetround) must not change a row's bits,
 * and worker threads inherit whatever their creating thread had. */
#define FP_PINNED(body)                 \
    do {                                \
        fenv_t saved_env_;              \
        fegetenv(&saved_env_);          \
        fesetenv(FE_DFL_ENV);           \
        body;                           \
        fesetenv(&saved_env_);          \
    } while (0)

/* Block types (blocks.h lays each out). Q4_1, Q8_0 and GGML's Q4_0, Q5_0, Q5_1 hold 32 inputs a record; the
 * K-quants (llama.cpp's Q4_K, Q5_K, Q6_K, as the GGUFs people run hold them) hold a super-block of 256. The ids
 * are GGML's where free (GGML's 2, Q4_0, is this kernel's Q8_0: Q4_0 is 4 here). */
enum { Q4_1 = 1, Q8_0 = 2, Q4_0 = 4, Q5_0 = 6, Q5_1 = 7, Q4_K = 12, Q5_K = 13, Q6_K = 14 };

/* A weight matrix: n output channels (a multiple of 16) x k inputs (a multiple of its type's unit), one
 * record per panel of 16 channels and unit of inputs, in the order the pass reads them (one stream from
 * memory). blocks.h says what a record of each type holds. */
typedef struct {
    int64_t type, n, k;
    const uint8_t *q; /* [n/16][k/unit][record] */
    size_t bytes;     /* what q holds: checked against n, k and the type's record before any pass */
    int64_t digits;   /* activation digits this matrix multiplies: 2 (~16 bits) or 1 (8 bits, half the MACs) */
} QMat;

#define MAX_PARTS 3

/* A projection whose output columns come from up to three matrices side by side (q, k and v, or gate and
 * up, each in its own block type as a GGUF holds them): one parallel region over all their panels. */
typedef struct {
    QMat part[MAX_PARTS];
    int count;
} Proj;

static int64_t proj_rows(const Proj *w) {
    int64_t n = 0;
    for (int j = 0; j < w->count; j++) n += w->part[j].n;
    return n;
}

/* One row's block of 32 activations as two int8 digits. a1 alone is the block rounded to 8 bits
 * (x ~ 256 S a1, as llama.cpp's Q8_1 rounds it); a2 carries the next 8 bits of what a1 left over. A matrix
 * reads one digit or both (QMat.digits); a row's block is the same whichever matrices read it. */
typedef struct {
    int8_t a1[BLOCK];
    int8_t a2[BLOCK];
    float s;   /* S: x ~ S * (256 a1 + a2) */
    float sa;  /* S * sum(256 a1 + a2): the block's part of m's term */
    float s1;  /* 256 S: x ~ s1 * a1, one digit */
    float sa1; /* s1 * sum(a1): the block's part of m's term, one digit */
    float sah[2], sa1h[2]; /* sa and sa1 of each half of 16 (Q6_K's scales cover 16 inputs) */
} XBlock;

/* f = the block's integer dot scaled, for one digit (hi only) or two (256 hi + lo) */
#define ONE_DIGIT(w) ((w)->digits == 1)

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3FF) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7F800000 | (man << 13);
    else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#endif
