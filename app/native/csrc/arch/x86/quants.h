/* AVX-512 VNNI forms of quants.h's reference (the same bits): quantize_row_avx512, panel_tile_avx512. */

#define TILE_ROWS_AVX512 8 /* 8 accumulators + 8 weight vectors + 2 chains for each of up to 4 rows at a time */

/* Block `sub` of record `rec` for 16 channels: wv[g] the codes of group g, d[h] and m[h] for each half h
 * (both halves the same for types without halves). The same float operations as scale_of, lane by lane. */
static inline __attribute__((always_inline)) void load_block_avx512(int64_t type, const uint8_t *rec, int sub,
                                                                    __m512i wv[8], __m512 d[2], __m512 m[2]) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    if (type == Q8_0) {
        for (int j = 0; j < 8; j++) wv[j] = _mm512_loadu_si512((const __m512i *)rec + j);
        d[0] = d[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + offsetof(RecordQ8_0, d))));
        m[0] = m[1] = _mm512_mul_ps(d[0], _mm512_set1_ps(-128.0f));
        return;
    }
    const __m512i *nib = (const __m512i *)(rec + (size_t)sub * 256);
    for (int j = 0; j < 4; j++) {
        __m512i raw = _mm512_loadu_si512(nib + j);
        wv[j] = _mm512_and_si512(raw, low);
        wv[j + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
    }
    if (type == Q4_1) {
        d[0] = d[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + offsetof(RecordQ4_1, d))));
        m[0] = m[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + offsetof(RecordQ4_1, m))));
        return;
    }
    if (has_bit4(type)) { /* Q5_0, Q5_1, Q5_K: bit 4 from one mask a group, a byte of 16 where set */
        const __m512i bit4 = _mm512_set1_epi8(16);
        for (int g = 0; g < 8; g++)
            wv[g] = _mm512_or_si512(wv[g], _mm512_maskz_mov_epi8(load64(rec + mask_at(type, sub, 0, g)), bit4));
    }
    if (type == Q4_0 || type == Q5_0) { /* m = -8 d or -16 d, as scale_of */
        d[0] = d[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + (type == Q4_0 ? offsetof(RecordQ4_0, d) : offsetof(RecordQ5_0, d)))));
        m[0] = m[1] = _mm512_mul_ps(d[0], _mm512_set1_ps(type == Q4_0 ? -8.0f : -16.0f));
        return;
    }
    if (type == Q5_1) {
        d[0] = d[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + offsetof(RecordQ5_1, d))));
        m[0] = m[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + offsetof(RecordQ5_1, m))));
        return;
    }
    if (type == Q4_K || type == Q5_K) {
        __m512 dd = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + K_FIELD(type, d))));
        __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + K_FIELD(type, dmin))));
        __m512 s = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(rec + K_FIELD(type, scale) + (size_t)sub * 16))));
        __m512 n = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(rec + K_FIELD(type, min) + (size_t)sub * 16))));
        d[0] = d[1] = _mm512_mul_ps(dd, s);
        m[0] = m[1] = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(dm, n));
        return;
    }
    /* Q6_K */
    const __m512i bit4 = _mm512_set1_epi8(16), bit5 = _mm512_set1_epi8(32);
    for (int g = 0; g < 8; g++) {
        __mmask64 lo = load64(rec + mask_at(Q6_K, sub, 0, g));
        __mmask64 hi = load64(rec + mask_at(Q6_K, sub, 1, g));
        wv[g] = _mm512_or_si512(wv[g], _mm512_or_si512(_mm512_maskz_mov_epi8(lo, bit4), _mm512_maskz_mov_epi8(hi, bit5)));
    }
    __m512 dd = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + offsetof(RecordQ6_K, d))));
    for (int h = 0; h < 2; h++) {
        __m512 s = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(rec + offsetof(RecordQ6_K, scale) + ((size_t)sub * 2 + h) * 16))));
        d[h] = _mm512_mul_ps(dd, s);
        m[h] = _mm512_mul_ps(d[h], _mm512_set1_ps(-32.0f));
    }
}

/* acc + w (unsigned bytes) . the four signed bytes at a, broadcast: vpdpbusd with its memory operand
 * broadcast, written out because compilers otherwise hoist every broadcast into a register of its own
 * (a tile's 16 R of them spill). */
