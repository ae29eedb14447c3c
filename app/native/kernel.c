/* SpecLens's native decode step for Llama-family models on a CPU: the whole forward pass of n rows
 * (a decode step, a verify pass, a token tree, a prefill) in one call, on weights in 4-bit (Q4_1) or
 * 8-bit (Q8_0) blocks of 32 (and GGML's Q4_0, Q5_0, Q5_1 and K-quants, csrc/blocks.h), read once for every
 * row of the pass.
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
 * Built by setup.py once per instruction set (x86: AVX-512 VNNI, AVX2, generic; arm64: NEON with the dot
 * product and i8mm, NEON with the dot product, generic); app/native picks the best one whose cpu_ok() is true. csrc/ holds the plain-C
 * reference of every vectorised function (`*_ref`), csrc/arch/<arch>/ each instruction set's own forms, and
 * csrc/dispatch.h the one map from a name to the build's form. No Python object is touched while the GIL is
 * released.
 *
 * This file is the Python boundary: typed objects (Matrix, Model) built from buffers whose sizes C
 * checks (csrc/descriptor.h), and passes whose every buffer is checked against the model (check_pass),
 * so no pointer or size crosses as a bare integer. The arithmetic is in csrc/.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "csrc/native.h"

#if defined(SL_NEON) && defined(__APPLE__)
#include <sys/sysctl.h>
/* Whether macOS reports the feature (hw.optional.arm.FEAT_*: 1 where the cores have it). */
static int apple_has(const char *name) {
    int has = 0;
    size_t size = sizeof has;
    return sysctlbyname(name, &has, &size, NULL, 0) == 0 && has;
}
#elif defined(SL_NEON) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13) /* Linux 5.10's value, for older headers */
#endif
#endif

#ifndef SL_MODULE
#define SL_MODULE _kernel_generic
#endif
#define SL_STR2(x) #x
#define SL_STR(x) SL_STR2(x)
#define SL_CAT2(a, b) a##b
#define SL_CAT(a, b) SL_CAT2(a, b)

/* ---------------------------------------------------------------- buffers -------------------------- */

typedef enum { F32, I64, U8 } Items;

/* view over obj: C-contiguous, of the given items, aligned for them; else a TypeError naming `what`. */
static int take(PyObject *obj, Py_buffer *view, Items items, int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        PyErr_Format(PyExc_TypeError, "native: %s must be a contiguous%s buffer", what, writable ? " writable" : "");
        return -1;
    }
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    int ok = items == F32 ? view->itemsize == 4 && f[0] == 'f' && !f[1]
           : items == I64 ? view->itemsize == 8 && (f[0] == 'q' || f[0] == 'l') && !f[1]
                          : view->itemsize == 1 && (f[0] == 'B' || f[0] == 'b') && !f[1];
    if (ok && (uintptr_t)view->buf % (uintptr_t)view->itemsize) ok = 0;
    if (!ok) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "native: %s must hold %s", what,
                     items == F32 ? "aligned float32" : items == I64 ? "aligned int64" : "bytes");
        return -1;
    }
    return 0;
}

/* An optional buffer argument (None: absent). */
static int take_opt(PyObject *obj, Py_buffer *view, Items items, int writable, const char *what) {
    if (obj == Py_None) {
        memset(view, 0, sizeof *view);
        return 0;
    }
    return take(obj, view, items, writable, what);
}

static void release(Py_buffer *view) {
    if (view->obj) PyBuffer_Release(view);
}

static size_t items_in(const Py_buffer *view) { return view->obj ? (size_t)(view->len / view->itemsize) : 0; }

/* ---------------------------------------------------------------- Matrix --------------------------- */

typedef struct {
    PyObject_HEAD
    QMat m;
    Py_buffer view;
} MatrixObject;

static PyTypeObject MatrixType;

