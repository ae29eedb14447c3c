/* The native kernel's arithmetic without Python, for cross-builds run under emulation (tests/native/test_cross.py):
 * arm64 under qemu-aarch64, Windows (mingw-w64) under wine, and this machine's generic x86 build as the reference.
 *
 * harness <inputs> reads the models tests/native/cross/inputs.py wrote (SpecLens's own packing code made
 * their records) and, for each:
 *   - every matrix (every block type, 1 and 2 activation digits) times 9 rows of fixed-seed activations:
 *     the rows' integer digits and the outputs' float bits; each row bit-identical whether it shares its
 *     call with 0..8 other rows, on 1, 2 or 3 threads;
 *   - the prompt's pass: its logits' float bits, each row bit-identical whatever chunks of 1..n rows the prompt
 *     is fed in and whatever the thread count (1..3);
 *   - greedy decoding from the prompt, one row a pass;
 * and first, that the pool's threads run at all: 3 join a task, sleep once settled, and are woken by the next.
 * It prints one line an output (hex float bits, so a comparison can be exact) and `FAIL <what>` for each row
 * that differs across row counts or threads; the exit status is the number of failures (0: all held). */
#include "native.h"

#include <stdio.h>
#include <time.h>

static int failures = 0;

static void fail(const char *what, const char *name, int a, int b) {
    printf("FAIL %s %s %d %d\n", what, name, a, b);
    failures++;
}

/* ------------------------------------------------------------------ output ------------------------------ */

static void put_hex32(uint32_t v) {
    static const char digit[] = "0123456789abcdef";
    char s[9];
    for (int i = 7; i >= 0; i--, v >>= 4) s[i] = digit[v & 15];
    s[8] = 0;
    fputs(s, stdout);
}

static void put_bits(const float *x, int n) {
    for (int i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        putchar(' ');
        put_hex32(bits);
    }
}

static void put_floats(const float *x, int n) {
    put_bits(x, n);
    putchar('\n');
}

/* ------------------------------------------------------------------ input ------------------------------- */

typedef struct {
    const uint8_t *at, *end;
} Reader;

static void need(Reader *r, size_t n) {
    if ((size_t)(r->end - r->at) < n) {
        printf("FAIL input truncated\n");
        exit(100);
    }
}

static int64_t i64(Reader *r) {
    int64_t v;
    need(r, 8);
    memcpy(&v, r->at, 8);
    r->at += 8;
    return v;
}

static int32_t i32(Reader *r) {
    int32_t v;
    need(r, 4);
    memcpy(&v, r->at, 4);
    r->at += 4;
    return v;
}

static float f32(Reader *r) {
    float v;
    need(r, 4);
    memcpy(&v, r->at, 4);
    r->at += 4;
    return v;
}

static Vec vec(Reader *r) {
    size_t count = (size_t)i64(r);
    if (!count) return (Vec){NULL, 0};
    need(r, count * 4);
    float *p = malloc(count * sizeof(float)); /* aligned for floats, whatever the file's offset */
    memcpy(p, r->at, count * 4);
    r->at += count * 4;
    return (Vec){p, count};
}

static QMat mat(Reader *r) {
    QMat w;
    w.type = i64(r), w.n = i64(r), w.k = i64(r), w.digits = i64(r);
    w.bytes = (size_t)i64(r);
    need(r, w.bytes);
    uint8_t *q = malloc(w.bytes);
    memcpy(q, r->at, w.bytes);
    r->at += w.bytes;
    w.q = q;
    return w;
}

static Proj proj(Reader *r) {
    Proj p;
    memset(&p, 0, sizeof p);
    p.count = (int)i64(r);
    if (p.count < 1 || p.count > MAX_PARTS) {
        printf("FAIL input projection of %d parts\n", p.count);
        exit(100);
    }
    for (int j = 0; j < p.count; j++) p.part[j] = mat(r);
    return p;
}

typedef struct {
    char name[33];
    Model md;
    int greedy, prompt_len;
    int64_t *prompt;
} Case;

