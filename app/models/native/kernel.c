/* SpecLens's native decode step for Llama-family models on a CPU: the whole forward pass of n rows
 * (a decode step, a verify pass, a token tree, a prefill) in one call, on weights in 4-bit (Q4_1) or
 * 8-bit (Q8_0) blocks of 32, read once for every row of the pass.
 *
 * Why one C call: a torch step is ~1,900 ATen calls whose per-call overhead is as large as the work, and
 * bf16 weights are 3.5x the bytes of Q4_1. Why this arithmetic: every row's output must be the same
 * whatever rows share its pass, so greedy speculation equals the same engine's target-only greedy. Each
 * row's sums run in one fixed order (blocks in order, keys in slot order), threads split output channels
 * and (row, head) pairs, never a sum; so a row is bit-identical for 1 or 17 rows and any thread count.
 *
 * Weights: panels of 16 output channels x blocks of 32 inputs, each block's bytes in the order
 * vpdpbusd reads them (4 consecutive inputs of one channel per 32-bit lane). Q4_1 keeps the GGUF's
 * nibbles (w = d*q + m, q in 0..15); Q8_0 stores q + 128 as an unsigned byte (w = d*(u - 128), so
 * m = -128 d). Both are unsigned bytes times signed activation bytes, the one form vpdpbusd takes.
 * Activations: per row and block of 32, two int8 digits (x ~ S * (256 a1 + a2), S = amax/127/256),
 * about 16 bits, so the activation's rounding is far below the weights' (quality: docs/native-kernels.md).
 * The integer dot is exact; the block's float update is cvt, mul, fma, fma, identical on every path.
 *
 * Built three times by setup.py (AVX-512 VNNI, AVX2, generic); app/models/native picks the best one
 * whose cpu_ok() is true. No Python object is touched while the GIL is released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define SL_AVX512 1
#endif

#ifndef SL_MODULE
#define SL_MODULE _kernel_generic
#endif
#define SL_STR2(x) #x
#define SL_STR(x) SL_STR2(x)
#define SL_CAT2(a, b) a##b
#define SL_CAT(a, b) SL_CAT2(a, b)

#define PANEL 16
#define BLOCK 32
#define MAX_TILE 8
#define MAX_THREADS 64
#define MAX_GROUP 16

enum { Q4_1 = 1, Q8_0 = 2 };

/* A weight matrix: n output channels (a multiple of 16) x k inputs (a multiple of 32), one record per
 * panel and block, in the order the pass reads them (one stream from memory): the 16 channels' bytes
 * (Q4_1: 256, nibbles; Q8_0: 512), then their 16 d as float16, then (Q4_1 only) their 16 m. */
typedef struct {
    int64_t type, n, k;
    const uint8_t *q; /* [n/16][k/32][record] */
} QMat;

/* One row's block of 32 activations as two int8 digits. */
typedef struct {
    int8_t a1[BLOCK];
    int8_t a2[BLOCK];
    float s;   /* S: x ~ S * (256 a1 + a2) */
    float sa;  /* S * sum(256 a1 + a2): the block's part of m's term */
} XBlock;

static size_t quant_bytes(const QMat *w) { return w->type == Q4_1 ? 256 : 512; }
static size_t record_bytes(const QMat *w) { return w->type == Q4_1 ? 320 : 544; }

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    if (exp == 0) {
        if (man == 0) bits = sign;
        else { /* subnormal: normalise */
            int e = -1;
            do { man <<= 1; e++; } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3FF) << 13);
        }
    } else if (exp == 31) bits = sign | 0x7F800000 | (man << 13);
    else bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* channel c's d and m in a record (Q8_0: m = -128 d, exact) */
static void scales(const QMat *w, const uint8_t *rec, int c, float *d, float *m) {
    const uint16_t *h = (const uint16_t *)(rec + quant_bytes(w));
    *d = half_to_float(h[c]);
    *m = w->type == Q4_1 ? half_to_float(h[PANEL + c]) : -128.0f * *d;
}

/* ---------------------------------------------------------------- thread pool ------------------------ */

typedef void (*task_fn)(void *ctx, int ith, int nth);

static struct {
    pthread_t threads[MAX_THREADS];
    int started;
    atomic_int generation;
    atomic_int gate; /* workers that joined this generation's task, and CLOSED once the caller takes no more */
    atomic_int done; /* joined workers that finished it */
    atomic_int sleepers;
    atomic_int rest; /* set when a Python call returns: workers sleep at once instead of spinning */
    task_fn fn;
    void *ctx;
    int nth;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_mutex_t run_lock; /* one pass at a time: two Python threads may call in */
    int start_generation[MAX_THREADS]; /* the generation a worker was made in: its first task is the next */
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
          .run_lock = PTHREAD_MUTEX_INITIALIZER};