static int matrix_init(MatrixObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"kind", "n", "k", "data", "digits", NULL};
    long long kind, n, k, digits = 2;
    PyObject *data;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "LLLO|L", names, &kind, &n, &k, &data, &digits)) return -1;
    release(&self->view);
    if (take(data, &self->view, U8, 0, "a matrix's data") != 0) return -1;
    self->m = (QMat){.type = kind, .n = n, .k = k, .q = self->view.buf, .bytes = (size_t)self->view.len, .digits = digits};
    const char *why = check_matrix(&self->m);
    if (why) {
        PyErr_Format(PyExc_ValueError, "native: %s (type %lld, %lld x %lld, %zd bytes)", why, kind, n, k,
                     self->view.len);
        release(&self->view);
        memset(&self->m, 0, sizeof self->m);
        return -1;
    }
    return 0;
}

static void matrix_dealloc(MatrixObject *self) {
    release(&self->view);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef matrix_members[] = {
    {"kind", T_LONGLONG, offsetof(MatrixObject, m.type), READONLY, "block type"},
    {"n", T_LONGLONG, offsetof(MatrixObject, m.n), READONLY, "output channels (whole panels of 16)"},
    {"k", T_LONGLONG, offsetof(MatrixObject, m.k), READONLY, "inputs (whole blocks of 32)"},
    {"digits", T_LONGLONG, offsetof(MatrixObject, m.digits), READONLY, "activation digits it multiplies (1 or 2)"},
    {NULL},
};

static PyTypeObject MatrixType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = SL_STR(SL_MODULE) ".Matrix",
    .tp_doc = "Matrix(kind, n, k, data, digits=2): weights in the kernel's panel records, checked whole",
    .tp_basicsize = sizeof(MatrixObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)matrix_init,
    .tp_dealloc = (destructor)matrix_dealloc,
    .tp_members = matrix_members,
};

static int as_matrix(PyObject *obj, QMat *out, const char *what) {
    if (!PyObject_TypeCheck(obj, &MatrixType) || ((MatrixObject *)obj)->m.q == NULL) {
        PyErr_Format(PyExc_TypeError, "native: %s must be a Matrix of this build", what);
        return -1;
    }
    *out = ((MatrixObject *)obj)->m;
    return 0;
}

/* ---------------------------------------------------------------- Model ---------------------------- */

/* The descriptor's fields, by name: Python's side (native/descriptor.py) checks its own against these at
 * import (layout()), so the two can never disagree on an order. */
static char *MODEL_FIELDS[] = {"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab",
                               "max_positions", "eps", "cos", "sin", "norm", "embed", "head", "parts", NULL};
static const char *LAYER_FIELDS[] = {"attn_norm", "qkv", "qkv_bias", "q_norm", "k_norm", "o", "ffn_norm",
                                     "gate_up", "down"};
enum { F_ATTN_NORM, F_QKV, F_QKV_BIAS, F_Q_NORM, F_K_NORM, F_O, F_FFN_NORM, F_GATE_UP, F_DOWN, N_LAYER_FIELDS };
#define VIEWS_A_LAYER 5

typedef struct {
    PyObject_HEAD
    Model md;
    Layer *layer;
    Py_buffer *views; /* cos, sin, norm, then VIEWS_A_LAYER a layer */
    int nviews;
    PyObject *matrices; /* the Matrix objects whose records md points into */
} ModelObject;

static PyTypeObject ModelType;

static void model_clear(ModelObject *self) {
    for (int i = 0; i < self->nviews; i++) release(&self->views[i]);
    PyMem_Free(self->views);
    PyMem_Free(self->layer);
    Py_CLEAR(self->matrices);
    self->views = NULL, self->layer = NULL, self->nviews = 0;
    memset(&self->md, 0, sizeof self->md);
}

static int vec_of(PyObject *obj, Py_buffer *view, Vec *v, const char *what, int optional) {
    if (optional && obj == Py_None) {
        *v = (Vec){.p = NULL, .count = 0};
        memset(view, 0, sizeof *view);
        return 0;
    }
    if (take(obj, view, F32, 0, what) != 0) return -1;
    *v = (Vec){.p = view->buf, .count = items_in(view)};
    return 0;
}