static void read_case(Reader *r, Case *c) {
    need(r, 32);
    memcpy(c->name, r->at, 32);
    c->name[32] = 0;
    r->at += 32;
    Model *md = &c->md;
    md->layers = i32(r), md->hidden = i32(r), md->heads = i32(r), md->kv_heads = i32(r);
    md->head_dim = i32(r), md->ffn = i32(r), md->vocab = i32(r), md->max_pos = i32(r);
    md->eps = f32(r);
    c->greedy = i32(r), c->prompt_len = i32(r);
    if (c->prompt_len < 1 || c->prompt_len > 64 || md->layers < 1 || md->layers > 64) {
        printf("FAIL input sizes\n");
        exit(100);
    }
    c->prompt = malloc(sizeof(int64_t) * (size_t)c->prompt_len);
    for (int i = 0; i < c->prompt_len; i++) c->prompt[i] = i32(r);
    md->cos = vec(r), md->sin = vec(r), md->norm = vec(r);
    md->embed = mat(r), md->head = mat(r);
    md->layer = calloc((size_t)md->layers, sizeof(Layer));
    for (int l = 0; l < md->layers; l++) {
        Layer *y = &md->layer[l];
        y->attn_norm = vec(r), y->qkv_bias = vec(r), y->ffn_norm = vec(r), y->q_norm = vec(r), y->k_norm = vec(r);
        y->qkv = proj(r), y->o = mat(r), y->gate_up = proj(r), y->down = mat(r);
    }
    const char *why = check_model(md);
    if (why) {
        printf("FAIL model %s: %s\n", c->name, why);
        exit(100);
    }
}

/* ------------------------------------------------------------------ matrices ---------------------------- */

#define XROWS 9

/* Fixed-seed activations, exact on every platform: integers scaled by a power of two. */
static uint64_t rng_state;

static float draw(void) {
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    uint64_t v = rng_state * 0x2545F4914F6CDD1DULL;
    return (float)((int32_t)(v >> 40) - (1 << 23)) * (1.0f / 8388608.0f);
}

static int threads_for(int i) { return ensure_workers(1 + i % 3); }

/* One matrix times XROWS rows, as one call and as calls of 1..XROWS rows on 1..3 threads. */
static void check_matrix_rows(const char *cname, const char *what, QMat w, int digits) {
    w.digits = digits;
    int k = (int)w.k, n = (int)w.n, kb = k / BLOCK;
    float *x = malloc(sizeof(float) * XROWS * (size_t)k);
    rng_state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(k * 131 + n);
    for (int i = 0; i < XROWS * k; i++) x[i] = draw() * (i % 7 == 3 ? 4.0f : 1.0f);
    XBlock *xq = malloc(sizeof(XBlock) * XROWS * (size_t)kb);
    float *all = malloc(sizeof(float) * XROWS * (size_t)n), *part = malloc(sizeof(float) * XROWS * (size_t)n);
    FP_PINNED({
        for (int r = 0; r < XROWS; r++) quantize_row(x + (size_t)r * k, k, xq + (size_t)r * kb);
        matmul(&w, xq, XROWS, all, 1);
    });
    char name[96];
    snprintf(name, sizeof name, "%s/%s/%d", cname, what, digits);
    for (int r = 0; r < XROWS; r++) {
        printf("D %s %d", name, r); /* the integer digits, and the block's float sums */
        for (int b = 0; b < kb; b++) {
            const XBlock *o = xq + (size_t)r * kb + b;
            for (int i = 0; i < BLOCK; i++) {
                putchar(' ');
                put_hex32((uint32_t)(uint8_t)o->a1[i] << 8 | (uint8_t)o->a2[i]);
            }
        }
        putchar('\n');
        printf("S %s %d", name, r);
        for (int b = 0; b < kb; b++) { /* s, sa, s1, sa1, sah[2], sa1h[2] */
            const XBlock *o = xq + (size_t)r * kb + b;
            float sums[8] = {o->s, o->sa, o->s1, o->sa1, o->sah[0], o->sah[1], o->sa1h[0], o->sa1h[1]};
            put_bits(sums, 8);
        }
        putchar('\n');
        printf("M %s %d", name, r);
        put_floats(all + (size_t)r * n, n);
    }
    for (int rows = 1; rows <= XROWS; rows++) {
        int nth = threads_for(rows);
        for (int r0 = 0; r0 + rows <= XROWS; r0 += rows) {
            FP_PINNED(matmul(&w, xq + (size_t)r0 * kb, rows, part, nth));
            if (memcmp(part, all + (size_t)r0 * n, sizeof(float) * (size_t)rows * n))
                fail("matmul-rows", name, rows, nth);
        }
    }
    free(x), free(xq), free(all), free(part);
}

