/* A row of activations as int8 digits, and the float work between the matmuls (silu). */

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

static void quantize_row_c(const float *x, int k, XBlock *out) {
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


#ifdef SL_AVX512
/* The same digits as quantize_row_c, sixteen lanes at a time (per-row work is serial between the
 * parallel matmuls, so at 9-17 rows its scalar form cost as much as the matmuls it feeds). */
static void quantize_row(const float *x, int k, XBlock *out) {
    const __m512 sign = _mm512_set1_ps(-0.0f), lim = _mm512_set1_ps(127.0f);
    for (int b = 0; b < k / BLOCK; b++) {
        const float *v = x + b * BLOCK;
        XBlock *o = out + b;
        __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
        if (amax == 0.0f || !isfinite(amax)) {
            quantize_row_c(v, BLOCK, o); /* zeros, or a NaN/inf kept visible, as the scalar form does */
            continue;
        }
        float step = amax / 127.0f, inv = 127.0f / amax;
        __m512 vs = _mm512_set1_ps(step), vi = _mm512_set1_ps(inv);
        int32_t total[2], total1[2];
        for (int half = 0; half < 2; half++) {
            __m512 w = half ? v1 : v0;
            __m512 a1 = _mm512_roundscale_ps(_mm512_mul_ps(w, vi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            a1 = _mm512_max_ps(_mm512_min_ps(a1, lim), _mm512_sub_ps(_mm512_setzero_ps(), lim));
            __m512 rest = _mm512_sub_ps(w, _mm512_mul_ps(a1, vs));
            __m512 a2 = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_mul_ps(rest, vi), _mm512_set1_ps(256.0f)),
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            a2 = _mm512_max_ps(_mm512_min_ps(a2, lim), _mm512_sub_ps(_mm512_setzero_ps(), lim));
            __m512i i1 = _mm512_cvtps_epi32(a1), i2 = _mm512_cvtps_epi32(a2);
            _mm_storeu_si128((__m128i *)(o->a1 + 16 * half), _mm512_cvtepi32_epi8(i1));
            _mm_storeu_si128((__m128i *)(o->a2 + 16 * half), _mm512_cvtepi32_epi8(i2));
            total[half] = _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(i1, 8), i2));
            total1[half] = _mm512_reduce_add_epi32(i1);
        }
        set_sums(o, step, total, total1);
    }
}

/* exp on sixteen lanes: n = round(x log2 e), r = x - n ln 2 in two parts, Cephes' degree-6 polynomial,
 * scaled by 2^n (about 1 ulp; the same function on every row, so rows stay independent of their pass). */
static inline __m512 exp_ps(__m512 x) {
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.3762626647949f)), _mm512_set1_ps(-88.3762626647949f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(y, n);
}

/* act = silu(gate) * up over f values (f a multiple of 16, as every block-quantized width is) */
static void silu_mul(const float *gate, const float *up, int f, float *act) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int i = 0; i < f; i += 16) {
        __m512 g = _mm512_loadu_ps(gate + i);
        __m512 e = exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g));
        _mm512_storeu_ps(act + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
    }
}
#else
static void quantize_row(const float *x, int k, XBlock *out) { quantize_row_c(x, k, out); }

static void silu_mul(const float *gate, const float *up, int f, float *act) {
    for (int i = 0; i < f; i++) act[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}
#endif

