/* AVX2 form of quants.h's panel_tile_ref (the same bits): panel_tile_avx2.
 *
 * AVX2 has no vpdpbusd; a group's four products of each channel are vpmaddubsw (unsigned codes times signed
 * activation bytes, pairs summed to int16) then vpmaddwd by ones (the two pairs summed to int32). Both are
 * exact while a pair's sum fits int16: codes up to 63 (every nibble type: 2 x 63 x 127 = 16002) do; Q8_0's
 * codes (up to 255) are split into their nibbles, each dot exact, recombined as 16 hi + lo in int32. Integer
 * sums are the reference's whatever their grouping, and the float update per row, channel and block is the
 * reference's (cvt, mul, fma, fma, and d, m made by its operations), so every bit is panel_tile_ref's. */

/* A 32-bit mask (bit k: byte k) as 32 bytes of `value` where set, 0 elsewhere. */
static inline __m256i mask_bytes_avx2(uint32_t bits, __m256i value) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                            3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread); /* byte k: mask byte k / 8 */
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), value);
}

/* Block `sub` of record `rec`, unpacked for 16 channels: wb[g] the 64 code bytes of group g (channel c's four
 * at 4c; Q8_0: their low nibbles, and their high nibbles in hb[g]), d[h][c], m[h][c] as scale_of makes them. */
static inline __attribute__((always_inline)) void load_block_avx2(int64_t type, const uint8_t *rec, int sub,
                                                                  uint8_t wb[8][64], uint8_t hb[8][64],
                                                                  float d[2][PANEL], float m[2][PANEL], const int S) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    if (S) { /* Q8_0 */
        for (int g = 0; g < 8; g++)
            for (int half = 0; half < 2; half++) {
                __m256i raw = _mm256_loadu_si256((const __m256i *)(rec + offsetof(RecordQ8_0, codes) + g * 64 + 32 * half));
                _mm256_storeu_si256((__m256i *)(wb[g] + 32 * half), _mm256_and_si256(raw, low));
                _mm256_storeu_si256((__m256i *)(hb[g] + 32 * half), _mm256_and_si256(_mm256_srli_epi16(raw, 4), low));
            }
    } else {
        const uint8_t *nib = rec + (size_t)sub * 256;
        for (int j = 0; j < 4; j++)
            for (int half = 0; half < 2; half++) {
                __m256i raw = _mm256_loadu_si256((const __m256i *)(nib + j * 64 + 32 * half));
                __m256i lo = _mm256_and_si256(raw, low), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low);
                if (has_bit4(type) || type == Q6_K) {
                    const int planes = type == Q6_K ? 2 : 1;
                    for (int plane = 0; plane < planes; plane++) {
                        const __m256i value = _mm256_set1_epi8((char)(16 << plane));
                        uint64_t mlo = load64(rec + mask_at(type, sub, plane, j)), mhi = load64(rec + mask_at(type, sub, plane, j + 4));
                        lo = _mm256_or_si256(lo, mask_bytes_avx2((uint32_t)(mlo >> (32 * half)), value));
                        hi = _mm256_or_si256(hi, mask_bytes_avx2((uint32_t)(mhi >> (32 * half)), value));
                    }
                }
                _mm256_storeu_si256((__m256i *)(wb[j] + 32 * half), lo);
                _mm256_storeu_si256((__m256i *)(wb[j + 4] + 32 * half), hi);
            }
    }
    /* d and m by scale_of's operations, eight channels at a time (F16C's conversion is exact, as half_to_float) */
    const __m256 negzero = _mm256_set1_ps(-0.0f);
    for (int v = 0; v < 2; v++) {
        __m256 dv[2], mv[2];
        if (type == Q4_1) {
            dv[0] = dv[1] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + offsetof(RecordQ4_1, d) + 16 * v)));
            mv[0] = mv[1] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + offsetof(RecordQ4_1, m) + 16 * v)));
        } else if (type == Q8_0) {
            dv[0] = dv[1] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + offsetof(RecordQ8_0, d) + 16 * v)));
            mv[0] = mv[1] = _mm256_mul_ps(_mm256_set1_ps(-128.0f), dv[0]);
        } else if (type == Q4_0 || type == Q5_0) { /* m = -8 d or -16 d, as scale_of */
            dv[0] = dv[1] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + (type == Q4_0 ? offsetof(RecordQ4_0, d) : offsetof(RecordQ5_0, d)) + 16 * v)));
            mv[0] = mv[1] = _mm256_mul_ps(_mm256_set1_ps(type == Q4_0 ? -8.0f : -16.0f), dv[0]);
        } else if (type == Q5_1) {
            dv[0] = dv[1] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + offsetof(RecordQ5_1, d) + 16 * v)));
            mv[0] = mv[1] = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + offsetof(RecordQ5_1, m) + 16 * v)));
        } else if (type == Q4_K || type == Q5_K) {
            __m256 dd = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + K_FIELD(type, d) + 16 * v)));
            __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + K_FIELD(type, dmin) + 16 * v)));
            __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(rec + K_FIELD(type, scale) + (size_t)sub * 16 + 8 * v))));
            __m256 mn = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(rec + K_FIELD(type, min) + (size_t)sub * 16 + 8 * v))));
            dv[0] = dv[1] = _mm256_mul_ps(dd, sc);
            mv[0] = mv[1] = _mm256_xor_ps(_mm256_mul_ps(dm, mn), negzero); /* -(dmin mn), as scale_of negates */
        } else { /* Q6_K */
            __m256 dd = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(rec + offsetof(RecordQ6_K, d) + 16 * v)));
            for (int h = 0; h < 2; h++) {
                __m256 sc = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(
                    (const __m128i *)(rec + offsetof(RecordQ6_K, scale) + ((size_t)sub * 2 + h) * 16 + 8 * v))));
                dv[h] = _mm256_mul_ps(dd, sc);
                mv[h] = _mm256_mul_ps(_mm256_set1_ps(-32.0f), dv[h]);
            }
        }
        for (int h = 0; h < 2; h++) {
            _mm256_storeu_ps(d[h] + 8 * v, dv[h]);
            _mm256_storeu_ps(m[h] + 8 * v, mv[h]);
        }
    }
}