#define SPINS 20000 /* ~0.2-1 ms of pause before a worker sleeps: a pass's regions are microseconds apart */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#define CLOSED (1 << 30)

/* The task's next unclaimed chunk (claim), on a cache line of its own: the
 * workers spin on the pool's line, and a claim's write there would pull it from under them. */
static _Alignas(64) struct {
    atomic_int next;
    char pad[64 - sizeof(atomic_int)];
} chunks;

/* A worker takes part in the current task only while its gate is open. One that the scheduler kept off
 * its core (the window painting, another program, a busy host) finds it closed and the work done: the
 * caller never waits for a thread that has not started, only for the items joined threads hold. */
static int join(void) {
    int seen = atomic_load(&pool.gate);
    while (!(seen & CLOSED))
        if (atomic_compare_exchange_weak(&pool.gate, &seen, seen + 1)) return 1;
    return 0;
}

static void *worker(void *arg) {
    int ith = (int)(intptr_t)arg;
    int seen = pool.start_generation[ith]; /* not the current one: the first task may already be out */
    for (;;) {
        int spins = 0;
        while (atomic_load(&pool.generation) == seen) {
            if (++spins < SPINS && !atomic_load_explicit(&pool.rest, memory_order_relaxed)) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&pool.lock);
            atomic_fetch_add(&pool.sleepers, 1);
            while (atomic_load(&pool.generation) == seen) pthread_cond_wait(&pool.wake, &pool.lock);
            atomic_fetch_sub(&pool.sleepers, 1);
            pthread_mutex_unlock(&pool.lock);
        }
        seen = atomic_load(&pool.generation);
        if (!join()) continue; /* late: the caller did this task's work itself */
        if (ith < pool.nth) pool.fn(pool.ctx, ith, pool.nth);
        atomic_fetch_add(&pool.done, 1);
    }
    return NULL;
}

static int ensure_workers(int nth) {
    while (pool.started < nth - 1 && pool.started < MAX_THREADS - 1) {
        pool.start_generation[pool.started + 1] = atomic_load(&pool.generation);
        if (pthread_create(&pool.threads[pool.started], NULL, worker, (void *)(intptr_t)(pool.started + 1)) != 0)
            return pool.started + 1;
        pthread_detach(pool.threads[pool.started]);
        pool.started++;
    }
    return nth < pool.started + 1 ? nth : pool.started + 1;
}

/* Run a task on up to nth threads: the caller calls fn(ctx, 0, nth), each worker that joins in time
 * fn(ctx, ith, nth) (ith: its own scratch); fn claims the task's items (claim). Returns when every item is
 * done, without waiting for a worker that did not join. */
static void parallel(task_fn fn, void *ctx, int nth) {
    atomic_store(&chunks.next, 0);
    if (nth <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    pool.nth = nth;
    atomic_store(&pool.done, 0);
    atomic_store(&pool.gate, 0); /* after fn, ctx, next and done: a worker that joins sees this task whole */
    atomic_store(&pool.rest, 0);
    atomic_fetch_add(&pool.generation, 1);
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.lock);
    }
    fn(ctx, 0, nth);
    int joined = atomic_fetch_or(&pool.gate, CLOSED); /* no item is left: no one else may join */
    while (atomic_load(&pool.done) < joined) cpu_relax();
}

/* A Python call is over: workers still spinning sleep now. Spinning pays between a pass's regions, which
 * are microseconds apart; between calls it takes a core from the round's torch work (on 2 cores, 8-14% a
 * token while the host was busy; no cost when quiet: docs/benchmark.md). The next parallel() wakes them. */
static void settle(void) { atomic_store(&pool.rest, 1); }

/* A task's items in chunks, each claimed by whichever thread asks next: not shared out in fixed parts, so
 * a thread the scheduler delays holds one chunk, not half the task, and one that never joins holds none.
 * Each item is computed whole by one thread, so the results do not depend on who claims what. */
typedef struct {
    int count, size; /* items, items a chunk */
} Chunks;

static Chunks chunked(int count, int nth) {
    int size = count / (4 * nth); /* about four chunks a thread: a delayed thread's last one is short */
    return (Chunks){count, size > 0 ? size : 1};
}

