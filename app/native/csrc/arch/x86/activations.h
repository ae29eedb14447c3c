/* AVX-512 forms of activations.h: exp on sixteen lanes, silu_mul_avx512. */

/* exp on sixteen lanes: n = round(x log2 e), r = x - n ln 2 in two parts, Cephes' degree-6 polynomial,
 * scaled by 2^n (about 1 ulp; the same function on every row, so rows stay independent of their pass). */
static inline __m512 exp_avx512(__m512 x) {
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
static void silu_mul_avx512(const float *gate, const float *up, int f, float *act) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int i = 0; i < f; i += 16) {
        __m512 g = _mm512_loadu_ps(gate + i);
        __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), g));
        _mm512_storeu_ps(act + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
    }
}
