/* The reference arithmetic on blocks, in plain C, always compiled (a build's vector forms, csrc/arch, must
 * give these bits; tests and harnesses call both): a row of activations as two int8 digits (quantize_row_ref)
 * and one panel's tile of out = x W^T (panel_tile_ref). dispatch.h maps quantize_row and panel_tile to the
 * build's own forms, or to these. */

/* The block's scales and sums from its integer totals (each half's): the same bits on every path. */
static void set_sums(XBlock *o, float step, const int32_t total[2], const int32_t total1[2]) {
    o->s = step / 256.0f;
    o->sa = o->s * (float)(total[0] + total[1]);
    o->s1 = step;
    o->sa1 = step * (float)(total1[0] + total1[1]);
    for (int h = 0; h < 2; h++) {
        o->sah[h] = o->s * (float)total[h];
        o->sa1h[h] = step * (float)total1[h];
    }
}

static void quantize_row_ref(const float *x, int k, XBlock *out) {
    for (int b = 0; b < k / BLOCK; b++) {
        const float *v = x + b * BLOCK;
        XBlock *o = out + b;
        float amax = 0.0f;
        for (int i = 0; i < BLOCK; i++) amax = fmaxf(amax, fabsf(v[i]));
        if (amax == 0.0f || !isfinite(amax)) {
            memset(o, 0, sizeof *o);
            if (!isfinite(amax)) o->s = o->s1 = amax; /* poisons the row's output: a NaN stays visible */
            continue;
        }
        float step = amax / 127.0f, inv = 127.0f / amax;
        int32_t total[2] = {0, 0}, total1[2] = {0, 0}; /* each half's */
        for (int i = 0; i < BLOCK; i++) {
            int a1 = (int)nearbyintf(v[i] * inv);
            a1 = a1 > 127 ? 127 : a1 < -127 ? -127 : a1;
            float rest = v[i] - (float)a1 * step;
            int a2 = (int)nearbyintf(rest * inv * 256.0f);
            a2 = a2 > 127 ? 127 : a2 < -127 ? -127 : a2;
            o->a1[i] = (int8_t)a1;
            o->a2[i] = (int8_t)a2;
            total[i / 16] += 256 * a1 + a2;
            total1[i / 16] += a1;
        }
        set_sums(o, step, total, total1);
    }
}

/* One panel's 16 channels for R rows (R <= MAX_TILE) times D activation digits (2: 256 a1 + a2; 1: a1
 * alone). H: the type's d and m change at each block's middle (Q6_K), so each half's integer dot gets its own
 * float update. Per row, channel and block: the exact integer dot, then cvt, mul, fma, fma, whatever R is. */
static inline void panel_tile_ref(const QMat *w, int p, const XBlock *x, int r0, float *out, int ldo, const int R,
                                  const int D, const int H) {
    const int kb = (int)(w->k / BLOCK);
    float acc[MAX_TILE][PANEL];
    memset(acc, 0, sizeof acc);
    for (int b = 0; b < kb; b++) {
        int sub;
        const uint8_t *rec = record_of(w, p, b, &sub);
        float d[2][PANEL], m[2][PANEL];
        uint8_t wb[PANEL][BLOCK]; /* channel c's 32 codes, unpacked */
        for (int c = 0; c < PANEL; c++) {
            for (int h = 0; h < 2; h++) scale_of(w->type, rec, sub, c, h, &d[h][c], &m[h][c]);
            for (int i = 0; i < BLOCK; i++) wb[c][i] = (uint8_t)code_of(w->type, rec, sub, c, i);
        }
        for (int r = 0; r < R; r++) {
            const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
            for (int c = 0; c < PANEL; c++)
                for (int h = 0; h < (H ? 2 : 1); h++) {
                    int i0 = H ? 16 * h : 0, i1 = H ? i0 + 16 : BLOCK;
                    int32_t hi = 0, lo = 0;
                    for (int i = i0; i < i1; i++) hi += (int32_t)wb[c][i] * xb->a1[i];
                    if (D == 2)
                        for (int i = i0; i < i1; i++) lo += (int32_t)wb[c][i] * xb->a2[i];
                    float f = D == 2 ? (float)(hi * 256 + lo) * xb->s : (float)hi * xb->s1;
                    float sa = H ? (D == 2 ? xb->sah[h] : xb->sa1h[h]) : (D == 2 ? xb->sa : xb->sa1);
                    acc[r][c] = fmaf(d[h][c], f, acc[r][c]);
                    acc[r][c] = fmaf(m[h][c], sa, acc[r][c]);
                }
        }
    }
    for (int r = 0; r < R; r++) memcpy(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL, acc[r], sizeof acc[r]);
}
