/* The pass over n rows: the whole model, its scratch sized from md's checked dimensions. */

/* Attention's jobs: each (row, kv head) whole on one thread, its visible slots gathered in slot order, then
 * the build's attend_heads (dispatch.h). */
static void attend_job(const AttentionTask *t, int i, int g, float *scores, int *slots) {
    int count = 0, from = t->visible ? t->masked_from : t->held, width_seen = t->held - from + t->n;
    for (int s = 0; s < from; s++) slots[count++] = s;
    for (int s = from; s < t->held + t->n; s++)
        if (t->visible ? t->visible[(size_t)i * width_seen + (s - from)] : s - t->held <= i) slots[count++] = s;
    attend_heads(t, i, g, scores, slots, count);
}

static void attention_task(void *ctx, int ith, int nth) {
    AttentionTask *t = ctx;
    int lo, hi;
    Chunks c = chunked(t->n * t->md->kv_heads, nth);
    size_t room = (size_t)(t->held + t->n);
    float *scores = t->scratch + (size_t)ith * room * MAX_GROUP; /* each thread's own: ith < nth */
    int *slots = t->slots + (size_t)ith * room;
    while (claim(&c, &lo, &hi))
        for (int job = lo; job < hi; job++) attend_job(t, job / t->md->kv_heads, job % t->md->kv_heads, scores, slots);
}



static void *grab(size_t bytes, int *failed) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) *failed = 1;
    return p;
}

/* One pass's inputs and outputs, each with the count of items its buffer holds (check_pass). */
typedef struct {
    int n;                     /* rows, fed at cache slots held .. held + n - 1 */
    const int64_t *tokens;     /* [n] ids, or NULL: inputs */
    const float *inputs;       /* [n, hidden], or NULL: tokens */
    const int64_t *positions;  /* [n] */
    int held, masked_from;     /* cached slots; the first slot the visibility covers */
    const uint8_t *visible;    /* [n, held - masked_from + n], or NULL: causal */
    float *keys, *values;      /* [layers, cap, kv width] */
    int cap;
    float *hidden_out;         /* [n, hidden], or NULL */
    int keep;                  /* logits for the last keep rows */
    float *logits_out;         /* [keep, head.n], or NULL when keep is 0 */
    size_t tokens_count, inputs_count, positions_count, visible_count, cache_count, hidden_count, logits_count;
} Pass;

/* NULL when the pass fits md and every buffer holds what the pass reads or writes, else why not. */
static const char *check_pass(const Model *md, const Pass *ps) {
    CHECK(ps->n >= 1 && ps->n <= MAX_ROWS, "rows outside 1..65536");
    CHECK(ps->held >= 0 && ps->cap >= 1 && ps->held <= ps->cap - ps->n, "the cache has no room for these rows");
    CHECK(ps->masked_from >= 0 && ps->masked_from <= ps->held, "the visibility starts past the cached slots");
    CHECK(ps->keep >= 0 && ps->keep <= ps->n, "more logits kept than rows");
    CHECK((ps->tokens != NULL) != (ps->inputs != NULL), "a pass takes token ids or input rows, one of them");
    CHECK(!ps->tokens || ps->tokens_count == (size_t)ps->n, "token ids are not one a row");
    CHECK(!ps->inputs || ps->inputs_count == (size_t)ps->n * md->hidden, "input rows are not [rows, hidden]");
    CHECK(ps->positions && ps->positions_count == (size_t)ps->n, "positions are not one a row");
    size_t seen = (size_t)(ps->held - ps->masked_from + ps->n);
    CHECK(!ps->visible || ps->visible_count == (size_t)ps->n * seen, "the visibility is not [rows, seen slots]");
    size_t cache = (size_t)md->layers * (size_t)ps->cap * (size_t)kv_width(md);
    CHECK(ps->keys && ps->values && ps->cache_count == cache, "the cache is not [layers, capacity, kv width]");
    CHECK(!ps->hidden_out || ps->hidden_count == (size_t)ps->n * md->hidden, "the hidden output is not [rows, hidden]");
    CHECK(ps->keep == 0 || (ps->logits_out && ps->logits_count == (size_t)ps->keep * (size_t)md->head.n),
          "the logits output is not [kept rows, head rows]");
    for (int r = 0; r < ps->n; r++) {
        CHECK(ps->positions[r] >= 0 && ps->positions[r] < md->max_pos, "a position past the rotary table");
        CHECK(!ps->tokens || (ps->tokens[r] >= 0 && ps->tokens[r] < md->vocab), "a token id outside the vocabulary");
    }
    return NULL;
}

