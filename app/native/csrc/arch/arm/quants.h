/* arm64 NEON forms of quants.h's reference (the same bits), for ARMv8.2's dot product (sdot; every Apple
 * M-series and Neoverse core has it): panel_tile_neon, quantize_row_neon.
 *
 * sdot multiplies four signed bytes by four signed bytes into each 32-bit lane: a record's group (four inputs
 * of channel c in lane c, the order vpdpbusd reads too) is four vectors of four channels. Codes of the nibble
 * types (0..63) are already signed bytes; Q8_0's (q + 128, 0..255) are taken as q = u ^ 0x80 and the dot
 * corrected by 128 x the activations' sum, in int32: exact. The float update per row, channel and block is
 * the reference's (cvt, mul, fma, fma; d and m by scale_of's operations), so every bit is panel_tile_ref's. */

/* A 16-bit mask (bit k: byte k) as 16 bytes of `value` where set, 0 elsewhere. */
static inline uint8x16_t mask_bytes_neon(uint32_t bits, uint8x16_t value) {
    static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)(bits & 0xFF)), vdup_n_u8((uint8_t)(bits >> 8)));
    return vandq_u8(vtstq_u8(v, vld1q_u8(bit)), value);
}

/* Block `sub` of record `rec` for 16 channels: wb[g] the 64 code bytes of group g as signed bytes (Q8_0: q),
 * d[h][c] and m[h][c] as scale_of makes them. */
static inline __attribute__((always_inline)) void load_block_neon(int64_t type, const uint8_t *rec, int sub,
                                                                  int8_t wb[8][64], float d[2][PANEL],
                                                                  float m[2][PANEL]) {
    const uint8x16_t low = vdupq_n_u8(0x0F);
    if (type == Q8_0) {
        const uint8x16_t flip = vdupq_n_u8(0x80);
        for (int g = 0; g < 8; g++)
            for (int q = 0; q < 4; q++)
                vst1q_s8(wb[g] + 16 * q, vreinterpretq_s8_u8(veorq_u8(
                    vld1q_u8(rec + offsetof(RecordQ8_0, codes) + g * 64 + 16 * q), flip)));
    } else {
        const uint8_t *nib = rec + (size_t)sub * 256;
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < 4; q++) { /* channels 4q .. 4q + 3: mask bits 16q .. 16q + 15 */
                uint8x16_t raw = vld1q_u8(nib + j * 64 + 16 * q);
                uint8x16_t lo = vandq_u8(raw, low), hi = vshrq_n_u8(raw, 4);
                if (has_bit4(type) || type == Q6_K)
                    for (int plane = 0; plane < (type == Q6_K ? 2 : 1); plane++) {
                        const uint8x16_t value = vdupq_n_u8((uint8_t)(16 << plane));
                        uint64_t mlo = load64(rec + mask_at(type, sub, plane, j)), mhi = load64(rec + mask_at(type, sub, plane, j + 4));
                        lo = vorrq_u8(lo, mask_bytes_neon((uint32_t)(mlo >> (16 * q)) & 0xFFFF, value));
                        hi = vorrq_u8(hi, mask_bytes_neon((uint32_t)(mhi >> (16 * q)) & 0xFFFF, value));
                    }
                vst1q_s8(wb[j] + 16 * q, vreinterpretq_s8_u8(lo));
                vst1q_s8(wb[j + 4] + 16 * q, vreinterpretq_s8_u8(hi));
            }
    }
    /* d and m by scale_of's operations, four channels at a time (the float16 conversion is exact) */
    for (int q = 0; q < 4; q++) {
        float32x4_t dv[2], mv[2];
#define F16X4(at) vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(rec + (at) + 8 * q)))
        if (type == Q4_1) {
            dv[0] = dv[1] = F16X4(offsetof(RecordQ4_1, d));
            mv[0] = mv[1] = F16X4(offsetof(RecordQ4_1, m));
        } else if (type == Q8_0) {
            dv[0] = dv[1] = F16X4(offsetof(RecordQ8_0, d));
            mv[0] = mv[1] = vmulq_f32(vdupq_n_f32(-128.0f), dv[0]);
        } else if (type == Q4_0 || type == Q5_0) { /* m = -8 d or -16 d, as scale_of */
            dv[0] = dv[1] = F16X4(type == Q4_0 ? offsetof(RecordQ4_0, d) : offsetof(RecordQ5_0, d));
            mv[0] = mv[1] = vmulq_f32(vdupq_n_f32(type == Q4_0 ? -8.0f : -16.0f), dv[0]);
        } else if (type == Q5_1) {
            dv[0] = dv[1] = F16X4(offsetof(RecordQ5_1, d));
            mv[0] = mv[1] = F16X4(offsetof(RecordQ5_1, m));
        } else if (type == Q4_K || type == Q5_K) {
            const uint8_t *sc = rec + K_FIELD(type, scale) + (size_t)sub * 16 + 4 * q;
            const uint8_t *mn = rec + K_FIELD(type, min) + (size_t)sub * 16 + 4 * q;
            float32x4_t s = {(float)sc[0], (float)sc[1], (float)sc[2], (float)sc[3]};
            float32x4_t n = {(float)mn[0], (float)mn[1], (float)mn[2], (float)mn[3]};
            dv[0] = dv[1] = vmulq_f32(F16X4(K_FIELD(type, d)), s);
            mv[0] = mv[1] = vnegq_f32(vmulq_f32(F16X4(K_FIELD(type, dmin)), n));
        } else { /* Q6_K */
            float32x4_t dd = F16X4(offsetof(RecordQ6_K, d));
            for (int h = 0; h < 2; h++) {
                const int8_t *sc = (const int8_t *)rec + offsetof(RecordQ6_K, scale) + ((size_t)sub * 2 + h) * 16 + 4 * q;
                float32x4_t s = {(float)sc[0], (float)sc[1], (float)sc[2], (float)sc[3]};
                dv[h] = vmulq_f32(dd, s);
                mv[h] = vmulq_f32(vdupq_n_f32(-32.0f), dv[h]);
            }
        }
#undef F16X4
        for (int h = 0; h < 2; h++) {
            vst1q_f32(d[h] + 4 * q, dv[h]);
            vst1q_f32(m[h] + 4 * q, mv[h]);
        }
    }
}

