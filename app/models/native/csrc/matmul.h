/* out = x W^T on block-quantized weights: panels of 16 channels, every row of a pass in the same order. */

#ifdef SL_AVX512
/* acc + w (unsigned bytes) . the four signed bytes at a, broadcast: vpdpbusd with its memory operand
 * broadcast, written out because compilers otherwise hoist every broadcast into a register of its own
 * (a tile's 16 R of them spill). */
static inline __attribute__((always_inline)) __m512i dpbusd_bcast(__m512i acc, __m512i w, const int32_t *a) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*a));
    return acc;
}

/* One panel's 16 channels for R rows (R <= MAX_TILE), every block's weights loaded (and Q4_1's nibbles
 * unpacked) once for the R rows. The float update per row and block (cvt, mul, fma, fma) and the integer
 * dot are the same whatever R is, so a row's bits never depend on its tile. */
static inline __attribute__((always_inline)) void panel_tile(const QMat *w, int p, const XBlock *x, int r0,
                                                             int rows, float *out, int ldo, const int R) {
    const int kb = (int)(w->k / BLOCK);
    const size_t rb = record_bytes(w);
    __m512 acc[MAX_TILE];
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
    const __m512i low = _mm512_set1_epi8(0x0F);
    /* The first tile asks for the next panel's bytes a panel ahead: the later tiles (and the float work)
     * then run while they arrive, so a multi-row pass streams its weights under its arithmetic. */
    const int ahead = r0 == 0 && (int64_t)(p + 1) * PANEL < w->n;
    const uint8_t *base = w->q + (size_t)p * kb * rb;
    for (int b = 0; b < kb; b++) {
        const uint8_t *rec = base + (size_t)b * rb;
        if (ahead) {
            const uint8_t *next = rec + (size_t)kb * rb;
            for (size_t o = 0; o < rb; o += 64) _mm_prefetch((const char *)(next + o), _MM_HINT_T0);
            _mm_prefetch((const char *)(next + rb - 1), _MM_HINT_T0);
        }
        __m512i wv[8];
        __m512 d, m;
        if (w->type == Q4_1) {
            const __m512i *src = (const __m512i *)rec;
            for (int j = 0; j < 4; j++) {
                __m512i raw = _mm512_loadu_si512(src + j);
                wv[j] = _mm512_and_si512(raw, low);
                wv[j + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
            }
            d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 256)));
            m = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 288)));
        } else {
            const __m512i *src = (const __m512i *)rec;
            for (int j = 0; j < 8; j++) wv[j] = _mm512_loadu_si512(src + j);
            d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 512)));
            m = _mm512_mul_ps(d, _mm512_set1_ps(-128.0f));
        }
        if (R == 1) {
            const XBlock *xb = x + (size_t)r0 * kb + b;
            const int32_t *a1 = (const int32_t *)xb->a1, *a2 = (const int32_t *)xb->a2;
            /* Four chains a digit: one chain of 8 dependent vpdpbusd waits on their latency (~5 cycles
             * each). Integer sums, so any grouping gives the same bits. */
            __m512i h0 = _mm512_setzero_si512(), h1 = h0, l0 = h0, l1 = h0;
            for (int g = 0; g < 8; g += 2) {
                h0 = _mm512_dpbusd_epi32(h0, wv[g], _mm512_set1_epi32(a1[g]));
                l0 = _mm512_dpbusd_epi32(l0, wv[g], _mm512_set1_epi32(a2[g]));
                h1 = _mm512_dpbusd_epi32(h1, wv[g + 1], _mm512_set1_epi32(a1[g + 1]));
                l1 = _mm512_dpbusd_epi32(l1, wv[g + 1], _mm512_set1_epi32(a2[g + 1]));
            }
            __m512i hi = _mm512_add_epi32(h0, h1), lo = _mm512_add_epi32(l0, l1);
            __m512i dot = _mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo);
            __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(xb->s));
            acc[0] = _mm512_fmadd_ps(d, f, acc[0]);
            acc[0] = _mm512_fmadd_ps(m, _mm512_set1_ps(xb->sa), acc[0]);
        } else {
            /* Two chains a row (one a digit), the R rows' 2R chains interleaved: enough independent
             * vpdpbusd in flight for the unit's rate, with no partial sums to merge. */
            __m512i hs[MAX_TILE], ls[MAX_TILE];
            for (int r = 0; r < R; r++) hs[r] = ls[r] = _mm512_setzero_si512();
            for (int g = 0; g < 8; g++)
                for (int r = 0; r < R; r++) {
                    const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                    hs[r] = dpbusd_bcast(hs[r], wv[g], (const int32_t *)xb->a1 + g);
                    ls[r] = dpbusd_bcast(ls[r], wv[g], (const int32_t *)xb->a2 + g);
                }
            for (int r = 0; r < R; r++) {
                const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                __m512i dot = _mm512_add_epi32(_mm512_slli_epi32(hs[r], 8), ls[r]);
                __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(xb->s));
                acc[r] = _mm512_fmadd_ps(d, f, acc[r]);
                acc[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(xb->sa), acc[r]);
            }
        }
    }
    for (int r = 0; r < R; r++) _mm512_storeu_ps(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL, acc[r]);
    (void)rows;
}
#else
static inline void panel_tile(const QMat *w, int p, const XBlock *x, int r0, int rows, float *out, int ldo,
                              const int R) {
    const int kb = (int)(w->k / BLOCK);
    float acc[MAX_TILE][PANEL];
    memset(acc, 0, sizeof acc);
    for (int b = 0; b < kb; b++) {
        const uint8_t *q = w->q + ((size_t)p * kb + b) * record_bytes(w);
        float d[PANEL], m[PANEL];
        uint8_t wb[PANEL][BLOCK]; /* channel c's 32 weights, unpacked */
        for (int c = 0; c < PANEL; c++) scales(w, q, c, &d[c], &m[c]);
        for (int c = 0; c < PANEL; c++)
            for (int k = 0; k < BLOCK; k++) {
                if (w->type == Q4_1) {
                    int j = (k % 16) / 4, byte = q[j * 64 + c * 4 + k % 4];
                    wb[c][k] = (uint8_t)(k < 16 ? byte & 15 : byte >> 4);
                } else {
                    wb[c][k] = q[(k / 4) * 64 + c * 4 + k % 4];
                }
            }
        for (int r = 0; r < R; r++) {
            const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
            for (int c = 0; c < PANEL; c++) {
                int32_t hi = 0, lo = 0;
                for (int k = 0; k < BLOCK; k++) {
                    hi += (int32_t)wb[c][k] * xb->a1[k];
                    lo += (int32_t)wb[c][k] * xb->a2[k];
                }
                float f = (float)(hi * 256 + lo) * xb->s;
                acc[r][c] = fmaf(d[c], f, acc[r][c]);
                acc[r][c] = fmaf(m[c], xb->sa, acc[r][c]);
            }
        }
    }
    for (int r = 0; r < R; r++) memcpy(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL, acc[r], sizeof acc[r]);
    (void)rows;
}
#endif