/* The next chunk's items [lo, hi); 0 when none is left. */
static int claim(const Chunks *c, int *lo, int *hi) {
    int64_t start = (int64_t)atomic_fetch_add_explicit(&chunks.next, 1, memory_order_relaxed) * c->size;
    if (start >= c->count) return 0;
    *lo = (int)start;
    *hi = c->count - start < c->size ? c->count : (int)start + c->size;
    return 1;
}

/* ---------------------------------------------------------------- activations ------------------------ */

static void quantize_row_c(const float *x, int k, XBlock *out) {
    for (int b = 0; b < k / BLOCK; b++) {
        const float *v = x + b * BLOCK;
        XBlock *o = out + b;
        float amax = 0.0f;
        for (int i = 0; i < BLOCK; i++) amax = fmaxf(amax, fabsf(v[i]));
        if (amax == 0.0f || !isfinite(amax)) {
            memset(o, 0, sizeof *o);
            if (!isfinite(amax)) o->s = amax; /* poisons the row's output: a NaN stays visible */
            continue;
        }
        float step = amax / 127.0f, inv = 127.0f / amax;
        int32_t total = 0;
        for (int i = 0; i < BLOCK; i++) {
            int a1 = (int)nearbyintf(v[i] * inv);
            a1 = a1 > 127 ? 127 : a1 < -127 ? -127 : a1;
            float rest = v[i] - (float)a1 * step;
            int a2 = (int)nearbyintf(rest * inv * 256.0f);
            a2 = a2 > 127 ? 127 : a2 < -127 ? -127 : a2;
            o->a1[i] = (int8_t)a1;
            o->a2[i] = (int8_t)a2;
            total += 256 * a1 + a2;
        }
        o->s = step / 256.0f;
        o->sa = o->s * (float)total;
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
        __m512i total = _mm512_setzero_si512();
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
            total = _mm512_add_epi32(total, _mm512_add_epi32(_mm512_slli_epi32(i1, 8), i2));
        }
        o->s = step / 256.0f;
        o->sa = o->s * (float)_mm512_reduce_add_epi32(total);
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

/* ---------------------------------------------------------------- matmul ------------------------------ */

#ifdef SL_AVX512
/* acc + w (unsigned bytes) . the four signed bytes at a, broadcast: vpdpbusd with its memory operand
 * broadcast, written out because compilers otherwise hoist every broadcast into a register of its own
 * (a tile's 16 R of them spill). */
static inline __attribute__((always_inline)) __m512i dpbusd_bcast(__m512i acc, __m512i w, const int32_t *a) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*a));
    return acc;
}

/* One panel's 16 channels for R rows (R <= MAX_TILE), every block's weights loaded (and Q4_1's nibbles
 * unpacked) once for the R rows. The float update per row and block (cvt, mul, fma, fma) and the integer
 * dot are the same whatever R is, so a row's bits never depend on its tile. */
