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

#if defined(_WIN32) && !defined(__FMA__) && !defined(__aarch64__) && !defined(_M_ARM64)
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

#endif
