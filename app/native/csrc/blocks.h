/* What a record of each block type holds, and how a pass reads one block of 32 inputs from it.
 *
 * Every type stores unsigned weight codes q (so vpdpbusd multiplies them by signed activation bytes) and,
 * per channel and block of 32 (or half of one, for Q6_K), the float d and m of w = d q + m. A record covers
 * one panel of 16 channels and one unit of inputs; inside it, a block's codes are in the order vpdpbusd reads
 * them: group g (inputs 4g .. 4g + 3) of channel c is the 32-bit lane c of a 64-byte vector.
 *
 *   Q4_1 (unit 32): nibbles as a GGUF's Q4_1 blocks hold them, d and m float16
 *   Q8_0 (unit 32): codes q + 128, d float16; m = -128 d
 *   Q4_0 (unit 32): nibbles as Q4_1's, d float16; m = -8 d (GGML's w = d (q - 8))
 *   Q5_0 (unit 32): nibbles as Q4_1's, bit 4 of each code as a 64-bit mask a group (Q5_K's bit4 for one
 *                   block), d float16; m = -16 d (GGML's w = d (q - 16))
 *   Q5_1 (unit 32): as Q5_0, with m float16 (w = d q + m)
 *   Q4_K (unit 256): eight blocks' nibbles as Q4_1's, scale and min (6-bit, unpacked from llama.cpp's 12
 *                    bytes to a byte each), d and dmin float16: d = d sc, m = -dmin mn
 *   Q5_K (unit 256): as Q4_K, with bit 4 of each code as a 64-bit mask a block and group (bit c*4 + i)
 *   Q6_K (unit 256): nibbles, bits 4 and 5 as two such masks, scale (int8, one for each 16 inputs), d float16:
 *                    d = d sc, m = -32 d sc for each half
 *
 * The structs below are the layout: every size and offset the kernel reads comes from them (the asserts only
 * check them). Q4_0, Q5_0 and Q5_1 records hold exactly the file's bytes (16 of its blocks: 18, 22, 24
 * bytes each); the codes are unpacked to bytes in registers, never in memory. The K records hold the file's
 * bytes and ~3% more (scales unpacked to a byte each). blocks.py, q5.py and kquants.py pack them. */

/* One struct per record type: its fields' sizes and order are the layout, offsetof is every offset the
 * kernel reads, and layout() hands the same numbers to Python (native/records.py checks its table against
 * them at import). Bytes throughout (float16 as two bytes, masks as eight), so no field is padded or aligned. */
typedef struct {
    uint8_t nibbles[4][PANEL][4]; /* [j][c][i]: input 4j + i low nibble, 16 + 4j + i high */
    uint8_t d[PANEL][2], m[PANEL][2];
} RecordQ4_1;

typedef struct {
    uint8_t codes[8][PANEL][4]; /* [g][c][i]: q + 128 of input 4g + i */
    uint8_t d[PANEL][2];
} RecordQ8_0;

typedef struct {
    uint8_t nibbles[4][PANEL][4]; /* as Q4_1's */
    uint8_t d[PANEL][2];
} RecordQ4_0;

typedef struct {
    uint8_t nibbles[4][PANEL][4]; /* as Q4_1's */
    uint8_t bit4[8][8];           /* [g]: a uint64 whose bit c*4 + i is bit 4 of input 4g + i of channel c */
    uint8_t d[PANEL][2];
} RecordQ5_0;

typedef struct {
    uint8_t nibbles[4][PANEL][4];
    uint8_t bit4[8][8];
    uint8_t d[PANEL][2], m[PANEL][2];
} RecordQ5_1;

typedef struct {
    uint8_t nibbles[8][256]; /* block s as Q4_1's nibbles */
    uint8_t scale[8][PANEL], min[8][PANEL];
    uint8_t d[PANEL][2], dmin[PANEL][2];
} RecordQ4_K;

typedef struct {
    uint8_t nibbles[8][256];
    uint8_t bit4[8][8][8]; /* [s][g]: a uint64 whose bit c*4 + i is bit 4 of input 4g + i of channel c */
    uint8_t scale[8][PANEL], min[8][PANEL];
    uint8_t d[PANEL][2], dmin[PANEL][2];
} RecordQ5_K;

typedef struct {
    uint8_t nibbles[8][256];
    uint8_t bits[8][2][8][8]; /* [s][plane][g]: bit 4 (plane 0) and bit 5 (plane 1), as Q5_K's bit4 */
    int8_t scale[16][PANEL];  /* one for each 16 inputs */
    uint8_t d[PANEL][2];
} RecordQ6_K;

_Static_assert(sizeof(RecordQ4_1) == 320 && offsetof(RecordQ4_1, d) == 256 && offsetof(RecordQ4_1, m) == 288,
               "Q4_1's record");
_Static_assert(sizeof(RecordQ8_0) == 544 && offsetof(RecordQ8_0, d) == 512, "Q8_0's record");
_Static_assert(sizeof(RecordQ4_0) == 16 * 18 && offsetof(RecordQ4_0, d) == 256, "Q4_0's record: 16 GGUF blocks' bytes");
_Static_assert(sizeof(RecordQ5_0) == 16 * 22 && offsetof(RecordQ5_0, bit4) == 256 && offsetof(RecordQ5_0, d) == 320,
               "Q5_0's record: 16 GGUF blocks' bytes");
