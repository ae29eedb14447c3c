/* The model a pass runs: its dimensions and every buffer with its size, checked whole (check_model)
 * before any pass reads it. Every buffer a pass writes is sized from these dimensions, so a model that
 * passes the check cannot make the pass read or write outside what it was handed. */

#define MAX_LAYERS 4096
#define MAX_WIDTH (1 << 20)     /* hidden, ffn, q/k/v widths: products with row counts stay in size_t */
#define MAX_HEADS 1024
#define MAX_HEAD_DIM 1024
#define MAX_ROWS (1 << 16)      /* rows a pass */
#define MAX_VOCAB (1 << 24)

typedef struct {
    const float *p;
    size_t count; /* floats */
} Vec;

typedef struct {
    Vec attn_norm, qkv_bias, ffn_norm; /* qkv_bias.p NULL: none */
    Vec q_norm, k_norm;                /* per-head RMSNorm of q and k before rotary (Qwen3), or NULL: none */
    Proj qkv, gate_up;                 /* one matrix, or q, k, v (gate, up) side by side */
    QMat o, down;
} Layer;

typedef struct {
    int layers, hidden, heads, kv_heads, head_dim, ffn, vocab, max_pos;
    float eps;
    Vec cos, sin;   /* [max_pos, head_dim / 2] */
    Vec norm;       /* [hidden] */
    QMat embed;     /* [>= vocab, hidden] */
    QMat head;      /* [rows, hidden]: logits are head.n wide; its rows the vocabulary's (the first vocab real) or a
                     * draft's token subset (app/native/model.py with_head_rows), fewer than vocab */
    Layer *layer;   /* [layers] */
} Model;

static int attn_width(const Model *md) { return md->heads * md->head_dim; }
static int qkv_width(const Model *md) { return (md->heads + 2 * md->kv_heads) * md->head_dim; }
static int kv_width(const Model *md) { return md->kv_heads * md->head_dim; }

/* NULL when the matrix is whole (a known type, n and k in panels and blocks, q holding exactly its
 * records), else why not. */
static const char *check_matrix(const QMat *w) {
    size_t rb = record_bytes_of(w->type);
    if (rb == 0) return "a weight matrix of an unknown block type";
    if (w->n < PANEL || w->n % PANEL || w->n > MAX_VOCAB) return "a weight matrix's rows are not whole panels of 16";
    if (w->k < unit_of(w->type) || w->k % unit_of(w->type) || w->k > MAX_WIDTH)
        return "a weight matrix's inputs are not whole blocks of its type (32, or 256 for the K types)";
    if (!w->q) return "a weight matrix without data";
    if (w->digits != 1 && w->digits != 2) return "a weight matrix reads 1 or 2 activation digits";
    if (w->bytes != (size_t)(w->n / PANEL) * (size_t)(w->k / unit_of(w->type)) * rb)
        return "a weight matrix's data does not hold its rows x inputs in its block type";
    return NULL;
}

static const char *check_vec(const Vec *v, size_t want, int optional) {
    if (!v->p) return optional ? NULL : "a missing vector";
    return v->count == want ? NULL : "a vector of the wrong length";
}

/* NULL when a projection's parts are whole matrices of the same inputs, else why not. */
static const char *check_proj(const Proj *w, int k) {
    if (w->count < 1 || w->count > MAX_PARTS) return "a projection of no parts, or of more than three";
    for (int j = 0; j < w->count; j++) {
        const char *why = check_matrix(&w->part[j]);
        if (why) return why;
        if (w->part[j].k != k) return "a projection's parts do not all take the hidden size";
    }
    return NULL;
}

#define CHECK(cond, why) \
    do {                 \
        if (!(cond)) return why; \
    } while (0)
#define CHECK_OK(call)              \
    do {                            \
        const char *why_ = (call);  \
        if (why_) return why_;      \
    } while (0)

