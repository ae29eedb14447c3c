/* The one place a build's instruction set picks each vectorised function: its own form where csrc/arch has
 * one, else the plain-C reference (`*_ref`, always compiled, so tests and harnesses can compare the two).
 *
 *   generic name    reference            x86 AVX-512 VNNI        x86 AVX2
 *   quantize_row    quantize_row_ref     quantize_row_avx512     (reference)
 *   panel_tile      panel_tile_ref       panel_tile_avx512       panel_tile_avx2
 *   silu_mul        silu_mul_ref         silu_mul_avx512         (reference)
 *   attend_heads    attend_heads_ref     attend_heads_avx512     (reference)
 *   TILE_ROWS       MAX_TILE             TILE_ROWS_AVX512        MAX_TILE
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
#else
#define quantize_row quantize_row_ref
#define panel_tile panel_tile_ref
#define silu_mul silu_mul_ref
#define attend_heads attend_heads_ref
#define TILE_ROWS MAX_TILE
#endif

#endif
