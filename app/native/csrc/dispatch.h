/* The one place a build's instruction set picks each vectorised function: its own form where csrc/arch has
 * one, else the plain-C reference (`*_ref`, always compiled, so tests and harnesses can compare the two).
 *
 *   generic name    reference            x86 AVX-512 VNNI        x86 AVX2            arm64 NEON + dotprod
 *   quantize_row    quantize_row_ref     quantize_row_avx512     (reference)         quantize_row_neon
 *   panel_tile      panel_tile_ref       panel_tile_avx512       panel_tile_avx2     panel_tile_neon
 *   silu_mul        silu_mul_ref         silu_mul_avx512         (reference)         (reference)
 *   attend_heads    attend_heads_ref     attend_heads_avx512     (reference)         (reference)
 *   TILE_ROWS       MAX_TILE             TILE_ROWS_AVX512        MAX_TILE            MAX_TILE
 *
 * The arm64 i8mm build (SL_I8MM: NEON, dotprod and smmla) is the NEON build with panel_tile_i8mm, which
 * takes two rows at a time and hands a single row to panel_tile_neon.
 *
 * Every form gives its reference's bits for quantize_row and panel_tile (integer dots are exact and the
 * float update per row, channel and block is cvt, mul, fma, fma on every path); silu_mul and attend_heads
 * keep one fixed order per build, so a row's bits never depend on the rows or threads of its pass. */
#ifndef SL_DISPATCH_H
#define SL_DISPATCH_H

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define SL_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SL_AVX2 1
#elif defined(__aarch64__) && defined(__ARM_NEON) && defined(__ARM_FEATURE_DOTPROD)
#define SL_NEON 1
#if defined(__ARM_FEATURE_MATMUL_INT8)
#define SL_I8MM 1 /* the NEON build with smmla as well (its own build: not every dotprod core has it) */
#endif
#endif

#if defined(SL_AVX512)
#include <immintrin.h>
#include "arch/x86/quants.h"
#include "arch/x86/activations.h"
#include "arch/x86/attention.h"
#define quantize_row quantize_row_avx512
#define panel_tile panel_tile_avx512
#define silu_mul silu_mul_avx512
#define attend_heads attend_heads_avx512
#define TILE_ROWS TILE_ROWS_AVX512
#elif defined(SL_AVX2)
#include <immintrin.h>
#include "arch/x86/quants_avx2.h"
#define quantize_row quantize_row_ref
#define panel_tile panel_tile_avx2
#define silu_mul silu_mul_ref
#define attend_heads attend_heads_ref
#define TILE_ROWS MAX_TILE
#elif defined(SL_NEON)
#include <arm_neon.h>
#include "arch/arm/quants.h"
#define quantize_row quantize_row_neon
#if defined(SL_I8MM)
#include "arch/arm/quants_i8mm.h"
#define panel_tile panel_tile_i8mm
#else
#define panel_tile panel_tile_neon
#endif
#define silu_mul silu_mul_ref
#define attend_heads attend_heads_ref
#define TILE_ROWS MAX_TILE
#else
#define quantize_row quantize_row_ref
#define panel_tile panel_tile_ref
#define silu_mul silu_mul_ref
#define attend_heads attend_heads_ref
#define TILE_ROWS MAX_TILE
#endif

#endif