/* NULL when a pass may run on md, else a one-line reason. */
static const char *check_model(const Model *md) {
    CHECK(md->layers >= 1 && md->layers <= MAX_LAYERS, "layers outside 1..4096");
    CHECK(md->hidden >= BLOCK && md->hidden <= MAX_WIDTH && md->hidden % BLOCK == 0,
          "the hidden size is not a whole number of blocks of 32");
    CHECK(md->heads >= 1 && md->heads <= MAX_HEADS && md->kv_heads >= 1 && md->kv_heads <= md->heads,
          "head counts outside 1..1024, or more key heads than query heads");
    CHECK(md->heads % md->kv_heads == 0 && md->heads / md->kv_heads <= MAX_GROUP,
          "query heads are not whole groups of at most 16 per key head");
    CHECK(md->head_dim >= 2 && md->head_dim <= MAX_HEAD_DIM && md->head_dim % 2 == 0,
          "the head dimension is not even, or outside 2..1024");
    CHECK(md->ffn >= BLOCK && md->ffn <= MAX_WIDTH && md->ffn % BLOCK == 0,
          "the FFN width is not a whole number of blocks of 32");
    CHECK((int64_t)qkv_width(md) <= MAX_WIDTH && attn_width(md) % BLOCK == 0 && qkv_width(md) % PANEL == 0,
          "the attention width is not a whole number of blocks of 32");
    CHECK(md->vocab >= 1 && md->vocab <= MAX_VOCAB, "the vocabulary is empty or too large");
    CHECK(md->max_pos >= 1 && md->max_pos <= (1 << 24), "the rotary table holds no positions");
    CHECK(isfinite(md->eps) && md->eps >= 0.0f, "the norm epsilon is not a finite number >= 0");
    size_t half = (size_t)md->head_dim / 2, table = (size_t)md->max_pos * half;
    CHECK(md->cos.p && md->sin.p && md->cos.count == table && md->sin.count == table,
          "the rotary tables are not [positions, head_dim / 2]");
    CHECK(md->norm.p && md->norm.count == (size_t)md->hidden, "the final norm is not hidden wide");
    CHECK_OK(check_matrix(&md->embed));
    CHECK_OK(check_matrix(&md->head));
    CHECK(md->embed.k == md->hidden && md->embed.n >= md->vocab, "the embedding is not [vocab, hidden]");
    CHECK(md->head.k == md->hidden, "the output head is not [rows, hidden]");
    CHECK(md->layer != NULL, "no layers");
    for (int l = 0; l < md->layers; l++) {
        const Layer *y = &md->layer[l];
        CHECK(!check_vec(&y->attn_norm, md->hidden, 0) && !check_vec(&y->ffn_norm, md->hidden, 0),
              "a layer's norm is not hidden wide");
        CHECK(!check_vec(&y->qkv_bias, qkv_width(md), 1), "a layer's q/k/v bias is not q/k/v wide");
        CHECK(!check_vec(&y->q_norm, md->head_dim, 1) && !check_vec(&y->k_norm, md->head_dim, 1) &&
                  !y->q_norm.p == !y->k_norm.p, "a layer's q/k norms are not head_dim wide, or only one is given");
        CHECK_OK(check_proj(&y->qkv, md->hidden));
        CHECK_OK(check_matrix(&y->o));
        CHECK_OK(check_proj(&y->gate_up, md->hidden));
        CHECK_OK(check_matrix(&y->down));
        CHECK(proj_rows(&y->qkv) == qkv_width(md), "a layer's q/k/v is not [(heads + 2 kv heads) x head_dim, hidden]");
        CHECK(y->o.n == md->hidden && y->o.k == attn_width(md), "a layer's output projection is not [hidden, heads x head_dim]");
        CHECK(proj_rows(&y->gate_up) == 2 * (int64_t)md->ffn, "a layer's gate/up is not [2 ffn, hidden]");
        CHECK(y->down.n == md->hidden && y->down.k == md->ffn, "a layer's down projection is not [hidden, ffn]");
    }
    return NULL;
}