/* acc + each channel's four products of group g's codes w with the four activation bytes a (int32 lanes). */
static inline __attribute__((always_inline)) __m256i dot4_avx2(__m256i acc, __m256i w, int32_t a) {
    const __m256i ones = _mm256_set1_epi16(1);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, _mm256_set1_epi32(a)), ones));
}

/* One panel's 16 channels (two vectors of 8) for R rows, D digits, H halves; S: Q8_0, whose codes past 63
 * are multiplied as their nibbles (16 hi + lo). */
static inline __attribute__((always_inline)) void tile_avx2(const QMat *w, int p, const XBlock *x, int r0, float *out,
                                                            int ldo, const int R, const int D, const int H,
                                                            const int S) {
    const int kb = (int)(w->k / BLOCK);
    __m256 acc[MAX_TILE][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int b = 0; b < kb; b++) {
        int sub;
        const uint8_t *rec = record_of(w, p, b, &sub);
        _Alignas(32) uint8_t wb[8][64], hb[8][64];
        _Alignas(32) float d[2][PANEL], m[2][PANEL];
        load_block_avx2(w->type, rec, sub, wb, hb, d, m, S);
        for (int r = 0; r < R; r++) {
            const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
            const int32_t *a1 = (const int32_t *)xb->a1, *a2 = (const int32_t *)xb->a2;
            for (int h = 0; h < (H ? 2 : 1); h++) {
                const int g0 = H ? 4 * h : 0, g1 = H ? g0 + 4 : 8;
                float s = D == 2 ? xb->s : xb->s1;
                float sa = H ? (D == 2 ? xb->sah[h] : xb->sa1h[h]) : (D == 2 ? xb->sa : xb->sa1);
                for (int v = 0; v < 2; v++) { /* channels 8v .. 8v + 7 */
                    __m256i hi = _mm256_setzero_si256(), lo = hi;
                    for (int g = g0; g < g1; g++) {
                        __m256i wv = _mm256_load_si256((const __m256i *)(wb[g] + 32 * v));
                        hi = dot4_avx2(hi, wv, a1[g]);
                        if (D == 2) lo = dot4_avx2(lo, wv, a2[g]);
                    }
                    if (S) {
                        __m256i hi16 = _mm256_setzero_si256(), lo16 = hi16;
                        for (int g = g0; g < g1; g++) {
                            __m256i wv = _mm256_load_si256((const __m256i *)(hb[g] + 32 * v));
                            hi16 = dot4_avx2(hi16, wv, a1[g]);
                            if (D == 2) lo16 = dot4_avx2(lo16, wv, a2[g]);
                        }
                        hi = _mm256_add_epi32(hi, _mm256_slli_epi32(hi16, 4));
                        lo = _mm256_add_epi32(lo, _mm256_slli_epi32(lo16, 4));
                    }
                    __m256i dot = D == 2 ? _mm256_add_epi32(_mm256_slli_epi32(hi, 8), lo) : hi;
                    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(s));
                    acc[r][v] = _mm256_fmadd_ps(_mm256_load_ps(d[h] + 8 * v), f, acc[r][v]);
                    acc[r][v] = _mm256_fmadd_ps(_mm256_load_ps(m[h] + 8 * v), _mm256_set1_ps(sa), acc[r][v]);
                }
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < 2; v++) _mm256_storeu_ps(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL + 8 * v, acc[r][v]);
}

/* panel_tile_ref's contract: one panel's 16 channels for R rows, D activation digits, H halves. */
static inline __attribute__((always_inline)) void panel_tile_avx2(const QMat *w, int p, const XBlock *x, int r0,
                                                                  float *out, int ldo, const int R, const int D,
                                                                  const int H) {
    if (w->type == Q8_0) tile_avx2(w, p, x, r0, out, ldo, R, D, H, 1);
    else tile_avx2(w, p, x, r0, out, ldo, R, D, H, 0);
}