/* The pass (check_pass first). Returns 0, or -1 when memory ran out. */
static int run_forward(const Model *md, const Pass *ps, int nth) {
    int n = ps->n, held = ps->held, cap = ps->cap, keep = ps->keep, masked_from = ps->masked_from;
    const int64_t *tokens = ps->tokens, *positions = ps->positions;
    const float *inputs = ps->inputs;
    const uint8_t *visible = ps->visible;
    float *hidden_out = ps->hidden_out, *logits_out = ps->logits_out;
    int h = md->hidden, hd = md->head_dim, kvw = md->kv_heads * hd, qw = (md->heads + 2 * md->kv_heads) * hd;
    int aw = md->heads * hd, big = md->ffn > aw ? md->ffn : aw;
    big = big > h ? big : h;
    int attw = aw > h ? aw : h; /* att holds the attention rows, then the down projection's hidden-wide rows */
    int failed = 0;
    float *x = grab(sizeof(float) * n * h, &failed);
    float *normed = grab(sizeof(float) * n * big, &failed);
    XBlock *xq = grab(sizeof(XBlock) * n * (big / BLOCK + 1), &failed);
    float *qkv = grab(sizeof(float) * n * qw, &failed);
    float *att = grab(sizeof(float) * n * attw, &failed);
    float *ff = grab(sizeof(float) * n * 2 * md->ffn, &failed);
    size_t room = (size_t)(held + n);
    float *scratch = grab(sizeof(float) * nth * room * MAX_GROUP, &failed);
    int *slots = grab(sizeof(int) * nth * room, &failed);
    int rc = 0;
    if (failed) {
        rc = -1;
        goto done;
    }
    for (int r = 0; r < n; r++) {
        if (inputs) memcpy(x + (size_t)r * h, inputs + (size_t)r * h, sizeof(float) * h);
        else dequantize_row(&md->embed, tokens[r], x + (size_t)r * h);
    }
    int half = hd / 2;
    for (int l = 0; l < md->layers; l++) {
        const Layer *y = &md->layer[l];
        const float *attn_norm = y->attn_norm.p, *bias = y->qkv_bias.p;
        for (int r = 0; r < n; r++) {
            rms_norm(x + (size_t)r * h, attn_norm, h, md->eps, normed + (size_t)r * h);
            quantize_row(normed + (size_t)r * h, h, xq + (size_t)r * (h / BLOCK));
        }
        matmul_proj(&y->qkv, xq, n, qkv, nth);
        float *kc = ps->keys + (size_t)l * cap * kvw, *vc = ps->values + (size_t)l * cap * kvw;
        for (int r = 0; r < n; r++) {
            float *row = qkv + (size_t)r * qw;
            if (bias)
                for (int i = 0; i < qw; i++) row[i] += bias[i];
            const float *cos = md->cos.p + (size_t)positions[r] * half, *sin = md->sin.p + (size_t)positions[r] * half;
            if (y->q_norm.p) /* Qwen3: each query and key head RMS-normed before its rotation */
                for (int head = 0; head < md->heads + md->kv_heads; head++)
                    rms_norm(row + (size_t)head * hd, head < md->heads ? y->q_norm.p : y->k_norm.p, hd, md->eps,
                             row + (size_t)head * hd);
            for (int head = 0; head < md->heads + md->kv_heads; head++) rope(row + (size_t)head * hd, cos, sin, half);
            memcpy(kc + (size_t)(held + r) * kvw, row + aw, sizeof(float) * kvw);
            memcpy(vc + (size_t)(held + r) * kvw, row + aw + kvw, sizeof(float) * kvw);
        }
        AttentionTask at = {.md = md, .n = n, .held = held, .cap = cap, .layer = l, .masked_from = masked_from,
                            .visible = visible, .qkv = qkv, .kc = kc, .vc = vc, .out = att, .scratch = scratch,
                            .slots = slots};
        int jobs = n * md->kv_heads;
        parallel(attention_task, &at, nth < jobs ? nth : jobs);
        for (int r = 0; r < n; r++) quantize_row(att + (size_t)r * aw, aw, xq + (size_t)r * (aw / BLOCK));
        matmul(&y->o, xq, n, normed, nth);
        for (size_t i = 0; i < (size_t)n * h; i++) x[i] += normed[i];
        const float *ffn_norm = y->ffn_norm.p;
        for (int r = 0; r < n; r++) {
            rms_norm(x + (size_t)r * h, ffn_norm, h, md->eps, normed + (size_t)r * h);
            quantize_row(normed + (size_t)r * h, h, xq + (size_t)r * (h / BLOCK));
        }
        matmul_proj(&y->gate_up, xq, n, ff, nth);
        int f = md->ffn;
        for (int r = 0; r < n; r++) {
            float *gate = ff + (size_t)r * 2 * f, *up = gate + f, *act = normed + (size_t)r * f;
            silu_mul(gate, up, f, act);
            quantize_row(act, f, xq + (size_t)r * (f / BLOCK));
        }
        matmul(&y->down, xq, n, att, nth);
        for (size_t i = 0; i < (size_t)n * h; i++) x[i] += att[i];
    }
    for (int r = 0; r < n; r++) rms_norm(x + (size_t)r * h, md->norm.p, h, md->eps, normed + (size_t)r * h);
    if (hidden_out) memcpy(hidden_out, normed, sizeof(float) * n * h);
    if (keep > 0 && logits_out) {
        int first = n - keep;
        for (int r = 0; r < keep; r++) quantize_row(normed + (size_t)(first + r) * h, h, xq + (size_t)r * (h / BLOCK));
        matmul(&md->head, xq, keep, logits_out, nth);
    }
done:
    free(x), free(normed), free(xq), free(qkv), free(att), free(ff), free(scratch), free(slots);
    return rc;
}