static inline __attribute__((always_inline)) void panel_tile(const QMat *w, int p, const XBlock *x, int r0,
                                                             int rows, float *out, int ldo, const int R) {
    const int kb = (int)(w->k / BLOCK);
    const size_t rb = record_bytes(w);
    __m512 acc[MAX_TILE];
    for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
    const __m512i low = _mm512_set1_epi8(0x0F);
    /* The first tile asks for the next panel's bytes a panel ahead: the later tiles (and the float work)
     * then run while they arrive, so a multi-row pass streams its weights under its arithmetic. */
    const int ahead = r0 == 0 && (int64_t)(p + 1) * PANEL < w->n;
    const uint8_t *base = w->q + (size_t)p * kb * rb;
    for (int b = 0; b < kb; b++) {
        const uint8_t *rec = base + (size_t)b * rb;
        if (ahead) {
            const uint8_t *next = rec + (size_t)kb * rb;
            for (size_t o = 0; o < rb; o += 64) _mm_prefetch((const char *)(next + o), _MM_HINT_T0);
            _mm_prefetch((const char *)(next + rb - 1), _MM_HINT_T0);
        }
        __m512i wv[8];
        __m512 d, m;
        if (w->type == Q4_1) {
            const __m512i *src = (const __m512i *)rec;
            for (int j = 0; j < 4; j++) {
                __m512i raw = _mm512_loadu_si512(src + j);
                wv[j] = _mm512_and_si512(raw, low);
                wv[j + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
            }
            d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 256)));
            m = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 288)));
        } else {
            const __m512i *src = (const __m512i *)rec;
            for (int j = 0; j < 8; j++) wv[j] = _mm512_loadu_si512(src + j);
            d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(rec + 512)));
            m = _mm512_mul_ps(d, _mm512_set1_ps(-128.0f));
        }
        if (R == 1) {
            const XBlock *xb = x + (size_t)r0 * kb + b;
            const int32_t *a1 = (const int32_t *)xb->a1, *a2 = (const int32_t *)xb->a2;
            /* Four chains a digit: one chain of 8 dependent vpdpbusd waits on their latency (~5 cycles
             * each). Integer sums, so any grouping gives the same bits. */
            __m512i h0 = _mm512_setzero_si512(), h1 = h0, l0 = h0, l1 = h0;
            for (int g = 0; g < 8; g += 2) {
                h0 = _mm512_dpbusd_epi32(h0, wv[g], _mm512_set1_epi32(a1[g]));
                l0 = _mm512_dpbusd_epi32(l0, wv[g], _mm512_set1_epi32(a2[g]));
                h1 = _mm512_dpbusd_epi32(h1, wv[g + 1], _mm512_set1_epi32(a1[g + 1]));
                l1 = _mm512_dpbusd_epi32(l1, wv[g + 1], _mm512_set1_epi32(a2[g + 1]));
            }
            __m512i hi = _mm512_add_epi32(h0, h1), lo = _mm512_add_epi32(l0, l1);
            __m512i dot = _mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo);
            __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(xb->s));
            acc[0] = _mm512_fmadd_ps(d, f, acc[0]);
            acc[0] = _mm512_fmadd_ps(m, _mm512_set1_ps(xb->sa), acc[0]);
        } else {
            /* Two chains a row (one a digit), the R rows' 2R chains interleaved: enough independent
             * vpdpbusd in flight for the unit's rate, with no partial sums to merge. */
            __m512i hs[MAX_TILE], ls[MAX_TILE];
            for (int r = 0; r < R; r++) hs[r] = ls[r] = _mm512_setzero_si512();
            for (int g = 0; g < 8; g++)
                for (int r = 0; r < R; r++) {
                    const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                    hs[r] = dpbusd_bcast(hs[r], wv[g], (const int32_t *)xb->a1 + g);
                    ls[r] = dpbusd_bcast(ls[r], wv[g], (const int32_t *)xb->a2 + g);
                }
            for (int r = 0; r < R; r++) {
                const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
                __m512i dot = _mm512_add_epi32(_mm512_slli_epi32(hs[r], 8), ls[r]);
                __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(dot), _mm512_set1_ps(xb->s));
                acc[r] = _mm512_fmadd_ps(d, f, acc[r]);
                acc[r] = _mm512_fmadd_ps(m, _mm512_set1_ps(xb->sa), acc[r]);
            }
        }
    }
    for (int r = 0; r < R; r++) _mm512_storeu_ps(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL, acc[r]);
    (void)rows;
}
#else
static inline void panel_tile(const QMat *w, int p, const XBlock *x, int r0, int rows, float *out, int ldo,
                              const int R) {
    const int kb = (int)(w->k / BLOCK);
    float acc[MAX_TILE][PANEL];
    memset(acc, 0, sizeof acc);
    for (int b = 0; b < kb; b++) {
        const uint8_t *q = w->q + ((size_t)p * kb + b) * record_bytes(w);
        float d[PANEL], m[PANEL];
        uint8_t wb[PANEL][BLOCK]; /* channel c's 32 weights, unpacked */
        for (int c = 0; c < PANEL; c++) scales(w, q, c, &d[c], &m[c]);
        for (int c = 0; c < PANEL; c++)
            for (int k = 0; k < BLOCK; k++) {
                if (w->type == Q4_1) {
                    int j = (k % 16) / 4, byte = q[j * 64 + c * 4 + k % 4];
                    wb[c][k] = (uint8_t)(k < 16 ? byte & 15 : byte >> 4);
                } else {
                    wb[c][k] = q[(k / 4) * 64 + c * 4 + k % 4];
                }
            }
        for (int r = 0; r < R; r++) {
            const XBlock *xb = x + (size_t)(r0 + r) * kb + b;
            for (int c = 0; c < PANEL; c++) {
                int32_t hi = 0, lo = 0;
                for (int k = 0; k < BLOCK; k++) {
                    hi += (int32_t)wb[c][k] * xb->a1[k];
                    lo += (int32_t)wb[c][k] * xb->a2[k];
                }
                float f = (float)(hi * 256 + lo) * xb->s;
                acc[r][c] = fmaf(d[c], f, acc[r][c]);
                acc[r][c] = fmaf(m[c], xb->sa, acc[r][c]);
            }
        }
    }
    for (int r = 0; r < R; r++) memcpy(out + (size_t)(r0 + r) * ldo + (size_t)p * PANEL, acc[r], sizeof acc[r]);
    (void)rows;
}
#endif

