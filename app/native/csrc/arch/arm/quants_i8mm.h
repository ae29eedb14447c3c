/* arm64 i8mm form of quants.h's panel_tile_ref (the same bits): panel_tile_i8mm, for passes of two or more
 * rows (ARMv8.6's smmla: Apple M2 and later, Neoverse V1/N2 and later).
 *
 * smmla multiplies a 2 x 8 matrix of signed bytes by an 8 x 2 one into a 2 x 2 of int32: two rows by two
 * channels over eight inputs (groups g and g + 1), twice sdot's products an instruction. The block's codes
 * come from load_block_neon (signed; Q8_0's as q, corrected by 128 x the activations' sum) and are re-laid
 * once per block as channel pairs; the row pair's products come out as [r c, r c+1, r+1 c, r+1 c+1] and are
 * unzipped into each row's four-channel vectors, then the reference's float update (cvt, mul, fma, fma). An
 * odd last row takes panel_tile_neon's sdot loop: integer sums, so either path gives the same bits. */

/* Block codes wb[g][c*4 + i] as channel pairs: pb[gp][cp] = (channel 2cp: inputs 8gp .. 8gp + 7, then channel
 * 2cp + 1's), what smmla's second operand takes. */
static inline __attribute__((always_inline)) void pair_block_i8mm(int8_t wb[8][64], int8_t pb[4][8][16]) {
    for (int gp = 0; gp < 4; gp++)
        for (int q = 0; q < 4; q++) { /* channels 4q .. 4q + 3 */
            int32x4_t a = vreinterpretq_s32_s8(vld1q_s8(wb[2 * gp] + 16 * q));
            int32x4_t b = vreinterpretq_s32_s8(vld1q_s8(wb[2 * gp + 1] + 16 * q));
            /* lanes: channel 4q, 4q+1 (zip1) and 4q+2, 4q+3 (zip2), each as (group 2gp, group 2gp + 1) */
            int32x4_t lo = vzip1q_s32(a, b), hi = vzip2q_s32(a, b);
            vst1q_s8(pb[gp][2 * q], vreinterpretq_s8_s32(lo));
            vst1q_s8(pb[gp][2 * q + 1], vreinterpretq_s8_s32(hi));
        }
}

/* The float update of one row and half: dots [4] (four channels each) into acc [4], as panel_tile_ref. */
static inline __attribute__((always_inline)) void update_neon(float32x4_t acc[4], const int32x4_t hi[4],
                                                              const int32x4_t lo[4], const XBlock *xb, int h,
                                                              const float d[PANEL], const float m[PANEL],
                                                              const int D, const int H) {
    float s = D == 2 ? xb->s : xb->s1;
    float sa = H ? (D == 2 ? xb->sah[h] : xb->sa1h[h]) : (D == 2 ? xb->sa : xb->sa1);
    for (int q = 0; q < 4; q++) {
        int32x4_t dot = D == 2 ? vaddq_s32(vshlq_n_s32(hi[q], 8), lo[q]) : hi[q];
        float32x4_t f = vmulq_f32(vcvtq_f32_s32(dot), vdupq_n_f32(s));
        acc[q] = vfmaq_f32(acc[q], vld1q_f32(d + 4 * q), f);
        acc[q] = vfmaq_f32(acc[q], vld1q_f32(m + 4 * q), vdupq_n_f32(sa));
    }
}