static inline __attribute__((always_inline)) __m512i dpbusd_bcast(__m512i acc, __m512i w, const int32_t *a) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*a));
    return acc;
}

/* One panel's 16 channels for R rows (R <= MAX_TILE), every block's weights loaded (and unpacked) once for
 * the R rows, times D activation digits (2: 256 a1 + a2; 1: a1 alone, half the MACs). H: the type's d and m
 * change at each block's middle (Q6_K), so each half's integer dot gets its own float update. The float
 * update per row and block (cvt, mul, fma, fma) and the integer dot are the same whatever R is, so a row's
 * bits never depend on its tile. */
static inline __attribute__((always_inline)) void panel_tile_avx512(const QMat *w, int p, const XBlock *x, int r0,
                                                                    float *out, int ldo, const int R,
                                                                    const int D, const int H) {
    const int kb = (int)(w->k / BLOCK);
    const size_t rb = record_bytes(w);
    const int per = unit_of(w->type) / BLOCK;
    __m512 acc[MAX_TILE];
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
    /* The first tile asks for the next panel's bytes a panel ahead: the later tiles (and the float work)
     * then run while they arrive, so a multi-row pass streams its weights under its arithmetic. */
    const int ahead = r0 == 0 && (int64_t)(p + 1) * PANEL < w->n;
    const size_t panel_bytes = (size_t)(kb / per) * rb;
    for (int b = 0; b < kb; b++) {
        int sub;
        const uint8_t *rec = record_of(w, p, b, &sub);
        if (ahead) { /* the next panel's record, a block's share at a time: a burst would fill the queues */
            const uint8_t *next = rec + panel_bytes;
            const size_t lo = rb * (size_t)sub / (size_t)per, hi = rb * (size_t)(sub + 1) / (size_t)per;
            for (size_t o = lo & ~(size_t)63; o < hi; o += 64) _mm_prefetch((const char *)(next + o), _MM_HINT_T0);
            if (sub == per - 1) _mm_prefetch((const char *)(next + rb - 1), _MM_HINT_T0);
        }
        __m512i wv[8];
        __m512 d[2], m[2];
        load_block_avx512(w->type, rec, sub, wv, d, m);
        for (int h = 0; h < (H ? 2 : 1); h++) {
            const int g0 = H ? 4 * h : 0, g1 = H ? g0 + 4 : 8;
            if (R == 1) {
                const XBlock *xb = x + (size_t)r0 * kb + b;
                const int32_t *a1 = (const int32_t *)xb->a1, *a2 = (const int32_t *)xb->a2;
                /* Independent chains: one chain of dependent vpdpbusd waits on their latency (~5 cycles
                 * each). Integer sums, so any grouping gives the same bits. */
                __m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0;
                for (int g = g0; g < g1; g += 2) {
                    c0 = _mm512_dpbusd_epi32(c0, wv[g], _mm512_set1_epi32(a1[g]));
                    c1 = _mm512_dpbusd_epi32(c1, wv[g + 1], _mm512_set1_epi32(a1[g + 1]));
                    if (D == 2) {
                        c2 = _mm512_dpbusd_epi32(c2, wv[g], _mm512_set1_epi32(a2[g]));
                        c3 = _mm512_dpbusd_epi32(c3, wv[g + 1], _mm512_set1_epi32(a2[g + 1]));
                    }
                }
                __m512i hi = _mm512_add_epi32(c0, c1);
                __m512i dot = D == 2 ? _mm512_add_epi32(_mm512_slli_epi32(hi, 8), _mm512_add_epi32(c2, c3)) : hi;
                float s = D == 2 ? xb->s : xb->s1;
                float sa = H ? (D == 2 ? xb->sah[h] : xb->sa1h[h]) : (D == 2 ? xb->sa : xb->sa1);
                __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(s));
                acc[0] = _mm512_fmadd_ps(d[h], f, acc[0]);
                acc[0] = _mm512_fmadd_ps(m[h], _mm512_set1_ps(sa), acc[0]);
            } else {
                /* Two chains a row (one a digit; one digit: the even and the odd groups), the rows' chains
                 * interleaved: enough independent vpdpbusd in flight for the unit's rate. The chains run for
                 * up to 4 rows at a time against the block unpacked once (8 rows: 2 x 4 rows' 8 chains, the 8
                 * accumulators and the 8 weight vectors fit the 32 registers), so the tile is 8 rows and a
                 * verify pass of 8 unpacks each block once. */
                const int groups = (R + 3) / 4;
#pragma GCC unroll 2
                for (int q = 0; q < groups; q++) {
                    const int ra = R * q / groups, rz = R * (q + 1) / groups;
                    __m512i hs[4], ls[4];
                    for (int r = ra; r < rz; r++) hs[r - ra] = ls[r - ra] = _mm512_setzero_si512();
                    if (D == 2) {
                        for (int g = g0; g < g1; g++)
                            for (int r = ra; r < rz; r++) {
                                const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                                hs[r - ra] = dpbusd_bcast(hs[r - ra], wv[g], (const int32_t *)xb->a1 + g);
                                ls[r - ra] = dpbusd_bcast(ls[r - ra], wv[g], (const int32_t *)xb->a2 + g);
                            }
                    } else {
                        for (int g = g0; g < g1; g += 2)
                            for (int r = ra; r < rz; r++) {
                                const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                                hs[r - ra] = dpbusd_bcast(hs[r - ra], wv[g], (const int32_t *)xb->a1 + g);
                                ls[r - ra] = dpbusd_bcast(ls[r - ra], wv[g + 1], (const int32_t *)xb->a1 + g + 1);
                            }
                    }
                    for (int r = ra; r < rz; r++) {
                        const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                        __m512i dot = D == 2 ? _mm512_add_epi32(_mm512_slli_epi32(hs[r - ra], 8), ls[r - ra])
                                             : _mm512_add_epi32(hs[r - ra], ls[r - ra]);
                        float s = D == 2 ? xb->s : xb->s1;
                        float sa = H ? (D == 2 ? xb->sah[h] : xb->sa1h[h]) : (D == 2 ? xb->sa : xb->sa1);
                        __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(s));
                        acc[r] = _mm512_fmadd_ps(d[h], f, acc[r]);
                        acc[r] = _mm512_fmadd_ps(m[h], _mm512_set1_ps(sa), acc[r]);
                    }
                }
            }
        }
    }
    for (int r = 0; r < R; r++) _mm512_storeu_ps(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL, acc[r]);
}