#ifdef SL_AVX512
#define TILE_ROWS 6 /* 2 chains a row + an accumulator + 8 weight vectors: 29 of the 32 registers */
#else
#define TILE_ROWS MAX_TILE
#endif

static void panel_rows(const QMat *w, int p, const XBlock *x, int rows, float *out, int ldo) {
    int tiles = (rows + TILE_ROWS - 1) / TILE_ROWS;
    for (int t = 0; t < tiles; t++) {
        int r0 = rows * t / tiles, r1 = rows * (t + 1) / tiles;
        switch (r1 - r0) { /* a constant tile height, so the accumulators stay in registers */
        case 1: panel_tile(w, p, x, r0, rows, out, ldo, 1); break;
        case 2: panel_tile(w, p, x, r0, rows, out, ldo, 2); break;
        case 3: panel_tile(w, p, x, r0, rows, out, ldo, 3); break;
        case 4: panel_tile(w, p, x, r0, rows, out, ldo, 4); break;
        case 5: panel_tile(w, p, x, r0, rows, out, ldo, 5); break;
        case 6: panel_tile(w, p, x, r0, rows, out, ldo, 6); break;
        case 7: panel_tile(w, p, x, r0, rows, out, ldo, 7); break;
        default: panel_tile(w, p, x, r0, rows, out, ldo, 8); break;
        }
    }
}

typedef struct {
    const QMat *w;
    const XBlock *x;
    int rows;
    float *out;
    int ldo;
} MatmulTask;

static void matmul_task(void *ctx, int ith, int nth) {
    MatmulTask *t = ctx;
    int lo, hi;
    Chunks c = chunked((int)(t->w->n / PANEL), nth);
    while (claim(&c, &lo, &hi))
        for (int p = lo; p < hi; p++) panel_rows(t->w, p, t->x, t->rows, t->out, t->ldo);
}

/* out [rows, w->n] = x [rows, w->k] @ w^T, x already quantized */
static void matmul(const QMat *w, const XBlock *x, int rows, float *out, int nth) {
    MatmulTask t = {w, x, rows, out, (int)w->n};
    int panels = (int)(w->n / PANEL);
    parallel(matmul_task, &t, nth < panels ? nth : panels);
}

/* ---------------------------------------------------------------- the model -------------------------- */

enum {
    M_LAYERS, M_HIDDEN, M_HEADS, M_KV_HEADS, M_HEAD_DIM, M_FFN, M_VOCAB, M_EPS, M_COS, M_SIN, M_MAX_POS,
    M_EMBED, M_NORM, M_HEAD, M_META = 16, LAYER_FIELDS = 8
};
enum { L_ATTN_NORM, L_QKV, L_QKV_BIAS, L_O, L_FFN_NORM, L_GATE_UP, L_DOWN };

typedef struct {
    int layers, hidden, heads, kv_heads, head_dim, ffn, vocab, max_pos;
    float eps;
    const float *cos, *sin; /* [max_pos, head_dim / 2] */
    const QMat *embed, *head;
    const float *norm;
    const int64_t *layer; /* LAYER_FIELDS per layer */
} Model;

static Model model_of(const int64_t *meta) {
    Model md;
    md.layers = (int)meta[M_LAYERS];
    md.hidden = (int)meta[M_HIDDEN];
    md.heads = (int)meta[M_HEADS];
    md.kv_heads = (int)meta[M_KV_HEADS];
    md.head_dim = (int)meta[M_HEAD_DIM];
    md.ffn = (int)meta[M_FFN];
    md.vocab = (int)meta[M_VOCAB];
    double eps;
    memcpy(&eps, &meta[M_EPS], sizeof eps);
    md.eps = (float)eps;
    md.cos = (const float *)(intptr_t)meta[M_COS];
    md.sin = (const float *)(intptr_t)meta[M_SIN];
    md.max_pos = (int)meta[M_MAX_POS];
    md.embed = (const QMat *)(intptr_t)meta[M_EMBED];
    md.norm = (const float *)(intptr_t)meta[M_NORM];
    md.head = (const QMat *)(intptr_t)meta[M_HEAD];
    md.layer = meta + M_META;
    return md;
}

static const QMat *layer_mat(const Model *md, int l, int field) {
    return (const QMat *)(intptr_t)md->layer[l * LAYER_FIELDS + field];
}