#ifdef SL_AVX512
#define TILE_ROWS 6 /* 2 chains a row + an accumulator + 8 weight vectors: 29 of the 32 registers */
#else
#define TILE_ROWS MAX_TILE
#endif

static void panel_rows(const QMat *w, int p, const XBlock *x, int rows, float *out, int ldo) {
    int tiles = (rows + TILE_ROWS - 1) / TILE_ROWS;
    for (int t = 0; t < tiles; t++) {
        int r0 = rows * t / tiles, r1 = rows * (t + 1) / tiles;
        switch (r1 - r0) { /* a constant tile height, so the accumulators stay in registers */
        case 1: panel_tile(w, p, x, r0, rows, out, ldo, 1); break;
        case 2: panel_tile(w, p, x, r0, rows, out, ldo, 2); break;
        case 3: panel_tile(w, p, x, r0, rows, out, ldo, 3); break;
        case 4: panel_tile(w, p, x, r0, rows, out, ldo, 4); break;
        case 5: panel_tile(w, p, x, r0, rows, out, ldo, 5); break;
        case 6: panel_tile(w, p, x, r0, rows, out, ldo, 6); break;
        case 7: panel_tile(w, p, x, r0, rows, out, ldo, 7); break;
        default: panel_tile(w, p, x, r0, rows, out, ldo, 8); break;
        }
    }
}

typedef struct {
    const QMat *w;
    const XBlock *x;
    int rows;
    float *out;
    int ldo;
} MatmulTask;

static void matmul_task(void *ctx, int ith, int nth) {
    MatmulTask *t = ctx;
    int lo, hi;
    Chunks c = chunked((int)(t->w->n / PANEL), nth);
    while (claim(&c, &lo, &hi))
        for (int p = lo; p < hi; p++) panel_rows(t->w, p, t->x, t->rows, t->out, t->ldo);
}

/* out [rows, w->n] = x [rows, w->k] @ w^T, x already quantized */
static void matmul(const QMat *w, const XBlock *x, int rows, float *out, int nth) {
    MatmulTask t = {w, x, rows, out, (int)w->n};
    int panels = (int)(w->n / PANEL);
    parallel(matmul_task, &t, nth < panels ? nth : panels);
}

