/* Attention over the cache, reference form: one row and kv head over its visible slots, in slot order.
 * dispatch.h maps attend_heads to a build's own form, or to this; forward.h runs the jobs. */

typedef struct {
    const Model *md;
    int n, held, cap, layer;
    int masked_from;        /* slots before it every row sees; the visibility covers the rest */
    const uint8_t *visible; /* [n, held - masked_from + n]: slots masked_from.. held + n - 1, or NULL: causal */
    const float *qkv;       /* [n, (heads + 2 kv_heads) head_dim], rotated */
    const float *kc, *vc;   /* this layer's cache [cap, kv_heads head_dim] */
    float *out;             /* [n, heads head_dim] */
    float *scratch;         /* nth x (held + n) x MAX_GROUP scores, then slots */
    int *slots;
} AttentionTask;

/* Row i and kv head g: the group of query heads sharing g, over the visible slots in slot order. */
static void attend_heads_ref(const AttentionTask *t, int i, int g, float *scores, const int *slots, int count) {
    const Model *md = t->md;
    int hd = md->head_dim, group = md->heads / md->kv_heads, width = md->kv_heads * hd;
    int qw = (md->heads + 2 * md->kv_heads) * hd;
    const float *q0 = t->qkv + (size_t)i * qw;
    float scale = 1.0f / sqrtf((float)hd);
    for (int h = 0; h < group; h++) {
        const float *q = q0 + (size_t)(g * group + h) * hd;
        float *sc = scores + (size_t)h * count;
        float top = -INFINITY;
        for (int c = 0; c < count; c++) {
            sc[c] = dot(q, t->kc + (size_t)slots[c] * width + (size_t)g * hd, hd) * scale;
            top = fmaxf(top, sc[c]);
        }
        float total = 0.0f;
        for (int c = 0; c < count; c++) {
            sc[c] = expf(sc[c] - top);
            total += sc[c];
        }
        float *o = t->out + (size_t)i * md->heads * hd + (size_t)(g * group + h) * hd;
        for (int e = 0; e < hd; e++) o[e] = 0.0f;
        for (int c = 0; c < count; c++) {
            const float *v = t->vc + (size_t)slots[c] * width + (size_t)g * hd;
            float p = sc[c];
            for (int e = 0; e < hd; e++) o[e] += p * v[e];
        }
        float inv = 1.0f / total;
        for (int e = 0; e < hd; e++) o[e] *= inv;
    }
}