static const float *layer_vec(const Model *md, int l, int field) {
    return (const float *)(intptr_t)md->layer[l * LAYER_FIELDS + field];
}

/* Row `token` of a quantized matrix, as floats (the input embedding). */
static void dequantize_row(const QMat *w, int64_t token, float *out) {
    int kb = (int)(w->k / BLOCK);
    int64_t p = token / PANEL;
    int c = (int)(token % PANEL);
    for (int b = 0; b < kb; b++) {
        const uint8_t *q = w->q + ((size_t)p * kb + b) * record_bytes(w);
        float d, m;
        scales(w, q, c, &d, &m);
        for (int k = 0; k < BLOCK; k++) {
            if (w->type == Q4_1) {
                int byte = q[((k % 16) / 4) * 64 + c * 4 + k % 4];
                out[b * BLOCK + k] = d * (float)(k < 16 ? byte & 15 : byte >> 4) + m;
            } else {
                out[b * BLOCK + k] = d * (float)((int)q[(k / 4) * 64 + c * 4 + k % 4] - 128);
            }
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
static void attend_c(const AttentionTask *t, int i, int g, float *scores, const int *slots, int count) {
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

#ifdef SL_AVX512
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

/* attend_c in sixteen lanes, for head_dim a multiple of 16 up to 128: each slot's key and value read once
 * for the whole group, scores exponentiated sixteen at a time. Profiled at 9 rows after ~100 tokens, the
 * scalar form took 24% of the pass against the matmuls' 31%. Same order on every row, so rows stay
 * independent of their pass. */
static void attend_v(const AttentionTask *t, int i, int g, float *scores, const int *slots, int count) {
    const Model *md = t->md;
    int hd = md->head_dim, group = md->heads / md->kv_heads, width = md->kv_heads * hd, nv = hd / 16;
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
            __m512 e = exp_ps(_mm512_sub_ps(_mm512_loadu_ps(sc + c), m));
            _mm512_storeu_ps(sc + c, e);
            sum = _mm512_add_ps(sum, e);
        }
        if (c < count) {
            __mmask16 tail = (__mmask16)((1u << (count - c)) - 1);
            __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, sc + c), m));
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
#endif

static void attend(const AttentionTask *t, int i, int g, float *scores, int *slots) {
    int count = 0, from = t->visible ? t->masked_from : t->held, width_seen = t->held - from + t->n;
    for (int s = 0; s < from; s++) slots[count++] = s;
    for (int s = from; s < t->held + t->n; s++)
        if (t->visible ? t->visible[(size_t)i * width_seen + (s - from)] : s - t->held <= i) slots[count++] = s;
#ifdef SL_AVX512
    int hd = t->md->head_dim;
    if (hd % 16 == 0 && hd <= 16 * MAX_HD_VECS) {
        attend_v(t, i, g, scores, slots, count);
        return;
    }
#endif
    attend_c(t, i, g, scores, slots, count);
}

static void attention_task(void *ctx, int ith, int nth) {
    AttentionTask *t = ctx;
    int lo, hi;
    Chunks c = chunked(t->n * t->md->kv_heads, nth);
    size_t room = (size_t)(t->held + t->n);
    float *scores = t->scratch + (size_t)ith * room * MAX_GROUP; /* each thread's own: ith < nth */
    int *slots = t->slots + (size_t)ith * room;
    while (claim(&c, &lo, &hi))
        for (int job = lo; job < hi; job++) attend(t, job / t->md->kv_heads, job % t->md->kv_heads, scores, slots);
}

static void *grab(size_t bytes, int *failed) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) *failed = 1;
    return p;
}

