/* out = x W^T on block-quantized weights: panels of 16 channels, every row of a pass in the same order, each
 * panel's tiles by the build's panel_tile (dispatch.h). */

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
    MatmulTask t = {.w = w, .x = x, .rows = rows, .out = out, .ldo = (int)proj_rows(w)};
    int panels = (int)(proj_rows(w) / PANEL);
    parallel(matmul_task, &t, nth < panels ? nth : panels);
}

/* out [rows, w->n] = x [rows, w->k] @ w^T, x already quantized */
static void matmul(const QMat *w, const XBlock *x, int rows, float *out, int nth) {
    Proj one = {.part = {*w}, .count = 1};
    matmul_proj(&one, x, rows, out, nth);
}