/* A projection: one Matrix, or a sequence of up to three (q, k, v in their own block types). */
static int as_proj(PyObject *obj, Proj *out, PyObject *keep, const char *what) {
    if (PyObject_TypeCheck(obj, &MatrixType)) {
        out->count = 1;
        return as_matrix(obj, &out->part[0], what) || PyList_Append(keep, obj);
    }
    PyObject *seq = PySequence_Fast(obj, "native: a projection must be a Matrix or a sequence of Matrices");
    if (!seq) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    int rc = 0;
    if (count < 1 || count > MAX_PARTS) {
        PyErr_Format(PyExc_ValueError, "native: %s has %zd parts (1 to 3)", what, count);
        rc = -1;
    }
    for (Py_ssize_t j = 0; rc == 0 && j < count; j++) {
        PyObject *part = PySequence_Fast_GET_ITEM(seq, j);
        rc = as_matrix(part, &out->part[j], what) || PyList_Append(keep, part);
    }
    out->count = rc == 0 ? (int)count : 0;
    Py_DECREF(seq);
    return rc;
}

static PyObject *layer_item(PyObject *dict, int l, const char *key) {
    PyObject *v = PyDict_GetItemString(dict, key);
    if (!v) PyErr_Format(PyExc_ValueError, "native: layer %d has no %s", l, key);
    return v;
}

static int model_init(ModelObject *self, PyObject *args, PyObject *kw) {
    int layers, hidden, heads, kv_heads, head_dim, ffn, vocab, max_pos;
    double eps;
    PyObject *cos, *sin, *norm, *embed, *head, *parts;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "$iiiiiiiidOOOOOO", MODEL_FIELDS, &layers, &hidden, &heads, &kv_heads,
                                     &head_dim, &ffn, &vocab, &max_pos, &eps, &cos, &sin, &norm, &embed, &head,
                                     &parts))
        return -1;
    model_clear(self);
    if (layers < 1 || layers > MAX_LAYERS) {
        PyErr_SetString(PyExc_ValueError, "native: layers outside 1..4096");
        return -1;
    }
    PyObject *seq = PySequence_Fast(parts, "native: parts must be a sequence of one dict a layer");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != layers) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "native: %d layers but %zd parts", layers, PySequence_Fast_GET_SIZE(seq));
        return -1;
    }
    self->layer = PyMem_Calloc((size_t)layers, sizeof(Layer));
    self->views = PyMem_Calloc(3 + (size_t)VIEWS_A_LAYER * layers, sizeof(Py_buffer));
    self->matrices = PyList_New(0);
    if (!self->layer || !self->views || !self->matrices) {
        Py_DECREF(seq);
        model_clear(self);
        PyErr_NoMemory();
        return -1;
    }
    Model *md = &self->md;
    *md = (Model){.layers = layers, .hidden = hidden, .heads = heads, .kv_heads = kv_heads, .head_dim = head_dim,
                  .ffn = ffn, .vocab = vocab, .max_pos = max_pos, .eps = (float)eps, .layer = self->layer};
    int rc = -1;
    Py_buffer *v = self->views;
    self->nviews = 3 + VIEWS_A_LAYER * layers; /* zeroed until taken: release() skips those */
    if (vec_of(cos, &v[0], &md->cos, "cos", 0) || vec_of(sin, &v[1], &md->sin, "sin", 0) ||
        vec_of(norm, &v[2], &md->norm, "norm", 0) || as_matrix(embed, &md->embed, "embed") || as_matrix(head, &md->head, "head") ||
        PyList_Append(self->matrices, embed) || PyList_Append(self->matrices, head))
        goto out;
    for (int l = 0; l < layers; l++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, l);
        if (!PyDict_Check(d) || PyDict_Size(d) != N_LAYER_FIELDS) {
            PyErr_Format(PyExc_ValueError, "native: layer %d's parts must be a dict of exactly its %d fields", l,
                         N_LAYER_FIELDS);
            goto out;
        }
        PyObject *item[N_LAYER_FIELDS];
        for (int f = 0; f < N_LAYER_FIELDS; f++)
            if (!(item[f] = layer_item(d, l, LAYER_FIELDS[f]))) goto out;
        Layer *y = &self->layer[l];
        Py_buffer *lv = v + 3 + VIEWS_A_LAYER * l;
        if (vec_of(item[F_ATTN_NORM], &lv[0], &y->attn_norm, "attn_norm", 0) ||
            vec_of(item[F_QKV_BIAS], &lv[1], &y->qkv_bias, "qkv_bias", 1) ||
            vec_of(item[F_FFN_NORM], &lv[2], &y->ffn_norm, "ffn_norm", 0) ||
            vec_of(item[F_Q_NORM], &lv[3], &y->q_norm, "q_norm", 1) || vec_of(item[F_K_NORM], &lv[4], &y->k_norm, "k_norm", 1) ||
            as_proj(item[F_QKV], &y->qkv, self->matrices, "qkv") || as_proj(item[F_GATE_UP], &y->gate_up, self->matrices, "gate_up") ||
            as_matrix(item[F_O], &y->o, "o") || as_matrix(item[F_DOWN], &y->down, "down") ||
            PyList_Append(self->matrices, item[F_O]) || PyList_Append(self->matrices, item[F_DOWN]))
            goto out;
    }
    const char *why = check_model(md);
    if (why) {
        PyErr_Format(PyExc_ValueError, "native: %s", why);
        goto out;
    }
    rc = 0;