static inline __attribute__((always_inline)) void panel_tile_i8mm(const QMat *w, int p, const XBlock *x, int r0,
                                                                  float *out, int ldo, const int R, const int D,
                                                                  const int H) {
    if (R == 1) { /* nothing to pair */
        panel_tile_neon(w, p, x, r0, out, ldo, 1, D, H);
        return;
    }
    const int kb = (int)(w->k / BLOCK);
    const int shifted = w->type == Q8_0;
    float32x4_t acc[MAX_TILE][4];
    for (int r = 0; r < R; r++)
        for (int q = 0; q < 4; q++) acc[r][q] = vdupq_n_f32(0.0f);
    for (int b = 0; b < kb; b++) {
        int sub;
        const uint8_t *rec = record_of(w, p, b, &sub);
        int8_t wb[8][64] __attribute__((aligned(16)));
        int8_t pb[4][8][16] __attribute__((aligned(16)));
        float d[2][PANEL] __attribute__((aligned(16))), m[2][PANEL] __attribute__((aligned(16)));
        load_block_neon(w->type, rec, sub, wb, d, m);
        pair_block_i8mm(wb, pb);
        for (int h = 0; h < (H ? 2 : 1); h++) {
            const int gp0 = H ? 2 * h : 0, gp1 = H ? gp0 + 2 : 4;
            int r = 0;
            for (; r + 2 <= R; r += 2) {
                const XBlock *x0 = x + (size_t)(r0 + r) * kb + b, *x1 = x0 + kb;
                int32x4_t h2[8], l2[8]; /* channel pair cp: [r 2cp, r 2cp+1, r+1 2cp, r+1 2cp+1] */
                for (int cp = 0; cp < 8; cp++) h2[cp] = l2[cp] = vdupq_n_s32(0);
                for (int gp = gp0; gp < gp1; gp++) {
                    int8x16_t a1 = vcombine_s8(vld1_s8(x0->a1 + 8 * gp), vld1_s8(x1->a1 + 8 * gp));
                    int8x16_t a2 = vcombine_s8(vld1_s8(x0->a2 + 8 * gp), vld1_s8(x1->a2 + 8 * gp));
                    for (int cp = 0; cp < 8; cp++) {
                        int8x16_t wv = vld1q_s8(pb[gp][cp]);
                        h2[cp] = vmmlaq_s32(h2[cp], a1, wv);
                        if (D == 2) l2[cp] = vmmlaq_s32(l2[cp], a2, wv);
                    }
                }
                int32x4_t hi[2][4], lo[2][4];
                for (int q = 0; q < 4; q++) { /* rows apart: 64-bit lanes of channel pairs 2q, 2q + 1 */
                    int64x2_t a = vreinterpretq_s64_s32(h2[2 * q]), c = vreinterpretq_s64_s32(h2[2 * q + 1]);
                    hi[0][q] = vreinterpretq_s32_s64(vzip1q_s64(a, c));
                    hi[1][q] = vreinterpretq_s32_s64(vzip2q_s64(a, c));
                    a = vreinterpretq_s64_s32(l2[2 * q]), c = vreinterpretq_s64_s32(l2[2 * q + 1]);
                    lo[0][q] = vreinterpretq_s32_s64(vzip1q_s64(a, c));
                    lo[1][q] = vreinterpretq_s32_s64(vzip2q_s64(a, c));
                }
                for (int e = 0; e < 2; e++) {
                    const XBlock *xb = e ? x1 : x0;
                    if (shifted) {
                        int32_t s1 = 0, s2 = 0;
                        for (int i = 8 * gp0; i < 8 * gp1; i++) s1 += xb->a1[i], s2 += xb->a2[i];
                        for (int q = 0; q < 4; q++) {
                            hi[e][q] = vaddq_s32(hi[e][q], vdupq_n_s32(128 * s1));
                            lo[e][q] = vaddq_s32(lo[e][q], vdupq_n_s32(128 * s2));
                        }
                    }
                    update_neon(acc[r + e], hi[e], lo[e], xb, h, d[h], m[h], D, H);
                }
            }
            if (r < R) { /* the odd last row: sdot */
                const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                int32x4_t hi[4], lo[4];
                for (int q = 0; q < 4; q++) hi[q] = lo[q] = vdupq_n_s32(0);
                for (int g = 2 * gp0; g < 2 * gp1; g++) {
                    int32_t a1, a2;
                    memcpy(&a1, xb->a1 + 4 * g, 4);
                    memcpy(&a2, xb->a2 + 4 * g, 4);
                    int8x16_t v1 = vreinterpretq_s8_s32(vdupq_n_s32(a1)), v2 = vreinterpretq_s8_s32(vdupq_n_s32(a2));
                    for (int q = 0; q < 4; q++) {
                        int8x16_t wv = vld1q_s8(wb[g] + 16 * q);
                        hi[q] = vdotq_s32(hi[q], wv, v1);
                        if (D == 2) lo[q] = vdotq_s32(lo[q], wv, v2);
                    }
                }
                if (shifted) {
                    int32_t s1 = 0, s2 = 0;
                    for (int i = 8 * gp0; i < 8 * gp1; i++) s1 += xb->a1[i], s2 += xb->a2[i];
                    for (int q = 0; q < 4; q++) {
                        hi[q] = vaddq_s32(hi[q], vdupq_n_s32(128 * s1));
                        lo[q] = vaddq_s32(lo[q], vdupq_n_s32(128 * s2));
                    }
                }
                update_neon(acc[r], hi, lo, xb, h, d[h], m[h], D, H);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int q = 0; q < 4; q++) vst1q_f32(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL + 4 * q, acc[r][q]);
}
