/* What a platform's C library does differently from glibc where the kernel's bits depend on it.
 *
 * fmaf: the generic matmul's block update is fmaf (one rounding), which every row must get bit for bit.
 * glibc's and macOS's fmaf are correctly rounded, and arm64 (and x86 built with FMA) has the instruction; but
 * mingw-w64's libmingwex fmaf is not (31% of 10^7 random triples differ from a correctly rounded fma under
 * wine), and the Windows C runtimes are not held to it either. So on Windows without the FMA instruction
 * fmaf is computed here: the product exact in double, the sum rounded to odd in double, then rounded to
 * float once (Boldo and Melquiond: round-to-odd at 53 >= 24 + 2 bits makes the second rounding correct).
 * Rows then equal the x86 generic reference's exactly (tests/native/test_cross.py). */
#ifndef SL_PORTABLE_H
#define SL_PORTABLE_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(_WIN32) && defined(_MSC_VER) && defined(__AVX2__) && !defined(__FMA__)
/* MSVC's /arch:AVX2 build (cpu_ok asks for FMA with AVX2): the instruction, one rounding */
#include <immintrin.h>
static inline float sl_fmaf(float a, float b, float c) {
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(b), _mm_set_ss(c)));
}
#define fmaf sl_fmaf
#elif defined(_WIN32) && !defined(__FMA__) && !defined(__aarch64__) && !defined(_M_ARM64)
static inline float sl_fmaf(float a, float b, float c) {
    double p = (double)a * (double)b; /* exact: 48 bits */
    double s = p + (double)c;
    if (!isfinite(s)) return (float)s;
    double bb = s - p, err = (p - (s - bb)) + ((double)c - bb); /* s + err == p + c exactly (TwoSum) */
    uint64_t u;
    memcpy(&u, &s, sizeof u);
    if (err != 0.0 && !(u & 1)) { /* inexact and even: step to the odd neighbour on err's side */
        if ((err > 0.0) == (s > 0.0)) u++;
        else u--;
        memcpy(&s, &u, sizeof s);
    }
    return (float)s;
}
#define fmaf sl_fmaf
#endif

/* cpu_ok() (kernel.c) asks __builtin_cpu_supports, which MSVC lacks (and clang-cl would need compiler-rt's
 * __cpu_model): the same answers from cpuid, with the OS's saved vector state (xgetbv) as GCC's checks it. */
#if (defined(_MSC_VER) || defined(SL_CPUID_SHIM)) && (defined(_M_X64) || defined(_M_IX86) || defined(__x86_64__))
#include <intrin.h>
static int sl_cpu_supports(const char *f) {
    int r1[4], r7[4];
    __cpuid(r1, 1);
    __cpuidex(r7, 7, 0);
    unsigned long long xcr0 = (r1[2] >> 27) & 1 ? _xgetbv(0) : 0; /* OSXSAVE */
    int ymm = (xcr0 & 6) == 6, zmm = (xcr0 & 0xE6) == 0xE6;
    unsigned ecx1 = (unsigned)r1[2], ebx7 = (unsigned)r7[1], ecx7 = (unsigned)r7[2];
    if (!strcmp(f, "fma")) return ymm && (ecx1 >> 12 & 1);
    if (!strcmp(f, "f16c")) return ymm && (ecx1 >> 29 & 1);
    if (!strcmp(f, "avx2")) return ymm && (ebx7 >> 5 & 1);
    if (!strcmp(f, "avx512f")) return zmm && (ebx7 >> 16 & 1);
    if (!strcmp(f, "avx512dq")) return zmm && (ebx7 >> 17 & 1);
    if (!strcmp(f, "avx512bw")) return zmm && (ebx7 >> 30 & 1);
    if (!strcmp(f, "avx512vl")) return zmm && (ebx7 >> 31 & 1);
    if (!strcmp(f, "avx512vnni")) return zmm && (ecx7 >> 11 & 1);
    return 0;
}
#undef __builtin_cpu_init
#undef __builtin_cpu_supports
#define __builtin_cpu_init() ((void)0)
#define __builtin_cpu_supports(f) sl_cpu_supports(f)
#endif

#endif