_Static_assert(sizeof(RecordQ5_1) == 16 * 24 && offsetof(RecordQ5_1, bit4) == 256 && offsetof(RecordQ5_1, d) == 320 &&
               offsetof(RecordQ5_1, m) == 352, "Q5_1's record: 16 GGUF blocks' bytes");
_Static_assert(offsetof(RecordQ4_0, nibbles) == 0 && offsetof(RecordQ5_0, nibbles) == 0 && offsetof(RecordQ5_1, nibbles) == 0 &&
               offsetof(RecordQ5_0, bit4) == offsetof(RecordQ5_1, bit4) && offsetof(RecordQ5_0, d) == offsetof(RecordQ5_1, d),
               "Q5_0's and Q5_1's codes and d in one place");
_Static_assert(sizeof(RecordQ4_K) == 2368 && offsetof(RecordQ4_K, scale) == 2048 && offsetof(RecordQ4_K, d) == 2304,
               "Q4_K's record");
_Static_assert(sizeof(RecordQ5_K) == 2880 && offsetof(RecordQ5_K, bit4) == 2048 && offsetof(RecordQ5_K, scale) == 2560,
               "Q5_K's record");
_Static_assert(sizeof(RecordQ6_K) == 3360 && offsetof(RecordQ6_K, bits) == 2048 && offsetof(RecordQ6_K, scale) == 3072 &&
               offsetof(RecordQ6_K, d) == 3328, "Q6_K's record");
/* What the vector loads assume: a block's nibbles (or codes) start the record, one block after another. */
_Static_assert(offsetof(RecordQ4_1, nibbles) == 0 && offsetof(RecordQ8_0, codes) == 0 && offsetof(RecordQ4_K, nibbles) == 0 &&
               offsetof(RecordQ5_K, nibbles) == 0 && offsetof(RecordQ6_K, nibbles) == 0, "codes first");
_Static_assert(offsetof(RecordQ4_K, dmin) - offsetof(RecordQ4_K, scale) == offsetof(RecordQ5_K, dmin) - offsetof(RecordQ5_K, scale) &&
               offsetof(RecordQ4_K, min) - offsetof(RecordQ4_K, scale) == offsetof(RecordQ5_K, min) - offsetof(RecordQ5_K, scale) &&
               offsetof(RecordQ4_K, d) - offsetof(RecordQ4_K, scale) == offsetof(RecordQ5_K, d) - offsetof(RecordQ5_K, scale),
               "Q4_K's and Q5_K's scale fields in one order");

/* The table layout() returns: each type's unit, record size and fields (offset, bytes), from the structs. */
typedef struct {
    const char *name;
    size_t offset, bytes;
} Field;

typedef struct {
    int64_t type;
    const char *name;
    int unit;
    size_t bytes;
    Field field[6]; /* up to the first with no name */
} Layout;

#define FIELD(T, f) {.name = #f, .offset = offsetof(T, f), .bytes = sizeof(((T *)0)->f)}
static const Layout LAYOUTS[] = {
    {.type = Q4_1, .name = "Q4_1", .unit = 32, .bytes = sizeof(RecordQ4_1),
     .field = {FIELD(RecordQ4_1, nibbles), FIELD(RecordQ4_1, d), FIELD(RecordQ4_1, m)}},
    {.type = Q8_0, .name = "Q8_0", .unit = 32, .bytes = sizeof(RecordQ8_0),
     .field = {FIELD(RecordQ8_0, codes), FIELD(RecordQ8_0, d)}},
    {.type = Q4_0, .name = "Q4_0", .unit = 32, .bytes = sizeof(RecordQ4_0),
     .field = {FIELD(RecordQ4_0, nibbles), FIELD(RecordQ4_0, d)}},
    {.type = Q5_0, .name = "Q5_0", .unit = 32, .bytes = sizeof(RecordQ5_0),
     .field = {FIELD(RecordQ5_0, nibbles), FIELD(RecordQ5_0, bit4), FIELD(RecordQ5_0, d)}},
    {.type = Q5_1, .name = "Q5_1", .unit = 32, .bytes = sizeof(RecordQ5_1),
     .field = {FIELD(RecordQ5_1, nibbles), FIELD(RecordQ5_1, bit4), FIELD(RecordQ5_1, d), FIELD(RecordQ5_1, m)}},
    {.type = Q4_K, .name = "Q4_K", .unit = 256, .bytes = sizeof(RecordQ4_K),
     .field = {FIELD(RecordQ4_K, nibbles), FIELD(RecordQ4_K, scale), FIELD(RecordQ4_K, min), FIELD(RecordQ4_K, d),
               FIELD(RecordQ4_K, dmin)}},
    {.type = Q5_K, .name = "Q5_K", .unit = 256, .bytes = sizeof(RecordQ5_K),
     .field = {FIELD(RecordQ5_K, nibbles), FIELD(RecordQ5_K, bit4), FIELD(RecordQ5_K, scale), FIELD(RecordQ5_K, min),
               FIELD(RecordQ5_K, d), FIELD(RecordQ5_K, dmin)}},
    {.type = Q6_K, .name = "Q6_K", .unit = 256, .bytes = sizeof(RecordQ6_K),
     .field = {FIELD(RecordQ6_K, nibbles), FIELD(RecordQ6_K, bits), FIELD(RecordQ6_K, scale), FIELD(RecordQ6_K, d)}},
};
#undef FIELD
#define N_LAYOUTS ((int)(sizeof LAYOUTS / sizeof *LAYOUTS))

