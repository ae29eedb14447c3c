/* AVX-512 form of attention.h's reference: attend_heads_avx512 (its own sum order, the same on every row). */

#define MAX_HD_VECS 8 /* head_dim up to 128 in registers */
/* Sixteen horizontal sums at once: lane c of the result is the sum of v[c]'s lanes, added in the order
 * _mm512_reduce_add_ps adds one vector's (lane i with i + 8, then i + 4, then i + 2, then i + 1). */
static inline __m512 hsum16(const __m512 *v) {
    __m512 a[8], b[4], c[2];
    for (int j = 0; j < 8; j++)
        a[j] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0xEE),
                             _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], 0x44));
    for (int j = 0; j < 4; j++) /* quarter q of b[j]: v[4j + q] */
        b[j] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * j], a[2 * j + 1], 0xDD),
                             _mm512_shuffle_f32x4(a[2 * j], a[2 * j + 1], 0x88));
    for (int j = 0; j < 2; j++)
        c[j] = _mm512_add_ps(_mm512_shuffle_ps(b[2 * j], b[2 * j + 1], 0xEE),
                             _mm512_shuffle_ps(b[2 * j], b[2 * j + 1], 0x44));
    __m512 d = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xDD));
    /* lane 4q + j of d holds v[q + 4j] */
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(order, d);
}

/* attend_heads_ref in sixteen lanes, for head_dim a multiple of 16 up to 128: each slot's key and value read once
 * for the whole group, scores exponentiated sixteen at a time. Profiled at 9 rows after ~100 tokens, the
 * scalar form took 24% of the pass against the matmuls' 31%. Same order on every row, so rows stay
 * independent of their pass. */
static void attend_heads_avx512(const AttentionTask *t, int i, int g, float *scores, const int *slots, int count) {
    const Model *md = t->md;
    int hd = md->head_dim, group = md->heads / md->kv_heads, width = md->kv_heads * hd, nv = hd / 16;
    if (hd % 16 || hd > 16 * MAX_HD_VECS) { /* head dims the vectors do not take: the reference, by name */
        attend_heads_ref(t, i, g, scores, slots, count);
        return;
    }
    int qw = (md->heads + 2 * md->kv_heads) * hd;
    const float *q0 = t->qkv + (size_t)i * qw + (size_t)g * group * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    float top[MAX_GROUP];
    /* Scores sixteen slots at a time: each slot's products summed over head_dim in one vector, then the
     * sixteen vectors reduced together (hsum16: the lane order of _mm512_reduce_add_ps, so each score has
     * the bits a one-slot reduction gives, in a fifth of the instructions). */
    for (int h = 0; h < group; h++) {
        const float *q = q0 + (size_t)h * hd;
        __m512 qv[MAX_HD_VECS];
        for (int j = 0; j < nv; j++) qv[j] = _mm512_loadu_ps(q + 16 * j);
        __m512 best = _mm512_set1_ps(-INFINITY);
        for (int c0 = 0; c0 < count; c0 += 16) {
            int nc = count - c0 < 16 ? count - c0 : 16;
            __m512 v[16];
            for (int c = 0; c < 16; c++) {
                if (c >= nc) {
                    v[c] = _mm512_setzero_ps();
                    continue;
                }
                const float *k = t->kc + (size_t)slots[c0 + c] * width + (size_t)g * hd;
                __m512 acc = _mm512_mul_ps(qv[0], _mm512_loadu_ps(k));
                for (int j = 1; j < nv; j++) acc = _mm512_fmadd_ps(qv[j], _mm512_loadu_ps(k + 16 * j), acc);
                v[c] = acc;
            }
            __mmask16 live = (__mmask16)(nc == 16 ? 0xFFFF : (1u << nc) - 1);
            __m512 sc = _mm512_mul_ps(hsum16(v), _mm512_set1_ps(scale));
            _mm512_mask_storeu_ps(scores + (size_t)h * count + c0, live, sc);
            best = _mm512_mask_max_ps(best, live, sc, best); /* a NaN score is passed over, as fmaxf does */
        }
        top[h] = _mm512_reduce_max_ps(best);
    }
    float inv[MAX_GROUP];
    for (int h = 0; h < group; h++) {
        float *sc = scores + (size_t)h * count;
        __m512 m = _mm512_set1_ps(top[h]), sum = _mm512_setzero_ps();
        int c = 0;
        for (; c + 16 <= count; c += 16) {
            __m512 e = exp_avx512(_mm512_sub_ps(_mm512_loadu_ps(sc + c), m));
            _mm512_storeu_ps(sc + c, e);
            sum = _mm512_add_ps(sum, e);
        }
        if (c < count) {
            __mmask16 tail = (__mmask16)((1u << (count - c)) - 1);
            __m512 e = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, sc + c), m));
            _mm512_mask_storeu_ps(sc + c, tail, e);
            sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(tail, e));
        }
        inv[h] = 1.0f / _mm512_reduce_add_ps(sum);
    }
    float *out = t->out + (size_t)i * md->heads * hd + (size_t)g * group * hd;
    for (int h = 0; h < group; h++) {
        const float *sc = scores + (size_t)h * count;
        __m512 o[MAX_HD_VECS];
        for (int j = 0; j < nv; j++) o[j] = _mm512_setzero_ps();
        for (int c = 0; c < count; c++) {
            const float *v = t->vc + (size_t)slots[c] * width + (size_t)g * hd;
            __m512 p = _mm512_set1_ps(sc[c]);
            for (int j = 0; j < nv; j++) o[j] = _mm512_fmadd_ps(p, _mm512_loadu_ps(v + 16 * j), o[j]);
        }
        __m512 vi = _mm512_set1_ps(inv[h]);
        for (int j = 0; j < nv; j++) _mm512_storeu_ps(out + (size_t)h * hd + 16 * j, _mm512_mul_ps(o[j], vi));
    }
}