/* The pass. Returns 0, or -1 when memory ran out. */
static int run_forward(const Model *md, int n, const int64_t *tokens, const float *inputs, const int64_t *positions,
                       int held, int masked_from, const uint8_t *visible, float *const *kcache,
                       float *const *vcache, int cap,
                       float *hidden_out, int keep, float *logits_out, int nth) {
    int h = md->hidden, hd = md->head_dim, kvw = md->kv_heads * hd, qw = (md->heads + 2 * md->kv_heads) * hd;
    int aw = md->heads * hd, big = md->ffn > aw ? md->ffn : aw;
    big = big > h ? big : h;
    int failed = 0;
    float *x = grab(sizeof(float) * n * h, &failed);
    float *normed = grab(sizeof(float) * n * big, &failed);
    XBlock *xq = grab(sizeof(XBlock) * n * (big / BLOCK + 1), &failed);
    float *qkv = grab(sizeof(float) * n * qw, &failed);
    float *att = grab(sizeof(float) * n * aw, &failed);
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
        else dequantize_row(md->embed, tokens[r], x + (size_t)r * h);
    }
    int half = hd / 2;
    for (int l = 0; l < md->layers; l++) {
        const float *attn_norm = layer_vec(md, l, L_ATTN_NORM), *bias = layer_vec(md, l, L_QKV_BIAS);
        for (int r = 0; r < n; r++) {
            rms_norm(x + (size_t)r * h, attn_norm, h, md->eps, normed + (size_t)r * h);
            quantize_row(normed + (size_t)r * h, h, xq + (size_t)r * (h / BLOCK));
        }
        matmul(layer_mat(md, l, L_QKV), xq, n, qkv, nth);
        float *kc = kcache[l], *vc = vcache[l];
        for (int r = 0; r < n; r++) {
            float *row = qkv + (size_t)r * qw;
            if (bias)
                for (int i = 0; i < qw; i++) row[i] += bias[i];
            const float *cos = md->cos + (size_t)positions[r] * half, *sin = md->sin + (size_t)positions[r] * half;
            for (int head = 0; head < md->heads + md->kv_heads; head++) rope(row + (size_t)head * hd, cos, sin, half);
            memcpy(kc + (size_t)(held + r) * kvw, row + aw, sizeof(float) * kvw);
            memcpy(vc + (size_t)(held + r) * kvw, row + aw + kvw, sizeof(float) * kvw);
        }
        AttentionTask at = {md, n, held, cap, l, masked_from, visible, qkv, kc, vc, att, scratch, slots};
        int jobs = n * md->kv_heads;
        parallel(attention_task, &at, nth < jobs ? nth : jobs);
        for (int r = 0; r < n; r++) quantize_row(att + (size_t)r * aw, aw, xq + (size_t)r * (aw / BLOCK));
        matmul(layer_mat(md, l, L_O), xq, n, normed, nth);
        for (size_t i = 0; i < (size_t)n * h; i++) x[i] += normed[i];
        const float *ffn_norm = layer_vec(md, l, L_FFN_NORM);
        for (int r = 0; r < n; r++) {
            rms_norm(x + (size_t)r * h, ffn_norm, h, md->eps, normed + (size_t)r * h);
            quantize_row(normed + (size_t)r * h, h, xq + (size_t)r * (h / BLOCK));
        }
        matmul(layer_mat(md, l, L_GATE_UP), xq, n, ff, nth);
        int f = md->ffn;
        for (int r = 0; r < n; r++) {
            float *gate = ff + (size_t)r * 2 * f, *up = gate + f, *act = normed + (size_t)r * f;
            silu_mul(gate, up, f, act);
            quantize_row(act, f, xq + (size_t)r * (f / BLOCK));
        }
        matmul(layer_mat(md, l, L_DOWN), xq, n, att, nth);
        for (size_t i = 0; i < (size_t)n * h; i++) x[i] += att[i];
    }
    for (int r = 0; r < n; r++) rms_norm(x + (size_t)r * h, md->norm, h, md->eps, normed + (size_t)r * h);
    if (hidden_out) memcpy(hidden_out, normed, sizeof(float) * n * h);
    if (keep > 0 && logits_out) {
        int first = n - keep;
        for (int r = 0; r < keep; r++) quantize_row(normed + (size_t)(first + r) * h, h, xq + (size_t)r * (h / BLOCK));
        matmul(md->head, xq, keep, logits_out, nth);
    }
done:
    free(x), free(normed), free(xq), free(qkv), free(att), free(ff), free(scratch), free(slots);
    return rc;
}

/* ---------------------------------------------------------------- Python --------------------------- */

static void *ptr(unsigned long long v) { return (void *)(uintptr_t)v; }

static int thread_count(int asked) {
    if (asked < 1) asked = 1;
    if (asked > MAX_THREADS) asked = MAX_THREADS;
    return ensure_workers(asked);
}

/* forward(meta, n, tokens, inputs, positions, held, masked_from, visible, kcache, vcache, cap, hidden_out,
 *         keep, logits_out, threads): pointers as integers (0 for none); kcache/vcache: int64 arrays of one
 * pointer per layer. Row r is fed at cache slot held + r. visible (uint8 [n, held - masked_from + n]) says
 * which of slots masked_from.. each row sees (every row sees the slots before masked_from); 0: causal. */