/* One panel's 16 channels (four vectors of 4) for R rows, D activation digits, H halves: panel_tile_ref's
 * contract. Each row's groups run as independent sdot chains; integer sums, so any grouping is exact. */
static inline __attribute__((always_inline)) void panel_tile_neon(const QMat *w, int p, const XBlock *x, int r0,
                                                                  float *out, int ldo, const int R, const int D,
                                                                  const int H) {
    const int kb = (int)(w->k / BLOCK);
    const int shifted = w->type == Q8_0; /* codes stored as q + 128: add 128 x sum(a) back */
    float32x4_t acc[MAX_TILE][4];
    for (int r = 0; r < R; r++)
        for (int q = 0; q < 4; q++) acc[r][q] = vdupq_n_f32(0.0f);
    for (int b = 0; b < kb; b++) {
        int sub;
        const uint8_t *rec = record_of(w, p, b, &sub);
        int8_t wb[8][64] __attribute__((aligned(16)));
        float d[2][PANEL] __attribute__((aligned(16))), m[2][PANEL] __attribute__((aligned(16)));
        load_block_neon(w->type, rec, sub, wb, d, m);
        for (int r = 0; r < R; r++) {
            const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
            for (int h = 0; h < (H ? 2 : 1); h++) {
                const int g0 = H ? 4 * h : 0, g1 = H ? g0 + 4 : 8;
                int32x4_t hi[4], lo[4];
                for (int q = 0; q < 4; q++) hi[q] = lo[q] = vdupq_n_s32(0);
                for (int g = g0; g < g1; g++) {
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
                if (shifted) { /* sum(u a) = sum(q a) + 128 sum(a), over this half's (or block's) inputs */
                    int32_t s1 = 0, s2 = 0;
                    for (int i = 4 * g0; i < 4 * g1; i++) s1 += xb->a1[i], s2 += xb->a2[i];
                    for (int q = 0; q < 4; q++) {
                        hi[q] = vaddq_s32(hi[q], vdupq_n_s32(128 * s1));
                        lo[q] = vaddq_s32(lo[q], vdupq_n_s32(128 * s2));
                    }
                }
                float s = D == 2 ? xb->s : xb->s1;
                float sa = H ? (D == 2 ? xb->sah[h] : xb->sa1h[h]) : (D == 2 ? xb->sa : xb->sa1);
                for (int q = 0; q < 4; q++) {
                    int32x4_t dot = D == 2 ? vaddq_s32(vshlq_n_s32(hi[q], 8), lo[q]) : hi[q];
                    float32x4_t f = vmulq_f32(vcvtq_f32_s32(dot), vdupq_n_f32(s));
                    acc[r][q] = vfmaq_f32(acc[r][q], vld1q_f32(d[h] + 4 * q), f);
                    acc[r][q] = vfmaq_f32(acc[r][q], vld1q_f32(m[h] + 4 * q), vdupq_n_f32(sa));
                }
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int q = 0; q < 4; q++) vst1q_f32(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL + 4 * q, acc[r][q]);
}

/* quantize_row_ref's digits, four lanes at a time: the same operations in the same order (round to nearest
 * even as nearbyintf in the default environment, clamp, v - a1 step, (rest inv) 256), integer totals exact. */
static void quantize_row_neon(const float *x, int k, XBlock *out) {
    const float32x4_t lim = vdupq_n_f32(127.0f), nlim = vdupq_n_f32(-127.0f);
    for (int b = 0; b < k / BLOCK; b++) {
        const float *v = x + b * BLOCK;
        XBlock *o = out + b;
        float32x4_t vs[8], top = vdupq_n_f32(0.0f);
        for (int j = 0; j < 8; j++) {
            vs[j] = vld1q_f32(v + 4 * j);
            top = vmaxq_f32(top, vabsq_f32(vs[j]));
        }
        float amax = vmaxvq_f32(top);
        if (amax == 0.0f || !isfinite(amax)) {
            quantize_row_ref(v, BLOCK, o); /* zeros, or a NaN/inf kept visible, as the reference does */
            continue;
        }
        float step = amax / 127.0f, inv = 127.0f / amax;
        const float32x4_t vstep = vdupq_n_f32(step), vinv = vdupq_n_f32(inv), k256 = vdupq_n_f32(256.0f);
        int32_t total[2] = {0, 0}, total1[2] = {0, 0};
        for (int j = 0; j < 8; j++) {
            float32x4_t a1 = vminq_f32(vmaxq_f32(vrndnq_f32(vmulq_f32(vs[j], vinv)), nlim), lim);
            float32x4_t rest = vsubq_f32(vs[j], vmulq_f32(a1, vstep));
            float32x4_t a2 = vminq_f32(vmaxq_f32(vrndnq_f32(vmulq_f32(vmulq_f32(rest, vinv), k256)), nlim), lim);
            int32x4_t i1 = vcvtq_s32_f32(a1), i2 = vcvtq_s32_f32(a2); /* whole values: exact */
            int32_t t1[4], t2[4];
            vst1q_s32(t1, i1);
            vst1q_s32(t2, i2);
            for (int l = 0; l < 4; l++) o->a1[4 * j + l] = (int8_t)t1[l], o->a2[4 * j + l] = (int8_t)t2[l];
            total[j / 4] += vaddvq_s32(vaddq_s32(vshlq_n_s32(i1, 8), i2));
            total1[j / 4] += vaddvq_s32(i1);
        }
        set_sums(o, step, total, total1);
    }
}
