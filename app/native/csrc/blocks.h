/* What a record of each block type holds, and how a pass reads one block of 32 inputs from it.
 *
 * Every type stores unsigned weight codes q (so vpdpbusd multiplies them by signed activation bytes) and,
 * per channel and block of 32 (or half of one, for Q6_K), the float d and m of w = d q + m. A record covers
 * one panel of 16 channels and one unit of inputs; inside it, a block's codes are in the order vpdpbusd reads
 * them: group g (inputs 4g .. 4g + 3) of channel c is the 32-bit lane c of a 64-byte vector.
 *
 *   Q4_1 (unit 32, 320 bytes): nibbles[256] (byte j*64 + c*4 + i: input 4j+i low, 16+4j+i high), d[16], m[16]
 *                              as float16 (a GGUF's Q4_1 blocks, unchanged)
 *   Q8_0 (unit 32, 544 bytes): codes[512] (byte g*64 + c*4 + i: q + 128), d[16] float16; m = -128 d
 *   Q4_K (unit 256, 2368 bytes): nibbles[8][256] as Q4_1's, scale[8][16] and min[8][16] (6-bit, unpacked
 *                              from llama.cpp's 12 bytes), d[16] and dmin[16] float16: d = d sc, m = -dmin mn
 *   Q5_K (unit 256, 2880 bytes): nibbles[8][256], bit 4 of each code as masks[8][8] (uint64: bit c*4 + i of
 *                              block s's group g), scale[8][16], min[8][16], d[16], dmin[16]
 *   Q6_K (unit 256, 3360 bytes): nibbles[8][256], bits 4 and 5 as masks[8][2][8], scale[16][16] (int8, one
 *                              for each 16 inputs), d[16] float16: d = d sc, m = -32 d sc for each half
 *
 * The K records hold the file's bytes and ~3% more (scales unpacked to a byte each); blocks.py packs them. */

static int unit_of(int64_t type) { return type == Q4_K || type == Q5_K || type == Q6_K ? 256 : 32; }

static size_t record_bytes_of(int64_t type) {
    switch (type) {
    case Q4_1: return 320;
    case Q8_0: return 544;
    case Q4_K: return 2368;
    case Q5_K: return 2880;
    case Q6_K: return 3360;
    default: return 0;
    }
}

static size_t record_bytes(const QMat *w) { return record_bytes_of(w->type); }

/* Whether a block's d and m change at its middle (Q6_K's scales cover 16 inputs). */
static int halves_of(int64_t type) { return type == Q6_K; }

/* The record holding block b (of 32 inputs) of panel p, and b's index inside it. */
static const uint8_t *record_of(const QMat *w, int p, int b, int *sub) {
    int per = unit_of(w->type) / BLOCK, units = (int)(w->k / unit_of(w->type));
    *sub = b % per;
    return w->q + ((size_t)p * units + (size_t)(b / per)) * record_bytes(w);
}