out:
    Py_DECREF(seq);
    if (rc != 0) model_clear(self);
    return rc;
}

static void model_dealloc(ModelObject *self) {
    model_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef model_members[] = {
    {"layers", T_INT, offsetof(ModelObject, md.layers), READONLY, NULL},
    {"hidden", T_INT, offsetof(ModelObject, md.hidden), READONLY, NULL},
    {"vocab", T_INT, offsetof(ModelObject, md.vocab), READONLY, NULL},
    {"max_positions", T_INT, offsetof(ModelObject, md.max_pos), READONLY, NULL},
    {NULL},
};

static PyObject *model_kv_width(ModelObject *self, void *closure) { return PyLong_FromLong(kv_width(&self->md)); }
static PyObject *model_head_rows(ModelObject *self, void *closure) { return PyLong_FromLongLong(self->md.head.n); }

static PyGetSetDef model_getset[] = {
    {"kv_width", (getter)model_kv_width, NULL, "key (and value) floats a cache slot", NULL},
    {"head_rows", (getter)model_head_rows, NULL, "logits a row (the head's rows, padded to 16)", NULL},
    {NULL},
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = SL_STR(SL_MODULE) ".Model",
    .tp_doc = "Model(**descriptor): a model whose every size the kernel checked (layout() names the fields)",
    .tp_basicsize = sizeof(ModelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)model_init,
    .tp_dealloc = (destructor)model_dealloc,
    .tp_members = model_members,
    .tp_getset = model_getset,
};

/* ---------------------------------------------------------------- calls ---------------------------- */

static int thread_count(int asked) {
    if (asked < 1) asked = 1;
    if (asked > MAX_THREADS) asked = MAX_THREADS;
    return ensure_workers(asked);
}

/* forward(model, tokens, inputs, positions, held, masked_from, visible, keys, values, hidden_out, keep,
 *         logits_out, threads): buffers (None for none). Rows are fed at cache slots held + r; keys and values
 * are [layers, capacity, kv width]; visible (uint8 [n, held - masked_from + n]) says which of slots
 * masked_from.. each row sees (every row sees the slots before masked_from); None: causal. */
static PyObject *py_forward(PyObject *self, PyObject *args) {
    PyObject *model, *tokens, *inputs, *positions, *visible, *keys, *values, *hidden_out, *logits_out;
    int held, masked_from, keep, threads;
    if (!PyArg_ParseTuple(args, "O!OOOiiOOOOiOi", &ModelType, &model, &tokens, &inputs, &positions, &held,
                          &masked_from, &visible, &keys, &values, &hidden_out, &keep, &logits_out, &threads))
        return NULL;
    const Model *md = &((ModelObject *)model)->md;
    if (md->layer == NULL) {
        PyErr_SetString(PyExc_ValueError, "native forward: the model was never built");
        return NULL;
    }
    Py_buffer b[8];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    if (take_opt(tokens, &b[0], I64, 0, "tokens") || take_opt(inputs, &b[1], F32, 0, "inputs") ||
        take(positions, &b[2], I64, 0, "positions") || take_opt(visible, &b[3], U8, 0, "visible") ||
        take(keys, &b[4], F32, 1, "keys") || take(values, &b[5], F32, 1, "values") ||
        take_opt(hidden_out, &b[6], F32, 1, "hidden_out") || take_opt(logits_out, &b[7], F32, 1, "logits_out"))
        goto out;
    size_t per_slot = (size_t)md->layers * (size_t)kv_width(md), cache = items_in(&b[4]);
    if (items_in(&b[5]) != cache || cache % per_slot || cache / per_slot > (size_t)INT32_MAX / 2 ||
        b[4].buf == b[5].buf) {
        PyErr_SetString(PyExc_ValueError, "native forward: keys and values are not two [layers, capacity, kv width] caches");
        goto out;
    }
    Pass ps = {.n = (int)(items_in(&b[2]) > MAX_ROWS ? MAX_ROWS + 1 : items_in(&b[2])),
               .tokens = b[0].buf, .inputs = b[1].buf, .positions = b[2].buf, .held = held, .masked_from = masked_from,
               .visible = b[3].buf, .keys = b[4].buf, .values = b[5].buf, .cap = (int)(cache / per_slot),
               .hidden_out = b[6].buf, .keep = keep, .logits_out = b[7].buf,
               .tokens_count = items_in(&b[0]), .inputs_count = items_in(&b[1]), .positions_count = items_in(&b[2]),
               .visible_count = items_in(&b[3]), .cache_count = cache, .hidden_count = items_in(&b[6]),
               .logits_count = items_in(&b[7])};
    const char *why = check_pass(md, &ps);
    if (why) {
        PyErr_Format(PyExc_ValueError, "native forward: %s", why);
        goto out;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    pool_enter();
    FP_PINNED(rc = run_forward(md, &ps, thread_count(threads)));
    settle();
    pool_leave();
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        PyErr_NoMemory();
        goto out;
    }
    result = Py_NewRef(Py_None);
out:
    for (int i = 0; i < 8; i++) release(&b[i]);
    return result;
}

/* matmul(matrix, x, out, threads): out [rows, n] = x [rows, k] @ W^T, x float32 */
static PyObject *py_matmul(PyObject *self, PyObject *args) {
    PyObject *matrix, *x, *out;
    int threads;
    if (!PyArg_ParseTuple(args, "OOOi", &matrix, &x, &out, &threads)) return NULL;
    QMat w;
    if (as_matrix(matrix, &w, "matmul's matrix")) return NULL;
    Py_buffer bx, bo;
    if (take(x, &bx, F32, 0, "matmul's input")) return NULL;
    if (take(out, &bo, F32, 1, "matmul's output")) {
        release(&bx);
        return NULL;
    }
    size_t rows = items_in(&bx) / (size_t)w.k;
    PyObject *result = NULL;
    if (items_in(&bx) != rows * (size_t)w.k || items_in(&bo) != rows * (size_t)w.n || rows > MAX_ROWS) {
        PyErr_SetString(PyExc_ValueError, "native matmul: the input is not [rows, k] or the output not [rows, n]");
        goto out;
    }
    if (rows > 0) {
        XBlock *xq = malloc(sizeof(XBlock) * rows * (size_t)(w.k / BLOCK));
        if (!xq) {
            PyErr_NoMemory();
            goto out;
        }
        const float *xs = bx.buf;
        float *os = bo.buf;
        Py_BEGIN_ALLOW_THREADS
        pool_enter();
        FP_PINNED({
            for (size_t r = 0; r < rows; r++) quantize_row(xs + r * w.k, (int)w.k, xq + r * (w.k / BLOCK));
            matmul(&w, xq, (int)rows, os, thread_count(threads));
        });
        settle();
        pool_leave();
        Py_END_ALLOW_THREADS
        free(xq);
    }
    result = Py_NewRef(Py_None);
out:
    release(&bx);
    release(&bo);
    return result;
}

/* rows(matrix, ids, out): out [len(ids), k] = the matrix's rows `ids` as floats (an embedding's lookup) */
static PyObject *py_rows(PyObject *self, PyObject *args) {
    PyObject *matrix, *ids, *out;
    if (!PyArg_ParseTuple(args, "OOO", &matrix, &ids, &out)) return NULL;
    QMat w;
    if (as_matrix(matrix, &w, "rows' matrix")) return NULL;
    Py_buffer bi, bo;
    if (take(ids, &bi, I64, 0, "row ids")) return NULL;
    if (take(out, &bo, F32, 1, "rows' output")) {
        release(&bi);
        return NULL;
    }
    size_t count = items_in(&bi);
    const int64_t *id = bi.buf;
    PyObject *result = NULL;
    if (items_in(&bo) != count * (size_t)w.k) {
        PyErr_SetString(PyExc_ValueError, "native rows: the output is not [ids, k]");
        goto out;
    }
    for (size_t r = 0; r < count; r++)
        if (id[r] < 0 || id[r] >= w.n) {
            PyErr_SetString(PyExc_ValueError, "native rows: a row id outside the matrix");
            goto out;
        }
    float *o = bo.buf;
    Py_BEGIN_ALLOW_THREADS
    FP_PINNED({
        for (size_t r = 0; r < count; r++) dequantize_row(&w, id[r], o + r * (size_t)w.k);
    });
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
out:
    release(&bi);
    release(&bo);
    return result;
}

/* Whether every thread of a task (the caller and each worker that joins) runs in the default floating-point
 * environment: what FP_PINNED and the workers' start guarantee, whatever the caller's own. */
typedef struct {
    atomic_int bad, ran;
} ProbeTask;

static int default_env(void) {
    if (fegetround() != FE_TONEAREST) return 0;
#if defined(__x86_64__) || defined(__i386__)
    if ((__builtin_ia32_stmxcsr() & 0xFFC0) != 0x1F80) return 0; /* rounding, FTZ, DAZ, masks */
#endif
    return 1;
}

static void probe_task(void *ctx, int ith, int nth) {
    ProbeTask *t = ctx;
    if (!default_env()) atomic_fetch_add(&t->bad, 1);
    atomic_fetch_add(&t->ran, 1);
    for (volatile int i = 0; i < 200000; i++) {} /* long enough that spinning workers join */
}

static PyObject *py_fp_probe(PyObject *self, PyObject *args) {
    int threads;
    if (!PyArg_ParseTuple(args, "i", &threads)) return NULL;
    ProbeTask t = {.bad = 0, .ran = 0};
    Py_BEGIN_ALLOW_THREADS
    pool_enter();
    FP_PINNED(parallel(probe_task, &t, thread_count(threads)));
    settle();
    pool_leave();
    Py_END_ALLOW_THREADS
    return Py_BuildValue("ii", atomic_load(&t.ran), atomic_load(&t.bad));
}

static PyObject *py_cpu_ok(PyObject *self, PyObject *args) {
#if defined(SL_AVX512)
    __builtin_cpu_init();
    int ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#elif defined(SL_AVX2)
    __builtin_cpu_init();
    int ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#elif defined(SL_NEON) && defined(__APPLE__)
    int ok = apple_has("hw.optional.arm.FEAT_DotProd");
#if defined(SL_I8MM)
    ok = ok && apple_has("hw.optional.arm.FEAT_I8MM");
#endif
#elif defined(SL_NEON) && defined(__linux__)
    int ok = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#if defined(SL_I8MM)
    ok = ok && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0;
#endif
#elif defined(SL_NEON)
    int ok = 0; /* no way to ask this system: the generic build runs */
#else
    int ok = 1;
#endif
    return PyBool_FromLong(ok);
}

static PyObject *py_isa(PyObject *self, PyObject *args) {
#if defined(SL_AVX512)
    return PyUnicode_FromString("AVX-512 VNNI");
#elif defined(SL_AVX2)
    return PyUnicode_FromString("AVX2");
#elif defined(SL_I8MM)
    return PyUnicode_FromString("NEON dotprod i8mm");
#elif defined(SL_NEON)
    return PyUnicode_FromString("NEON dotprod");
#else
    return PyUnicode_FromString("generic C");
#endif
}

/* One block type's layout (blocks.h's Layout): {"type", "unit", "bytes", "fields": {name: (offset, bytes)}}. */
static PyObject *layout_of(const Layout *lt) {
    PyObject *fields = PyDict_New();
    if (!fields) return NULL;
    for (int f = 0; f < (int)(sizeof lt->field / sizeof *lt->field) && lt->field[f].name; f++) {
        PyObject *at = Py_BuildValue("(nn)", (Py_ssize_t)lt->field[f].offset, (Py_ssize_t)lt->field[f].bytes);
        if (!at || PyDict_SetItemString(fields, lt->field[f].name, at) < 0) {
            Py_XDECREF(at);
            Py_DECREF(fields);
            return NULL;
        }
        Py_DECREF(at);
    }
    return Py_BuildValue("{s:L,s:i,s:n,s:N}", "type", (long long)lt->type, "unit", lt->unit, "bytes",
                         (Py_ssize_t)lt->bytes, "fields", fields);
}

/* The descriptor's field names (Model's keywords, a layer's keys) and the block types' records (blocks.h's
 * structs: each type's unit, record size and fields), so Python holds no number C does not check. */
static PyObject *py_layout(PyObject *self, PyObject *args) {
    PyObject *model = PyTuple_New(sizeof MODEL_FIELDS / sizeof *MODEL_FIELDS - 1), *layer = PyTuple_New(N_LAYER_FIELDS);
    PyObject *blocks = PyDict_New(), *records = PyDict_New();
    if (!model || !layer || !blocks || !records) goto fail;
    for (Py_ssize_t i = 0; MODEL_FIELDS[i]; i++) PyTuple_SET_ITEM(model, i, PyUnicode_FromString(MODEL_FIELDS[i]));
    for (Py_ssize_t i = 0; i < N_LAYER_FIELDS; i++) PyTuple_SET_ITEM(layer, i, PyUnicode_FromString(LAYER_FIELDS[i]));
    for (int t = 0; t < N_LAYOUTS; t++) {
        PyObject *one = layout_of(&LAYOUTS[t]), *size = PyLong_FromSize_t(LAYOUTS[t].bytes);
        int bad = !one || !size || PyDict_SetItemString(blocks, LAYOUTS[t].name, one) < 0 ||
                  PyDict_SetItemString(records, LAYOUTS[t].name, size) < 0;
        Py_XDECREF(one);
        Py_XDECREF(size);
        if (bad) goto fail;
    }
    return Py_BuildValue("{s:N,s:N,s:N,s:N}", "model", model, "layer", layer, "records", records, "blocks", blocks);
fail:
    Py_XDECREF(model);
    Py_XDECREF(layer);
    Py_XDECREF(blocks);
    Py_XDECREF(records);
    return NULL;
}

static PyMethodDef methods[] = {
    {"forward", py_forward, METH_VARARGS, "the model's pass over n rows"},
    {"matmul", py_matmul, METH_VARARGS, "one quantized linear"},
    {"rows", py_rows, METH_VARARGS, "a matrix's rows as floats"},
    {"fp_probe", py_fp_probe, METH_VARARGS, "(threads that ran a task, those not in the default FP environment)"},
    {"cpu_ok", py_cpu_ok, METH_NOARGS, "whether this build's instructions run on this CPU"},
    {"isa", py_isa, METH_NOARGS, "the instruction set this build uses"},
    {"layout", py_layout, METH_NOARGS, "the descriptor's field names and the record sizes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, SL_STR(SL_MODULE), NULL, -1, methods};

PyMODINIT_FUNC SL_CAT(PyInit_, SL_MODULE)(void) {
    if (PyType_Ready(&MatrixType) < 0 || PyType_Ready(&ModelType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Matrix", (PyObject *)&MatrixType) < 0 ||
        PyModule_AddObjectRef(m, "Model", (PyObject *)&ModelType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
