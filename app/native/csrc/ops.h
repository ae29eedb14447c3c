/* Per-row float work of the pass: the embedding row, RMSNorm, rotary, a dot product. */

/* Row `token` of a quantized matrix, as floats (the input embedding), each value computed as the gguf
 * package and llama.cpp compute it: d (q - 128) for Q8_0, d sc (q - 32) for Q6_K, d (q - 8) for Q4_0,
 * d (q - 16) for Q5_0, d q + m for the rest. So a native model's float rows are bit for bit transformers'
 * dequantised ones (a trained draft's fingerprint). */
static void dequantize_row(const QMat *w, int64_t token, float *out) {
    int kb = (int)(w->k / BLOCK), p = (int)(token / PANEL), c = (int)(token % PANEL);
    int offset = w->type == Q8_0 ? 128 : w->type == Q6_K ? 32 : w->type == Q4_0 ? 8 : w->type == Q5_0 ? 16 : 0;
    for (int b = 0; b < kb; b++) {
        int sub;
        const uint8_t *rec = record_of(w, p, b, &sub);
        for (int i = 0; i < BLOCK; i++) {
            float d, m;
            scale_of(w->type, rec, sub, c, i / 16, &d, &m);
            int q = code_of(w->type, rec, sub, c, i);
            out[b * BLOCK + i] = offset ? d * (float)(q - offset) : d * (float)q + m;
        }
    }
}

static void rms_norm(const float *x, const float *weight, int h, float eps, float *out) {
    float lanes[16] = {0};
    for (int i = 0; i < h; i += 16)
        for (int j = 0; j < 16 && i + j < h; j++) lanes[j] += x[i + j] * x[i + j];
    float ss = 0.0f;
    for (int j = 0; j < 16; j++) ss += lanes[j];
    float inv = 1.0f / sqrtf(ss / (float)h + eps);
    for (int i = 0; i < h; i++) out[i] = weight[i] * (x[i] * inv);
}

/* rotate_half rotary, as transformers' Llama: (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin) */
static void rope(float *v, const float *cos, const float *sin, int half) {
    for (int i = 0; i < half; i++) {
        float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * cos[i] - x2 * sin[i];
        v[i + half] = x2 * cos[i] + x1 * sin[i];
    }
}

static float dot(const float *a, const float *b, int n) {
    float lanes[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) lanes[j] += a[i + j] * b[i + j];
    for (int j = 0; i < n; i++, j++) lanes[j] += a[i] * b[i];
    float s = 0.0f;
    for (int j = 0; j < 16; j++) s += lanes[j];
    return s;
}