static int unit_of(int64_t type) { return type == Q4_K || type == Q5_K || type == Q6_K ? 256 : 32; }

static size_t record_bytes_of(int64_t type) {
    switch (type) {
    case Q4_1: return sizeof(RecordQ4_1);
    case Q8_0: return sizeof(RecordQ8_0);
    case Q4_0: return sizeof(RecordQ4_0);
    case Q5_0: return sizeof(RecordQ5_0);
    case Q5_1: return sizeof(RecordQ5_1);
    case Q4_K: return sizeof(RecordQ4_K);
    case Q5_K: return sizeof(RecordQ5_K);
    case Q6_K: return sizeof(RecordQ6_K);
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

/* A field of Q4_K's or Q5_K's record (the same order in both: asserted above). */
#define K_FIELD(type, f) ((type) == Q4_K ? offsetof(RecordQ4_K, f) : offsetof(RecordQ5_K, f))

/* Whether a type's codes have a bit 4 held as masks (plane 0): Q5_0, Q5_1, Q5_K (Q6_K: planes 0 and 1). */
static int has_bit4(int64_t type) { return type == Q5_0 || type == Q5_1 || type == Q5_K; }

/* Offset of Q5_0's, Q5_1's or Q5_K's bit-4 mask (plane 0) or Q6_K's plane `plane` mask for group g of block
 * sub (Q5_0's and Q5_1's records hold one block: sub is 0). */
static size_t mask_at(int64_t type, int sub, int plane, int g) {
    if (type == Q5_0 || type == Q5_1) return offsetof(RecordQ5_0, bit4) + (size_t)g * 8;
    return type == Q5_K ? offsetof(RecordQ5_K, bit4) + ((size_t)sub * 8 + g) * 8
                        : offsetof(RecordQ6_K, bits) + (((size_t)sub * 2 + plane) * 8 + g) * 8;
}

/* Code q of input i (0..31) of channel c in block `sub` of record `rec`. */
static int code_of(int64_t type, const uint8_t *rec, int sub, int c, int i) {
    int g = i / 4, lane = c * 4 + i % 4;
    if (type == Q8_0) return rec[offsetof(RecordQ8_0, codes) + g * 64 + lane];
    const uint8_t *nib = rec + (size_t)sub * 256;
    int byte = nib[(g % 4) * 64 + lane], q = g < 4 ? byte & 15 : byte >> 4;
    if (has_bit4(type)) q |= (int)((load64(rec + mask_at(type, sub, 0, g)) >> lane) & 1) << 4;
    if (type == Q6_K) {
        q |= (int)((load64(rec + mask_at(type, sub, 0, g)) >> lane) & 1) << 4;
        q |= (int)((load64(rec + mask_at(type, sub, 1, g)) >> lane) & 1) << 5;
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
        *d = f16_at(rec + offsetof(RecordQ4_1, d) + 2 * c), *m = f16_at(rec + offsetof(RecordQ4_1, m) + 2 * c);
        return;
    case Q8_0:
        *d = f16_at(rec + offsetof(RecordQ8_0, d) + 2 * c), *m = -128.0f * *d;
        return;
    case Q4_0:
        *d = f16_at(rec + offsetof(RecordQ4_0, d) + 2 * c), *m = -8.0f * *d;
        return;
    case Q5_0:
        *d = f16_at(rec + offsetof(RecordQ5_0, d) + 2 * c), *m = -16.0f * *d;
        return;
    case Q5_1:
        *d = f16_at(rec + offsetof(RecordQ5_1, d) + 2 * c), *m = f16_at(rec + offsetof(RecordQ5_1, m) + 2 * c);
        return;
    case Q4_K:
    case Q5_K:
        *d = f16_at(rec + K_FIELD(type, d) + 2 * c) * (float)rec[K_FIELD(type, scale) + (size_t)sub * 16 + c];
        *m = -(f16_at(rec + K_FIELD(type, dmin) + 2 * c) * (float)rec[K_FIELD(type, min) + (size_t)sub * 16 + c]);
        return;
    default: { /* Q6_K */
        float s = (float)(int8_t)rec[offsetof(RecordQ6_K, scale) + ((size_t)sub * 2 + half) * 16 + c];
        *d = f16_at(rec + offsetof(RecordQ6_K, d) + 2 * c) * s;
        *m = -32.0f * *d;
        return;
    }
    }
}