static void check_matrices(const Case *c) {
    const Model *md = &c->md;
    check_matrix_rows(c->name, "embed", md->embed, 2);
    check_matrix_rows(c->name, "head", md->head, 1);
    for (int l = 0; l < md->layers; l++) {
        const Layer *y = &md->layer[l];
        char what[32];
        for (int j = 0; j < y->qkv.count; j++)
            snprintf(what, sizeof what, "%d.qkv%d", l, j), check_matrix_rows(c->name, what, y->qkv.part[j], 2);
        snprintf(what, sizeof what, "%d.o", l), check_matrix_rows(c->name, what, y->o, 1 + l % 2);
        for (int j = 0; j < y->gate_up.count; j++)
            snprintf(what, sizeof what, "%d.gu%d", l, j), check_matrix_rows(c->name, what, y->gate_up.part[j], 2);
        for (int digits = 1; digits <= 2; digits++) /* the K types: every one in both digit counts */
            snprintf(what, sizeof what, "%d.down", l), check_matrix_rows(c->name, what, y->down, digits);
    }
}

/* ------------------------------------------------------------------ passes ------------------------------ */

typedef struct {
    float *keys, *values;
    int cap;
    size_t count;
} Cache;

static Cache new_cache(const Model *md, int cap) {
    Cache c = {NULL, NULL, cap, (size_t)md->layers * (size_t)cap * (size_t)kv_width(md)};
    c.keys = calloc(c.count, sizeof(float));
    c.values = calloc(c.count, sizeof(float));
    return c;
}