static PyObject *py_forward(PyObject *self, PyObject *args) {
    unsigned long long meta, tokens, inputs, positions, visible, kcache, vcache, hidden_out, logits_out;
    int n, held, masked_from, cap, keep, threads;
    if (!PyArg_ParseTuple(args, "KiKKKiiKKKiKiKi", &meta, &n, &tokens, &inputs, &positions, &held, &masked_from,
                          &visible, &kcache, &vcache, &cap, &hidden_out, &keep, &logits_out, &threads))
        return NULL;
    if (n < 1 || held < 0 || held + n > cap || keep < 0 || keep > n || (!tokens && !inputs) ||
        masked_from < 0 || masked_from > held) {
        PyErr_SetString(PyExc_ValueError, "native forward: bad row counts or cache capacity");
        return NULL;
    }
    Model md = model_of((const int64_t *)ptr(meta));
    const int64_t *pos = ptr(positions);
    for (int r = 0; r < n; r++)
        if (pos[r] < 0 || pos[r] >= md.max_pos) {
            PyErr_SetString(PyExc_ValueError, "native forward: a position past the rotary table");
            return NULL;
        }
    if (tokens)
        for (int r = 0; r < n; r++)
            if (((const int64_t *)ptr(tokens))[r] < 0 || ((const int64_t *)ptr(tokens))[r] >= md.embed->n) {
                PyErr_SetString(PyExc_ValueError, "native forward: a token id outside the vocabulary");
                return NULL;
            }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&pool.run_lock);
    int nth = thread_count(threads);
    rc = run_forward(&md, n, ptr(tokens), ptr(inputs), pos, held, masked_from, ptr(visible), ptr(kcache), ptr(vcache), cap,
                     ptr(hidden_out), keep, ptr(logits_out), nth);
    settle();
    pthread_mutex_unlock(&pool.run_lock);
    Py_END_ALLOW_THREADS
    if (rc != 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* matmul(qmat, x, rows, out, threads): out [rows, n] = x [rows, k] @ W^T, x float32 */
static PyObject *py_matmul(PyObject *self, PyObject *args) {
    unsigned long long qmat, x, out;
    int rows, threads;
    if (!PyArg_ParseTuple(args, "KKiKi", &qmat, &x, &rows, &out, &threads)) return NULL;
    const QMat *w = ptr(qmat);
    if (rows < 0) {
        PyErr_SetString(PyExc_ValueError, "native matmul: negative rows");
        return NULL;
    }
    if (rows == 0) Py_RETURN_NONE;
    XBlock *xq = malloc(sizeof(XBlock) * rows * (w->k / BLOCK));
    if (!xq) return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&pool.run_lock);
    for (int r = 0; r < rows; r++)
        quantize_row((const float *)ptr(x) + (size_t)r * w->k, (int)w->k, xq + (size_t)r * (w->k / BLOCK));
    matmul(w, xq, rows, ptr(out), thread_count(threads));
    settle();
    pthread_mutex_unlock(&pool.run_lock);
    Py_END_ALLOW_THREADS
    free(xq);
    Py_RETURN_NONE;
}

static PyObject *py_cpu_ok(PyObject *self, PyObject *args) {
#if defined(SL_AVX512)
    __builtin_cpu_init();
    int ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
             __builtin_cpu_supports("fma");
#elif defined(__AVX2__)
    __builtin_cpu_init();
    int ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#else
    int ok = 1;
#endif
    return PyBool_FromLong(ok);
}

static PyObject *py_isa(PyObject *self, PyObject *args) {
#if defined(SL_AVX512)
    return PyUnicode_FromString("AVX-512 VNNI");
#elif defined(__AVX2__)
    return PyUnicode_FromString("AVX2");
#else
    return PyUnicode_FromString("generic C");
#endif
}

static PyObject *py_block_bytes(PyObject *self, PyObject *args) {
    return Py_BuildValue("ii", (int)sizeof(XBlock), (int)sizeof(QMat));
}

static PyMethodDef methods[] = {
    {"forward", py_forward, METH_VARARGS, "the model's pass over n rows"},
    {"matmul", py_matmul, METH_VARARGS, "one quantized linear"},
    {"cpu_ok", py_cpu_ok, METH_NOARGS, "whether this build's instructions run on this CPU"},
    {"isa", py_isa, METH_NOARGS, "the instruction set this build uses"},
    {"layout", py_block_bytes, METH_NOARGS, "(sizeof XBlock, sizeof QMat)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, SL_STR(SL_MODULE), NULL, -1, methods};

PyMODINIT_FUNC SL_CAT(PyInit_, SL_MODULE)(void) { return PyModule_Create(&module); }
