/* The kernel's shared definitions: weight blocks (QMat), activation blocks (XBlock), sizes and limits.
 * Included once, by kernel.c (the Python module) or by a C harness (tests/native), never compiled alone. */
#ifndef SL_COMMON_H
#define SL_COMMON_H
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define SL_AVX512 1
#endif

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

enum { Q4_1 = 1, Q8_0 = 2 };

/* A weight matrix: n output channels (a multiple of 16) x k inputs (a multiple of 32), one record per
 * panel and block, in the order the pass reads them (one stream from memory): the 16 channels' bytes
 * (Q4_1: 256, nibbles; Q8_0: 512), then their 16 d as float16, then (Q4_1 only) their 16 m. */
typedef struct {
    int64_t type, n, k;
    const uint8_t *q; /* [n/16][k/32][record] */
    size_t bytes;     /* what q holds: checked against n, k and the type's record before any pass */
} QMat;

/* One row's block of 32 activations as two int8 digits. */
typedef struct {
    int8_t a1[BLOCK];
    int8_t a2[BLOCK];
    float s;   /* S: x ~ S * (256 a1 + a2) */
    float sa;  /* S * sum(256 a1 + a2): the block's part of m's term */
} XBlock;

static size_t quant_bytes(const QMat *w) { return w->type == Q4_1 ? 256 : 512; }
static size_t record_bytes_of(int64_t type) { return type == Q4_1 ? 320 : type == Q8_0 ? 544 : 0; }
static size_t record_bytes(const QMat *w) { return record_bytes_of(w->type); }

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

/* channel c's d and m in a record (Q8_0: m = -128 d, exact) */
static void scales(const QMat *w, const uint8_t *rec, int c, float *d, float *m) {
    const uint16_t *h = (const uint16_t *)(rec + quant_bytes(w));
    *d = half_to_float(h[c]);
    *m = w->type == Q4_1 ? half_to_float(h[PANEL + c]) : -128.0f * *d;
}


#endif