/* rows tokens[0..n) at slots held.., causal; logits of every row into out [n, head.n] */
static void pass(const Model *md, Cache *cache, const int64_t *tokens, int n, int held, float *out, int threads) {
    int64_t positions[64];
    for (int r = 0; r < n; r++) positions[r] = held + r;
    Pass ps = {n, tokens, NULL, positions, held, held, NULL, cache->keys, cache->values, cache->cap, NULL, n, out,
               (size_t)n, 0, (size_t)n, 0, cache->count, 0, (size_t)n * (size_t)md->head.n};
    const char *why = check_pass(md, &ps);
    if (why) {
        printf("FAIL pass: %s\n", why);
        exit(100);
    }
    int rc, nth = ensure_workers(threads);
    pool_enter();
    FP_PINNED(rc = run_forward(md, &ps, nth));
    settle();
    pool_leave();
    if (rc) {
        printf("FAIL out of memory\n");
        exit(100);
    }
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static void check_passes(const Case *c) {
    const Model *md = &c->md;
    int n = c->prompt_len, ln = (int)md->head.n, cap = n + c->greedy + 1;
    if (ln > 4096) {
        printf("FAIL input head wider than 4096\n");
        exit(100);
    }
    float *whole = malloc(sizeof(float) * (size_t)n * ln), *part = malloc(sizeof(float) * (size_t)n * ln);
    Cache cache = new_cache(md, cap);
    pass(md, &cache, c->prompt, n, 0, whole, 1);
    for (int r = 0; r < n; r++) {
        printf("L %s %d", c->name, r);
        put_floats(whole + (size_t)r * ln, ln);
    }
    for (int chunk = 1; chunk <= n; chunk++) /* the prompt fed in chunks of 1..n rows, on 1..3 threads */
        for (int threads = 1; threads <= 3; threads++) {
            Cache fresh = new_cache(md, cap);
            for (int at = 0; at < n; at += chunk) {
                int rows = n - at < chunk ? n - at : chunk;
                pass(md, &fresh, c->prompt + at, rows, at, part + (size_t)at * ln, threads);
            }
            for (int r = 0; r < n; r++)
                if (memcmp(part + (size_t)r * ln, whole + (size_t)r * ln, sizeof(float) * ln))
                    fail("pass-rows", c->name, chunk * 10 + threads, r);
            free(fresh.keys), free(fresh.values);
        }
    /* greedy from the prompt, one row a pass, on 1 and 3 threads */
    for (int threads = 1; threads <= 3; threads += 2) {
        Cache g = new_cache(md, cap);
        pass(md, &g, c->prompt, n, 0, part, threads);
        int64_t token = argmax(part + (size_t)(n - 1) * ln, md->vocab);
        printf("G %s %d", c->name, threads);
        for (int s = 0; s < c->greedy; s++) {
            printf(" %d", (int)token);
            float row[4096];
            pass(md, &g, &token, 1, n + s, row, threads);
            token = argmax(row, md->vocab);
        }
        printf(" %d\n", (int)token);
        free(g.keys), free(g.values);
    }
    for (int r = 0; r < n; r++) printf("A %s %d %d\n", c->name, r, argmax(whole + (size_t)r * ln, md->vocab));
    free(whole), free(part), free(cache.keys), free(cache.values);
}

/* ------------------------------------------------------------------ the thread layer -------------------- */

/* Every thread of a task in the default rounding, and the workers there at all: the results above hold even
 * when no worker ever joins (the caller claims every item), so only this shows the pool's threads run. */
typedef struct {
    atomic_int arrived, bad_env;
    int want;
    double until; /* one deadline for the whole task: a caller left alone runs every item, each waiting */
} Probe;

static double seconds(void) { /* monotonic, in seconds: time()'s whole seconds made a bounded wait 2-3 s */
#ifdef _WIN32
    return (double)GetTickCount64() / 1e3;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
#endif
}

static void probe_task(void *ctx, int ith, int nth) {
    Probe *p = ctx;
    if (fegetround() != FE_TONEAREST) atomic_fetch_add(&p->bad_env, 1);
    atomic_fetch_add(&p->arrived, 1);
    /* the caller waits (bounded) for every thread to arrive: threads start in microseconds natively and in
     * milliseconds under qemu or wine, so 1.5 s only runs out when a thread never comes */
    while (atomic_load(&p->arrived) < p->want && seconds() < p->until) cpu_relax();
}

static void pause_ms(int ms) {
#ifdef _WIN32
    Sleep((DWORD)ms);
#else
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
#endif
}

static int probe(int nth) {
    Probe p = {0, 0, nth, seconds() + 1.5};
    nth = ensure_workers(nth);
    pool_enter();
    FP_PINNED(parallel(probe_task, &p, nth));
    settle();
    pool_leave();
    if (atomic_load(&p.bad_env)) fail("threads-env", "probe", atomic_load(&p.bad_env), nth);
    return atomic_load(&p.arrived);
}

static void check_threads(void) {
    int spinning = probe(3);
    /* settled: the workers sleep on the pool's condition variable; the next task must wake them */
    double until = seconds() + 3;
    while (atomic_load(&pool.sleepers) < pool.started && seconds() < until) pause_ms(10);
    int slept = atomic_load(&pool.sleepers);
    pause_ms(50);
    int woken = probe(3);
    printf("T threads %d %d %d\n", spinning, slept, woken);
    if (spinning != 3 || woken != 3 || slept != 2) fail("threads-join", "probe", spinning * 10 + slept, woken);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: harness <inputs>\n");
        return 100;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        printf("FAIL cannot open %s\n", argv[1]);
        return 100;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)size);
    if (fread(data, 1, (size_t)size, f) != (size_t)size) {
        printf("FAIL cannot read %s\n", argv[1]);
        return 100;
    }
    fclose(f);
    Reader r = {data, data + size};
    need(&r, 4);
    if (memcmp(r.at, "SLX1", 4)) {
        printf("FAIL not a harness input\n");
        return 100;
    }
    r.at += 4;
    check_threads();
    int cases = i32(&r);
    for (int i = 0; i < cases; i++) {
        Case c;
        read_case(&r, &c);
        check_matrices(&c);
        check_passes(&c);
    }
    printf("END %d\n", failures);
    fflush(stdout);
    return failures > 99 ? 99 : failures;
}