/* The same digits as quantize_row_ref, sixteen lanes at a time (per-row work is serial between the
 * parallel matmuls, so at 9-17 rows its scalar form cost as much as the matmuls it feeds). */
static void quantize_row_avx512(const float *x, int k, XBlock *out) {
    const __m512 sign = _mm512_set1_ps(-0.0f), lim = _mm512_set1_ps(127.0f);
    for (int b = 0; b < k / BLOCK; b++) {
        const float *v = x + b * BLOCK;
        XBlock *o = out + b;
        __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
        if (amax == 0.0f || !isfinite(amax)) {
            quantize_row_ref(v, BLOCK, o); /* zeros, or a NaN/inf kept visible, as the scalar form does */
            continue;
        }
        float step = amax / 127.0f, inv = 127.0f / amax;
        __m512 vs = _mm512_set1_ps(step), vi = _mm512_set1_ps(inv);
        int32_t total[2], total1[2];
        for (int half = 0; half < 2; half++) {
            __m512 w = half ? v1 : v0;
            __m512 a1 = _mm512_roundscale_ps(_mm512_mul_ps(w, vi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            a1 = _mm512_max_ps(_mm512_min_ps(a1, lim), _mm512_sub_ps(_mm512_setzero_ps(), lim));
            __m512 rest = _mm512_sub_ps(w, _mm512_mul_ps(a1, vs));
            __m512 a2 = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_mul_ps(rest, vi), _mm512_set1_ps(256.0f)),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            a2 = _mm512_max_ps(_mm512_min_ps(a2, lim), _mm512_sub_ps(_mm512_setzero_ps(), lim));
            __m512i i1 = _mm512_cvtps_epi32(a1), i2 = _mm512_cvtps_epi32(a2);
            _mm_storeu_si128((__m128i *)(o->a1 + 16 * half), _mm512_cvtepi32_epi8(i1));
            _mm_storeu_si128((__m128i *)(o->a2 + 16 * half), _mm512_cvtepi32_epi8(i2));
            total[half] = _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(i1, 8), i2));
            total1[half] = _mm512_reduce_add_epi32(i1);
        }
        set_sums(o, step, total, total1);
    }
}
