/* The kernel's thread pool: workers that spin briefly between a pass's regions, then sleep.
 *
 * On a thread layer of its own (sl_mutex_t, sl_cond_t, sl_thread_start): pthreads on POSIX, and on Windows a
 * shim over Win32 threads (_beginthreadex), SRW locks and condition variables, with the same semantics (a
 * statically initialised lock, a wait that re-takes it, a broadcast, a detached thread). Only the pool
 * touches threads; the work split is the same everywhere: threads split output channels and (row, head)
 * jobs, never a sum. */

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#include <process.h>
typedef SRWLOCK sl_mutex_t;
typedef CONDITION_VARIABLE sl_cond_t;
#define SL_MUTEX_INIT SRWLOCK_INIT
#define SL_COND_INIT CONDITION_VARIABLE_INIT
static void sl_mutex_lock(sl_mutex_t *m) { AcquireSRWLockExclusive(m); }
static void sl_mutex_unlock(sl_mutex_t *m) { ReleaseSRWLockExclusive(m); }
static void sl_cond_wait(sl_cond_t *c, sl_mutex_t *m) { SleepConditionVariableSRW(c, m, INFINITE, 0); }
static void sl_cond_broadcast(sl_cond_t *c) { WakeAllConditionVariable(c); }
#else
#include <pthread.h>
typedef pthread_mutex_t sl_mutex_t;
typedef pthread_cond_t sl_cond_t;
#define SL_MUTEX_INIT PTHREAD_MUTEX_INITIALIZER
#define SL_COND_INIT PTHREAD_COND_INITIALIZER
static void sl_mutex_lock(sl_mutex_t *m) { pthread_mutex_lock(m); }
static void sl_mutex_unlock(sl_mutex_t *m) { pthread_mutex_unlock(m); }
static void sl_cond_wait(sl_cond_t *c, sl_mutex_t *m) { pthread_cond_wait(c, m); }
static void sl_cond_broadcast(sl_cond_t *c) { pthread_cond_broadcast(c); }
#endif

typedef void (*task_fn)(void *ctx, int ith, int nth);

static struct {
    int started;
    atomic_int generation;
    atomic_int gate; /* workers that joined this generation's task, and CLOSED once the caller takes no more */
    atomic_int done; /* joined workers that finished it */
    atomic_int sleepers;
    atomic_int rest; /* set when a Python call returns: workers sleep at once instead of spinning */
    task_fn fn;
    void *ctx;
    int nth;
    sl_mutex_t lock;
    sl_cond_t wake;
    sl_mutex_t run_lock; /* one pass at a time: two Python threads may call in */
    int start_generation[MAX_THREADS]; /* the generation a worker was made in: its first task is the next */
} pool = {.lock = SL_MUTEX_INIT, .wake = SL_COND_INIT, .run_lock = SL_MUTEX_INIT};

#define SPINS 20000 /* ~0.2-1 ms of pause before a worker sleeps: a pass's regions are microseconds apart */

static inline void cpu_relax(void) {
#if defined(_WIN32)
    YieldProcessor(); /* pause on x86, yield on arm64 */
#elif defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
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

static void worker(int ith) {
    int seen = pool.start_generation[ith]; /* not the current one: the first task may already be out */
    fesetenv(FE_DFL_ENV);                  /* not the creating thread's environment (common.h, FP_PINNED) */
    for (;;) {
        int spins = 0;
        while (atomic_load(&pool.generation) == seen) {
            if (++spins < SPINS && !atomic_load_explicit(&pool.rest, memory_order_relaxed)) {
                cpu_relax();
                continue;
            }
            sl_mutex_lock(&pool.lock);
            atomic_fetch_add(&pool.sleepers, 1);
            while (atomic_load(&pool.generation) == seen) sl_cond_wait(&pool.wake, &pool.lock);
            atomic_fetch_sub(&pool.sleepers, 1);
            sl_mutex_unlock(&pool.lock);
        }
        seen = atomic_load(&pool.generation);
        if (!join()) continue; /* late: the caller did this task's work itself */
        if (ith < pool.nth) pool.fn(pool.ctx, ith, pool.nth);
        atomic_fetch_add(&pool.done, 1);
    }
}

/* A detached thread running worker(ith); 0 when it started. */
#ifdef _WIN32
static unsigned __stdcall worker_entry(void *arg) {
    worker((int)(intptr_t)arg);
    return 0;
}

static int sl_thread_start(int ith) {
    uintptr_t h = _beginthreadex(NULL, 0, worker_entry, (void *)(intptr_t)ith, 0, NULL);
    if (h == 0) return -1;
    CloseHandle((HANDLE)h);
    return 0;
}
#else
static void *worker_entry(void *arg) {
    worker((int)(intptr_t)arg);
    return NULL;
}

static int sl_thread_start(int ith) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker_entry, (void *)(intptr_t)ith) != 0) return -1;
    pthread_detach(t);
    return 0;
}
#endif

static int ensure_workers(int nth) {
    while (pool.started < nth - 1 && pool.started < MAX_THREADS - 1) {
        pool.start_generation[pool.started + 1] = atomic_load(&pool.generation);
        if (sl_thread_start(pool.started + 1) != 0) return pool.started + 1;
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
        sl_mutex_lock(&pool.lock);
        sl_cond_broadcast(&pool.wake);
        sl_mutex_unlock(&pool.lock);
    }
    fn(ctx, 0, nth);
    int joined = atomic_fetch_or(&pool.gate, CLOSED); /* no item is left: no one else may join */
    while (atomic_load(&pool.done) < joined) cpu_relax();
}

/* A Python call is over: workers still spinning sleep now. Spinning pays between a pass's regions, which
 * are microseconds apart; between calls it takes a core from the round's torch work (on 2 cores, 8-14% a
 * token while the host was busy; no cost when quiet: docs/native-kernels.md). The next parallel() wakes them. */
static void settle(void) { atomic_store(&pool.rest, 1); }

/* One pass at a time (a Python call holds this around its pass, then settle()s). */
static void pool_enter(void) { sl_mutex_lock(&pool.run_lock); }
static void pool_leave(void) { sl_mutex_unlock(&pool.run_lock); }

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