static uint64_t load64(const uint8_t *at) {
    uint64_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

/* Code q of input i (0..31) of channel c in block `sub` of record `rec`. */
static int code_of(int64_t type, const uint8_t *rec, int sub, int c, int i) {
    int g = i / 4, lane = c * 4 + i % 4;
    if (type == Q8_0) return rec[g * 64 + lane];
    const uint8_t *nib = rec + (size_t)sub * 256;
    int byte = nib[(g % 4) * 64 + lane], q = g < 4 ? byte & 15 : byte >> 4;
    if (type == Q5_K) q |= (int)((load64(rec + 2048 + ((size_t)sub * 8 + g) * 8) >> lane) & 1) << 4;
    if (type == Q6_K) {
        q |= (int)((load64(rec + 2048 + (((size_t)sub * 2 + 0) * 8 + g) * 8) >> lane) & 1) << 4;
        q |= (int)((load64(rec + 2048 + (((size_t)sub * 2 + 1) * 8 + g) * 8) >> lane) & 1) << 5;
    }
    return q;
}

static float f16_at(const uint8_t *at) {
    uint16_t h;
    memcpy(&h, at, sizeof h);
    return half_to_float(h);
}

/* d and m of channel c for half `half` (0: inputs 0..15, 1: 16..31; the same for types without halves). */
static void scale_of(int64_t type, const uint8_t *rec, int sub, int c, int half, float *d, float *m) {
    switch (type) {
    case Q4_1:
        *d = f16_at(rec + 256 + 2 * c), *m = f16_at(rec + 288 + 2 * c);
        return;
    case Q8_0:
        *d = f16_at(rec + 512 + 2 * c), *m = -128.0f * *d;
        return;
    case Q4_K:
    case Q5_K: {
        size_t sc = type == Q4_K ? 2048 : 2560;
        *d = f16_at(rec + sc + 256 + 2 * c) * (float)rec[sc + (size_t)sub * 16 + c];
        *m = -(f16_at(rec + sc + 288 + 2 * c) * (float)rec[sc + 128 + (size_t)sub * 16 + c]);
        return;
    }
    default: { /* Q6_K */
        float s = (float)(int8_t)rec[3072 + ((size_t)sub * 2 + half) * 16 + c];
        *d = f16_at(rec + 3328 + 2 * c) * s;
        *m = -32.0f * *d;
        return;
    }
    }
}

#ifdef SL_AVX512
/* Block `sub` of record `rec` for 16 channels: wv[g] the codes of group g, d[h] and m[h] for each half h
 * (both halves the same for types without halves). The same float operations as scale_of, lane by lane. */
static inline __attribute__((always_inline)) void load_block(int64_t type, const uint8_t *rec, int sub,
                                                             __m512i wv[8], __m512 d[2], __m512 m[2]) {
    const __m512i low = _mm512_set1_epi8(0x0F);
    if (type == Q8_0) {
        for (int j = 0; j < 8; j++) wv[j] = _mm512_loadu_si512((const __m512i *)rec + j);
        d[0] = d[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 512)));
        m[0] = m[1] = _mm512_mul_ps(d[0], _mm512_set1_ps(-128.0f));
        return;
    }
    const __m512i *nib = (const __m512i *)(rec + (size_t)sub * 256);
    for (int j = 0; j < 4; j++) {
        __m512i raw = _mm512_loadu_si512(nib + j);
        wv[j] = _mm512_and_si512(raw, low);
        wv[j + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
    }
    if (type == Q4_1) {
        d[0] = d[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 256)));
        m[0] = m[1] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 288)));
        return;
    }
    if (type == Q5_K) {
        const __m512i bit4 = _mm512_set1_epi8(16);
        for (int g = 0; g < 8; g++)
            wv[g] = _mm512_or_si512(wv[g], _mm512_maskz_mov_epi8(load64(rec + 2048 + ((size_t)sub * 8 + g) * 8), bit4));
    }
    if (type == Q4_K || type == Q5_K) {
        size_t sc = type == Q4_K ? 2048 : 2560;
        __m512 dd = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + sc + 256)));
        __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + sc + 288)));
        __m512 s = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(rec + sc + (size_t)sub * 16))));
        __m512 n = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(rec + sc + 128 + (size_t)sub * 16))));
        d[0] = d[1] = _mm512_mul_ps(dd, s);
        m[0] = m[1] = _mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(dm, n));
        return;
    }
    /* Q6_K */
    const __m512i bit4 = _mm512_set1_epi8(16), bit5 = _mm512_set1_epi8(32);
    for (int g = 0; g < 8; g++) {
        __mmask64 lo = load64(rec + 2048 + (((size_t)sub * 2 + 0) * 8 + g) * 8);
        __mmask64 hi = load64(rec + 2048 + (((size_t)sub * 2 + 1) * 8 + g) * 8);
        wv[g] = _mm512_or_si512(wv[g], _mm512_or_si512(_mm512_maskz_mov_epi8(lo, bit4), _mm512_maskz_mov_epi8(hi, bit5)));
    }
    __m512 dd = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 3328)));
    for (int h = 0; h < 2; h++) {
        __m512 s = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(rec + 3072 + ((size_t)sub * 2 + h) * 16))));
        d[h] = _mm512_mul_ps(dd, s);
        m[h] = _mm512_mul_ps(d[h], _mm512_set1_ps(-32.0f));
    }
}
#endif
