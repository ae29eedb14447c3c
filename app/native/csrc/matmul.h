/* out = x W^T on block-quantized weights: panels of 16 channels, every row of a pass in the same order. */

#ifdef SL_AVX512
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
static inline __attribute__((always_inline)) void panel_tile(const QMat *w, int p, const XBlock *x, int r0,
                                                             float *out, int ldo, const int R, const int D,
                                                             const int H) {
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
        load_block(w->type, rec, sub, wv, d, m);
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
                /* Two chains a row (one a digit; one digit: the even and the odd groups), the R rows' chains
                 * interleaved: enough independent vpdpbusd in flight for the unit's rate. */
                __m512i hs[MAX_TILE], ls[MAX_TILE];
                for (int r = 0; r < R; r++) hs[r] = ls[r] = _mm512_setzero_si512();
                if (D == 2) {
                    for (int g = g0; g < g1; g++)
                        for (int r = 0; r < R; r++) {
                            const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                            hs[r] = dpbusd_bcast(hs[r], wv[g], (const int32_t *)xb->a1 + g);
                            ls[r] = dpbusd_bcast(ls[r], wv[g], (const int32_t *)xb->a2 + g);
                        }
                } else {
                    for (int g = g0; g < g1; g += 2)
                        for (int r = 0; r < R; r++) {
                            const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                            hs[r] = dpbusd_bcast(hs[r], wv[g], (const int32_t *)xb->a1 + g);
                            ls[r] = dpbusd_bcast(ls[r], wv[g + 1], (const int32_t *)xb->a1 + g + 1);
                        }
                }
                for (int r = 0; r < R; r++) {
                    const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                    __m512i dot = D == 2 ? _mm512_add_epi32(_mm512_slli_epi32(hs[r], 8), ls[r])
                                         : _mm512_add_epi32(hs[r], ls[r]);
                    float s = D == 2 ? xb->s : xb->s1;
                    float sa = H ? (D == 2 ? xb->sah[h] : xb->sa1h[h]) : (D == 2 ? xb->sa : xb->sa1);
                    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(s));
                    acc[r] = _mm512_fmadd_ps(d[h], f, acc[r]);
                    acc[r] = _mm512_fmadd_ps(m[h], _mm512_set1_ps(sa), acc[r]);
                }
            }
        }
    }
    for (int r = 0; r < R; r++) _mm512_storeu_ps(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL, acc[r]);
}
#else
static inline void panel_tile(const QMat *w, int p, const XBlock *x, int r0, float *out, int ldo, const int R,
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
#endif

#ifdef SL_AVX512
#define TILE_ROWS 6 /* 2 chains a row + an accumulator + 8 weight vectors: 29 of the 32 registers */
#else
#define TILE_ROWS MAX_TILE
#endif

/* A constant tile height, digit count and halving, so the accumulators stay in registers. */
#define TILE(D, H)                                                      \
    switch (r1 - r0) {                                                  \
    case 1: panel_tile(w, p, x, r0, out, ldo, 1, D, H); break;          \
    case 2: panel_tile(w, p, x, r0, out, ldo, 2, D, H); break;          \
    case 3: panel_tile(w, p, x, r0, out, ldo, 3, D, H); break;          \
    case 4: panel_tile(w, p, x, r0, out, ldo, 4, D, H); break;          \
    case 5: panel_tile(w, p, x, r0, out, ldo, 5, D, H); break;          \
    case 6: panel_tile(w, p, x, r0, out, ldo, 6, D, H); break;          \
    case 7: panel_tile(w, p, x, r0, out, ldo, 7, D, H); break;          \
    default: panel_tile(w, p, x, r0, out, ldo, 8, D, H); break;         \
    }

static void panel_rows(const QMat *w, int p, const XBlock *x, int rows, float *out, int ldo) {
    int tiles = (rows + TILE_ROWS - 1) / TILE_ROWS;
    int one = ONE_DIGIT(w), halves = halves_of(w->type);
    for (int t = 0; t < tiles; t++) {
        int r0 = rows * t / tiles, r1 = rows * (t + 1) / tiles;
        if (one && halves) {
            TILE(1, 1)
        } else if (one) {
            TILE(1, 0)
        } else if (halves) {
            TILE(2, 1)
        } else {
            TILE(2, 0)
        }
    }
}

#define MAX_PARTS 3

/* A projection whose output columns come from up to three matrices side by side (q, k and v, or gate and
 * up, each in its own block type as a GGUF holds them): one parallel region over all their panels. */
typedef struct {
    QMat part[MAX_PARTS];
    int count;
} Proj;

static int64_t proj_rows(const Proj *w) {
    int64_t n = 0;
    for (int j = 0; j < w->count; j++) n += w->part[j].n;
    return n;
}

typedef struct {
    const Proj *w;
    const XBlock *x;
    int rows;
    float *out;
    int ldo;
} MatmulTask;

static void matmul_task(void *ctx, int ith, int nth) {
    MatmulTask *t = ctx;
    int lo, hi;
    Chunks c = chunked((int)(proj_rows(t->w) / PANEL), nth);
    while (claim(&c, &lo, &hi))
        for (int panel = lo; panel < hi; panel++) {
            int j = 0, p = panel;
            int64_t col = 0;
            while (p >= t->w->part[j].n / PANEL) { /* the part holding this panel, and its first column */
                p -= (int)(t->w->part[j].n / PANEL);
                col += t->w->part[j].n;
                j++;
            }
            panel_rows(&t->w->part[j], p, t->x, t->rows, t->out + col, t->ldo);
        }
}

/* out [rows, all parts' n] = x [rows, k] @ [parts]^T, x already quantized */
static void matmul_proj(const Proj *w, const XBlock *x, int rows, float *out, int nth) {
    MatmulTask t = {w, x, rows, out, (int)proj_rows(w)};
    int panels = (int)(proj_rows(w) / PANEL);
    parallel(matmul_task, &t, nth < panels ? nth : panels);
}

/* out [rows, w->n] = x [rows, w->k] @ w^T, x already quantized */
static void matmul(const QMat *w, const XBlock *x, int rows, float *out, int nth) {
    Proj one = {{*w}, 1};
    matmul_proj(&one, x, rows, out, nth);
}
