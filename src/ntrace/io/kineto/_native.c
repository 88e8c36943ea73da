/* The native decode path: a Kineto `traceEvents` array parsed straight into Arrow columns, with no Python object per value.

   It reads the well-formed common case only and says so: anything outside it (a value of a type
   the typed decoder would reject, a key written with escapes, a repeated key, a number with an
   exponent in a time, an integer beyond int64, nesting deeper than MAX_DEPTH, any JSON error)
   makes `decode` return None, and the caller decodes the text with the msgspec path, which gives
   the reference answer for it. So where this module answers, it answers as the msgspec path
   does (tests/io/kineto/test_native.py checks that on generated and real traces), and where it
   does not, nothing changes.

   Times are read from their digits into int64 ns (three decimals, the rest rounded half to even,
   as the Decimal(38, 3) cast of _frame.text_ns does); a time whose ns do not fit int64 is null
   and flagged as dropped. Text is built as Arrow string views (Polars' own layout), and the
   columns go to Polars through the Arrow C data interface (`__arrow_c_array__`), which hands
   over the buffers without copying them. Parsing runs without the GIL, so two threads can
   decode two parts of one array at once. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- The Arrow C data interface (https://arrow.apache.org/docs/format/CDataInterface.html) ---- */

#define ARROW_FLAG_NULLABLE 2

struct ArrowSchema {
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;
    void (*release)(struct ArrowSchema *);
    void *private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;
    void (*release)(struct ArrowArray *);
    void *private_data;
};

/* ---- Growable columns ---- */

enum Kind { K_I64, K_STR, K_BOOL };

/* Bytes one data buffer of a text column holds at most: a string view addresses it with an int32 offset. */
#define VIEW_BUFFER_MAX ((int64_t)1 << 30)

typedef struct {
    int kind;
    int64_t n, cap, nulls;
    uint8_t *valid; /* one bit per row, 1 = present */
    void *data;     /* K_I64: int64 values; K_STR: 16-byte string views (Arrow's Utf8View); K_BOOL: bits */
    char **bufs;    /* K_STR: the data buffers holding the texts longer than 12 bytes (shorter ones sit in their view) */
    int64_t *sizes; /* K_STR: bytes used in each buffer */
    int64_t nbufs, last_cap; /* K_STR: buffers made; capacity of the last */
} Col;

static int col_init(Col *c, int kind) {
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->cap = 1024;
    c->valid = calloc((size_t)(c->cap / 8), 1);
    if (kind == K_I64) c->data = malloc((size_t)c->cap * 8);
    else if (kind == K_STR) c->data = malloc((size_t)c->cap * 16);
    else c->data = calloc((size_t)(c->cap / 8), 1);
    return c->valid && c->data;
}

static void col_free(Col *c) {
    for (int64_t i = 0; i < c->nbufs; i++) free(c->bufs[i]);
    free(c->bufs);
    free(c->sizes);
    free(c->valid);
    free(c->data);
    memset(c, 0, sizeof *c);
}

/* Room for one more row: capacities double, bit buffers grow with them (zeroed). */
static int col_reserve(Col *c) {
    if (c->n < c->cap) return 1;
    int64_t cap = c->cap * 2;
    uint8_t *valid = realloc(c->valid, (size_t)(cap / 8));
    if (!valid) return 0;
    memset(valid + c->cap / 8, 0, (size_t)((cap - c->cap) / 8));
    c->valid = valid;
    void *data;
    if (c->kind == K_I64) data = realloc(c->data, (size_t)cap * 8);
    else if (c->kind == K_STR) data = realloc(c->data, (size_t)cap * 16);
    else {
        data = realloc(c->data, (size_t)(cap / 8));
        if (data) memset((uint8_t *)data + c->cap / 8, 0, (size_t)((cap - c->cap) / 8));
    }
    if (!data) return 0;
    c->data = data;
    c->cap = cap;
    return 1;
}

/* Room for `len` more bytes in the last data buffer of a text column: it grows (doubling, up to VIEW_BUFFER_MAX), or a new one starts. */
static int col_room(Col *c, int64_t len) {
    int64_t last = c->nbufs - 1;
    if (c->nbufs && c->sizes[last] + len <= c->last_cap) return 1;
    if (c->nbufs && c->sizes[last] + len <= VIEW_BUFFER_MAX) {
        int64_t cap = c->last_cap * 2;
        if (cap < c->sizes[last] + len) cap = c->sizes[last] + len;
        if (cap > VIEW_BUFFER_MAX) cap = VIEW_BUFFER_MAX;
        char *buf = realloc(c->bufs[last], (size_t)cap);
        if (!buf) return 0;
        c->bufs[last] = buf;
        c->last_cap = cap;
        return 1;
    }
    char **bufs = realloc(c->bufs, (size_t)(c->nbufs + 1) * sizeof *bufs);
    if (!bufs) return 0;
    c->bufs = bufs;
    int64_t *sizes = realloc(c->sizes, (size_t)(c->nbufs + 1) * sizeof *sizes);
    if (!sizes) return 0;
    c->sizes = sizes;
    int64_t cap = len > (1 << 16) ? len : (1 << 16);
    if (!(c->bufs[c->nbufs] = malloc((size_t)cap))) return 0;
    c->sizes[c->nbufs++] = 0;
    c->last_cap = cap;
    return 1;
}

static inline void set_bit(uint8_t *bits, int64_t i) { bits[i >> 3] |= (uint8_t)(1u << (i & 7)); }

static inline void col_i64(Col *c, int present, int64_t v) {
    ((int64_t *)c->data)[c->n] = present ? v : 0;
    if (present) set_bit(c->valid, c->n);
    else c->nulls++;
    c->n++;
}

static inline void col_bool(Col *c, int v) {
    if (v) set_bit((uint8_t *)c->data, c->n);
    set_bit(c->valid, c->n);
    c->n++;
}

/* Append a text (or null) as a string view: up to 12 bytes inside the view, longer ones in a data buffer it points at. */
static int col_str(Col *c, int present, const char *s, int64_t len) {
    uint8_t *view = (uint8_t *)c->data + c->n * 16;
    memset(view, 0, 16);
    if (present) {
        if (len > VIEW_BUFFER_MAX) return 0;
        int32_t size = (int32_t)len;
        memcpy(view, &size, 4);
        if (len <= 12) {
            memcpy(view + 4, s, (size_t)len);
        } else {
            if (!col_room(c, len)) return 0;
            int32_t index = (int32_t)(c->nbufs - 1), offset = (int32_t)c->sizes[c->nbufs - 1];
            memcpy(c->bufs[index] + offset, s, (size_t)len);
            c->sizes[index] += len;
            memcpy(view + 4, s, 4);
            memcpy(view + 8, &index, 4);
            memcpy(view + 12, &offset, 4);
        }
        set_bit(c->valid, c->n);
    } else {
        c->nulls++;
    }
    c->n++;
    return 1;
}

/* ---- The columns, in the order `decode` returns them ---- */

enum {
    C_PH, C_CAT, C_NAME, C_BP, C_PID, C_TID, C_TS, C_TS_DROPPED, C_DUR, C_DUR_DROPPED, C_ID,
    C_EXTERNAL_ID, C_CORRELATION, C_STREAM, C_DEVICE, C_SEQUENCE, C_BYTES,
    C_MEM_BYTES, C_MEM_ALLOCATED, C_MEM_RESERVED, C_MEM_ADDR, C_MEM_DEVICE_TYPE, C_MEM_DEVICE_ID,
    C_INPUT_DIMS, C_MODEL, N_COLS
};

static const int KINDS[N_COLS] = {
    K_STR, K_STR, K_STR, K_STR, K_STR, K_STR, K_I64, K_BOOL, K_I64, K_BOOL, K_I64,
    K_I64, K_I64, K_I64, K_I64, K_I64, K_I64,
    K_I64, K_I64, K_I64, K_I64, K_I64, K_I64,
    K_STR, K_STR,
};

/* The integer keys of `args`, in the column order from C_EXTERNAL_ID. */
#define N_ARG_INTS 12
#define N_KEYS (1 + N_ARG_INTS)
static const char *ARG_INTS[N_ARG_INTS] = {
    "External id", "correlation", "stream", "device", "Sequence number", "bytes",
    "Bytes", "Total Allocated", "Total Reserved", "Addr", "Device Type", "Device Id",
};

static int64_t ARG_LENS[N_ARG_INTS]; /* strlen of each, set when the module loads */

/* ---- One event's values while it is parsed ---- */

typedef struct {
    int present;     /* given and not null */
    const char *s;   /* points into the text, or into `own` when the string held escapes */
    int64_t len;
    char *own;       /* decoded text of a string with escapes */
    int64_t owncap;
} Str;

typedef struct {
    int state; /* 0: absent or null; 1: a value; 2: a number whose ns do not fit int64 (dropped) */
    int64_t v;
} Time;

typedef struct {
    Str ph, cat, name, bp, model, input_dims;
    int pid_kind, tid_kind; /* 0 null, 1 int, 2 text */
    int64_t pid_i, tid_i;
    Str pid_s, tid_s;
    Time ts, dur;
    /* the linking keys: "id", then ARG_INTS; each null (0), an integer (1) or a text (2) */
    int key_kind[N_KEYS];
    int64_t key[N_KEYS];
    Str key_s[N_KEYS];
} Event;

typedef struct {
    const uint8_t *p, *end;
    Col cols[N_COLS];
    Col *texts[N_KEYS]; /* the linking keys given as text, row by row; made at the first such value */
    int64_t rows;
    Event ev;
    char *dims; /* scratch for compacting Input Dims */
    int64_t dimscap;
    int oom;
    int64_t *progress; /* where the bytes parsed so far are stored as parsing goes (NULL: nowhere) */
} Parser;

#define MAX_DEPTH 64

/* Bytes a string holds as they are: printable ASCII but the quote and the backslash (set when the module loads). */
static uint8_t PLAIN[256];

static inline int is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static inline void skip_ws(Parser *ps) {
    while (ps->p < ps->end && is_ws(*ps->p)) ps->p++;
}

static int hex4(const uint8_t *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* The length of the valid UTF-8 sequence at p (lead byte >= 0x80), or 0 when it is not one. */
static int utf8_len(const uint8_t *p, const uint8_t *end) {
    uint8_t c = p[0];
    int n;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if (end - p < n) return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    return n;
}

static int own_put(Parser *ps, Str *s, const void *bytes, int64_t len) {
    if (len == 0) return 1;
    if (s->len + len > s->owncap) {
        int64_t cap = s->owncap ? s->owncap : 64;
        while (cap < s->len + len) cap *= 2;
        char *own = realloc(s->own, (size_t)cap);
        if (!own) { ps->oom = 1; return 0; }
        s->own = own;
        s->owncap = cap;
    }
    memcpy(s->own + s->len, bytes, (size_t)len);
    s->len += len;
    return 1;
}

/* Parse the escape at ps->p (its backslash); with `out`, append its UTF-8. Surrogates must pair. */
static int escape(Parser *ps, Str *out) {
    const uint8_t *p = ps->p + 1;
    if (p >= ps->end) return 0;
    char one;
    switch (*p) {
    case '"': one = '"'; break;
    case '\\': one = '\\'; break;
    case '/': one = '/'; break;
    case 'b': one = '\b'; break;
    case 'f': one = '\f'; break;
    case 'n': one = '\n'; break;
    case 'r': one = '\r'; break;
    case 't': one = '\t'; break;
    case 'u': {
        uint32_t cp, lo;
        if (ps->end - p < 5 || !hex4(p + 1, &cp)) return 0;
        p += 5;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return 0;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (ps->end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) return 0;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        }
        ps->p = p;
        if (!out) return 1;
        uint8_t u[4];
        int n;
        if (cp < 0x80) {
            u[0] = (uint8_t)cp;
            n = 1;
        } else if (cp < 0x800) {
            u[0] = (uint8_t)(0xC0 | (cp >> 6));
            u[1] = (uint8_t)(0x80 | (cp & 0x3F));
            n = 2;
        } else if (cp < 0x10000) {
            u[0] = (uint8_t)(0xE0 | (cp >> 12));
            u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (uint8_t)(0x80 | (cp & 0x3F));
            n = 3;
        } else {
            u[0] = (uint8_t)(0xF0 | (cp >> 18));
            u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
            u[3] = (uint8_t)(0x80 | (cp & 0x3F));
            n = 4;
        }
        return own_put(ps, out, u, n);
    }
    default: return 0;
    }
    ps->p = p + 1;
    return out ? own_put(ps, out, &one, 1) : 1;
}

/* A string (ps->p at its opening quote) kept as `out`: UTF-8 checked; with escapes, decoded into out->own. */
static int read_string(Parser *ps, Str *out) {
    const uint8_t *start = ++ps->p, *run = start;
    int escaped = 0;
    out->len = 0;
    out->present = 1;
    while (ps->p < ps->end) {
        while (ps->p < ps->end && PLAIN[*ps->p]) ps->p++;
        if (ps->p >= ps->end) break;
        uint8_t c = *ps->p;
        if (c == '"') {
            if (escaped) {
                if (!own_put(ps, out, run, ps->p - run)) return 0;
                out->s = out->own;
            } else {
                out->s = (const char *)start;
                out->len = ps->p - start;
            }
            ps->p++;
            return 1;
        }
        if (c < 0x20) return 0;
        if (c == '\\') {
            if (!own_put(ps, out, run, ps->p - run) || !escape(ps, out)) return 0;
            escaped = 1;
            run = ps->p;
        } else if (c >= 0x80) {
            int n = utf8_len(ps->p, ps->end);
            if (!n) return 0;
            ps->p += n;
        } else {
            ps->p++;
        }
    }
    return 0;
}

/* Skip a string (ps->p at its opening quote). As msgspec does for values it skips, the bytes are not checked as UTF-8; escapes are. */
static int skip_string(Parser *ps) {
    ps->p++;
    while (ps->p < ps->end) {
        while (ps->p < ps->end && (PLAIN[*ps->p] || *ps->p >= 0x80)) ps->p++;
        if (ps->p >= ps->end) break;
        uint8_t c = *ps->p;
        if (c == '"') { ps->p++; return 1; }
        if (c < 0x20) return 0;
        if (c == '\\') {
            if (!escape(ps, NULL)) return 0;
            continue;
        }
        ps->p++;
    }
    return 0;
}

/* Skip a number, checking the JSON grammar. */
static int skip_number(Parser *ps) {
    const uint8_t *p = ps->p, *e = ps->end;
    if (p < e && *p == '-') p++;
    if (p >= e) return 0;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (p < e && *p >= '0' && *p <= '9') p++;
    else return 0;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9') return 0;
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || *p < '0' || *p > '9') return 0;
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    ps->p = p;
    return 1;
}

static int literal(Parser *ps, const char *word, size_t n) {
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return 0;
    ps->p += n;
    return 1;
}

/* Skip any JSON value, without recursion; nesting deeper than MAX_DEPTH is refused. */
static int skip_value(Parser *ps) {
    char stack[MAX_DEPTH]; /* '{' or '[' per open container */
    int depth = 0;
    for (;;) {
        skip_ws(ps);
        if (ps->p >= ps->end) return 0;
        uint8_t c = *ps->p;
        if (c == '{' || c == '[') {
            if (depth == MAX_DEPTH) return 0;
            stack[depth++] = (char)c;
            ps->p++;
            skip_ws(ps);
            if (ps->p < ps->end && *ps->p == (c == '{' ? '}' : ']')) {
                ps->p++;
                depth--;
            } else if (c == '{') {
                if (ps->p >= ps->end || *ps->p != '"' || !skip_string(ps)) return 0;
                skip_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') return 0;
                ps->p++;
                continue;
            } else {
                continue;
            }
        } else if (c == '"') {
            if (!skip_string(ps)) return 0;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            if (!skip_number(ps)) return 0;
        } else if (c == 't') {
            if (!literal(ps, "true", 4)) return 0;
        } else if (c == 'f') {
            if (!literal(ps, "false", 5)) return 0;
        } else if (c == 'n') {
            if (!literal(ps, "null", 4)) return 0;
        } else {
            return 0;
        }
        /* a value ended: close containers or move to the next member */
        for (;;) {
            if (depth == 0) return 1;
            skip_ws(ps);
            if (ps->p >= ps->end) return 0;
            char open = stack[depth - 1];
            if (*ps->p == ',') {
                ps->p++;
                if (open == '{') {
                    skip_ws(ps);
                    if (ps->p >= ps->end || *ps->p != '"' || !skip_string(ps)) return 0;
                    skip_ws(ps);
                    if (ps->p >= ps->end || *ps->p != ':') return 0;
                    ps->p++;
                }
                break;
            }
            if (*ps->p == (open == '{' ? '}' : ']')) {
                ps->p++;
                depth--;
                continue;
            }
            return 0;
        }
    }
}

static int read_int(Parser *ps, int *has, int64_t *out);

/* A linking key: an integer int64 holds, a text (parsed later, as _frame.key_ints does), or null. */
static int read_key_value(Parser *ps, int k) {
    Event *ev = &ps->ev;
    if (ps->p < ps->end && *ps->p == '"') {
        if (!read_string(ps, &ev->key_s[k])) return 0;
        ev->key_kind[k] = 2;
        return 1;
    }
    int has;
    if (!read_int(ps, &has, &ev->key[k])) return 0;
    ev->key_kind[k] = has;
    return 1;
}

/* An integer that int64 holds (no fraction, no exponent), or null. Returns 1 with *has set, 0 to refuse. */
static int read_int(Parser *ps, int *has, int64_t *out) {
    const uint8_t *p = ps->p, *e = ps->end;
    if (p < e && *p == 'n') {
        if (!literal(ps, "null", 4)) return 0;
        *has = 0;
        return 1;
    }
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (p >= e || *p < '0' || *p > '9') return 0;
    uint64_t v = 0;
    if (*p == '0') p++;
    else {
        while (p < e && *p >= '0' && *p <= '9') {
            uint64_t d = (uint64_t)(*p - '0');
            if (v > (UINT64_MAX - d) / 10) return 0;
            v = v * 10 + d;
            p++;
        }
    }
    if (p < e && (*p == '.' || *p == 'e' || *p == 'E')) return 0; /* a float: the typed decoder refuses it */
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return 0;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    *has = 1;
    ps->p = p;
    return 1;
}

/* A time in µs (a JSON number without exponent, or null) as ns: three decimals, the rest rounded half to even. */
static int read_time(Parser *ps, Time *t) {
    const uint8_t *p = ps->p, *e = ps->end;
    if (p < e && *p == 'n') {
        if (!literal(ps, "null", 4)) return 0;
        t->state = 0;
        return 1;
    }
    int neg = 0;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (p >= e || *p < '0' || *p > '9') return 0;
    unsigned __int128 mag = 0;
    int big = 0; /* more integer digits than any int64 of ns can have */
    int digits = 0;
    if (*p == '0') p++;
    else {
        while (p < e && *p >= '0' && *p <= '9') {
            if (++digits > 20) big = 1;
            else mag = mag * 10 + (unsigned)(*p - '0');
            p++;
        }
    }
    mag *= 1000;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9') return 0;
        unsigned scale = 100;
        int first_rest = -1, rest_nonzero = 0;
        int n = 0;
        while (p < e && *p >= '0' && *p <= '9') {
            unsigned d = (unsigned)(*p - '0');
            if (n < 3) {
                mag += d * scale;
                scale /= 10;
            } else if (n == 3) {
                first_rest = (int)d;
            }
            else if (d) rest_nonzero = 1;
            n++;
            p++;
        }
        if (first_rest > 5 || (first_rest == 5 && (rest_nonzero || (mag & 1)))) mag += 1;
    }
    if (p < e && (*p == 'e' || *p == 'E')) return 0;
    ps->p = p;
    if (big || (neg ? mag > (unsigned __int128)INT64_MAX + 1 : mag > (unsigned __int128)INT64_MAX)) {
        t->state = 2;
        return 1;
    }
    t->state = 1;
    t->v = neg ? (int64_t)(0 - (uint64_t)mag) : (int64_t)(uint64_t)mag;
    return 1;
}

/* A text value (string) or null. */
static int read_text(Parser *ps, Str *s) {
    if (ps->p < ps->end && *ps->p == '"') {
        return read_string(ps, s);
    }
    if (!literal(ps, "null", 4)) return 0;
    s->present = 0;
    return 1;
}

/* pid/tid: an integer int64 holds, a string, or null. */
static int read_id(Parser *ps, int *kind, int64_t *i, Str *s) {
    if (ps->p < ps->end && *ps->p == '"') {
        if (!read_string(ps, s)) return 0;
        *kind = 2;
        return 1;
    }
    int has;
    if (!read_int(ps, &has, i)) return 0;
    *kind = has ? 1 : 0;
    return 1;
}

/* A key (ps->p at its quote) without escapes, then the colon; sets *k and *n. */
static int read_key(Parser *ps, const char **k, int64_t *n) {
    const uint8_t *start = ++ps->p;
    while (ps->p < ps->end && (PLAIN[*ps->p] || *ps->p >= 0x80)) ps->p++;
    if (ps->p >= ps->end || *ps->p != '"') return 0; /* an escape or a control character: refused */
    *k = (const char *)start;
    *n = ps->p - start;
    ps->p++;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') return 0;
    ps->p++;
    skip_ws(ps);
    return 1;
}

#define KEY(lit) (n == (int64_t)(sizeof(lit) - 1) && memcmp(k, lit, sizeof(lit) - 1) == 0)

/* Input Dims: any JSON value, kept as its text without whitespace (as _frame.shapes_text makes it); text that is not ASCII is refused. */
static int read_dims(Parser *ps) {
    const uint8_t *start = ps->p;
    if (!skip_value(ps)) return 0;
    int64_t len = ps->p - start;
    if (len > ps->dimscap) {
        char *d = realloc(ps->dims, (size_t)len);
        if (!d) { ps->oom = 1; return 0; }
        ps->dims = d;
        ps->dimscap = len;
    }
    int64_t m = 0;
    for (const uint8_t *q = start; q < ps->p; q++) {
        if (*q >= 0x80) return 0;
        if (!is_ws(*q)) ps->dims[m++] = (char)*q;
    }
    ps->ev.input_dims.present = 1;
    ps->ev.input_dims.s = ps->dims;
    ps->ev.input_dims.len = m;
    return 1;
}

static int parse_args(Parser *ps) {
    Event *ev = &ps->ev;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') { ps->p++; return 1; }
    uint32_t seen = 0;
    for (;;) {
        if (ps->p >= ps->end || *ps->p != '"') return 0;
        const char *k;
        int64_t n;
        if (!read_key(ps, &k, &n)) return 0;
        int slot = -1;
        for (int i = 0; i < N_ARG_INTS; i++) {
            if (n == ARG_LENS[i] && memcmp(k, ARG_INTS[i], (size_t)n) == 0) { slot = i; break; }
        }
        if (slot >= 0) {
            if (seen & (1u << slot)) return 0;
            seen |= 1u << slot;
            if (!read_key_value(ps, 1 + slot)) return 0;
        } else if (KEY("model_name")) {
            if (seen & (1u << 20)) return 0;
            seen |= 1u << 20;
            if (!read_text(ps, &ev->model)) return 0;
        } else if (KEY("Input Dims")) {
            if (seen & (1u << 21)) return 0;
            seen |= 1u << 21;
            if (!read_dims(ps)) return 0;
        } else if (!skip_value(ps)) {
            return 0;
        }
        skip_ws(ps);
        if (ps->p >= ps->end) return 0;
        if (*ps->p == '}') { ps->p++; return 1; }
        if (*ps->p != ',') return 0;
        ps->p++;
        skip_ws(ps);
    }
}

static void event_reset(Event *ev) {
    ev->ph.present = ev->cat.present = ev->name.present = ev->bp.present = ev->model.present = ev->input_dims.present = 0;
    ev->pid_kind = ev->tid_kind = 0;
    ev->ts.state = ev->dur.state = 0;
    memset(ev->key_kind, 0, sizeof ev->key_kind);
}

/* One event object (ps->p at its `{`). */
static int parse_event(Parser *ps) {
    Event *ev = &ps->ev;
    event_reset(ev);
    ps->p++;
    skip_ws(ps);
    uint32_t seen = 0;
    if (ps->p < ps->end && *ps->p == '}') ps->p++;
    else for (;;) {
        if (ps->p >= ps->end || *ps->p != '"') return 0;
        const char *k;
        int64_t n;
        if (!read_key(ps, &k, &n)) return 0;
        int bit = -1, ok;
        if (KEY("ph")) { bit = 0; ok = ps->p < ps->end && *ps->p == '"' && read_string(ps, &ev->ph); }
        else if (KEY("name")) { bit = 6; ok = read_text(ps, &ev->name); }
        else if (KEY("cat")) { bit = 5; ok = read_text(ps, &ev->cat); }
        else if (KEY("pid")) { bit = 1; ok = read_id(ps, &ev->pid_kind, &ev->pid_i, &ev->pid_s); }
        else if (KEY("tid")) { bit = 2; ok = read_id(ps, &ev->tid_kind, &ev->tid_i, &ev->tid_s); }
        else if (KEY("ts")) { bit = 3; ok = read_time(ps, &ev->ts); }
        else if (KEY("dur")) { bit = 4; ok = read_time(ps, &ev->dur); }
        else if (KEY("args")) { bit = 9; ok = ps->p < ps->end && *ps->p == '{' ? parse_args(ps) : literal(ps, "null", 4); }
        else if (KEY("id")) { bit = 7; ok = read_key_value(ps, 0); }
        else if (KEY("bp")) { bit = 8; ok = read_text(ps, &ev->bp); }
        else ok = skip_value(ps);
        if (!ok) return 0;
        if (bit >= 0) {
            if (seen & (1u << bit)) return 0; /* a repeated key: the typed decoder keeps the last, this path refuses */
            seen |= 1u << bit;
        }
        skip_ws(ps);
        if (ps->p >= ps->end) return 0;
        if (*ps->p == '}') { ps->p++; break; }
        if (*ps->p != ',') return 0;
        ps->p++;
        skip_ws(ps);
    }
    if (!(seen & 1)) { ev->ph.s = ""; ev->ph.len = 0; ev->ph.present = 1; }
    return 1;
}

static int put_id(Col *c, int kind, int64_t i, const Str *s) {
    if (kind == 1) { /* the integer's decimal digits, as Python prints it */
        char buf[24], *q = buf + sizeof buf;
        uint64_t v = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
        do {
            *--q = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        if (i < 0) *--q = '-';
        return col_str(c, 1, q, buf + sizeof buf - q);
    }
    if (kind == 2) return col_str(c, 1, s->s, s->len);
    return col_str(c, 0, NULL, 0);
}

/* Append the parsed event to every column. */
static int emit(Parser *ps) {
    Event *ev = &ps->ev;
    Col *c = ps->cols;
    if (c[0].n == c[0].cap) /* the columns grow in step: one is full when all are */
        for (int i = 0; i < N_COLS; i++)
            if (!col_reserve(&c[i])) return 0;
    int ok = col_str(&c[C_PH], 1, ev->ph.s, ev->ph.len)
        && col_str(&c[C_CAT], ev->cat.present, ev->cat.s, ev->cat.len)
        && col_str(&c[C_NAME], ev->name.present, ev->name.s, ev->name.len)
        && col_str(&c[C_BP], ev->bp.present, ev->bp.s, ev->bp.len)
        && put_id(&c[C_PID], ev->pid_kind, ev->pid_i, &ev->pid_s)
        && put_id(&c[C_TID], ev->tid_kind, ev->tid_i, &ev->tid_s)
        && col_str(&c[C_INPUT_DIMS], ev->input_dims.present, ev->input_dims.s, ev->input_dims.len)
        && col_str(&c[C_MODEL], ev->model.present, ev->model.s, ev->model.len);
    if (!ok) return 0;
    col_i64(&c[C_TS], ev->ts.state == 1, ev->ts.v);
    col_bool(&c[C_TS_DROPPED], ev->ts.state == 2);
    col_i64(&c[C_DUR], ev->dur.state == 1, ev->dur.v);
    col_bool(&c[C_DUR_DROPPED], ev->dur.state == 2);
    for (int k = 0; k < N_KEYS; k++) {
        col_i64(&c[C_ID + k], ev->key_kind[k] == 1, ev->key[k]);
        if (ev->key_kind[k] == 2 && !ps->texts[k]) { /* the first text of this key: earlier rows had none */
            Col *t = malloc(sizeof *t);
            if (!t) return 0;
            ps->texts[k] = t;
            if (!col_init(t, K_STR)) return 0;
            for (int64_t r = 0; r < ps->rows; r++)
                if (!col_reserve(t) || !col_str(t, 0, NULL, 0)) return 0;
        }
        if (ps->texts[k]) {
            Col *t = ps->texts[k];
            if (!col_reserve(t) || !col_str(t, ev->key_kind[k] == 2, ev->key_s[k].s, ev->key_s[k].len)) return 0;
        }
    }
    ps->rows++;
    return 1;
}

/* Give the pages of a memory map from `*done` up to `upto` back to the kernel (they are read again from the page cache when touched). */
static void release_pages(const uint8_t **done, const uint8_t *upto) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = ((uintptr_t)*done + page - 1) & ~(page - 1), b = (uintptr_t)upto & ~(page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
    *done = upto;
}

#define RELEASE_EVERY (8 << 20)
#define PROGRESS_EVERY (1 << 20)

/* Store the bytes parsed so far where a Python thread reads them (see decode's `progress`). */
static inline void tell(Parser *ps, const uint8_t *from) {
    if (ps->progress) __atomic_store_n(ps->progress, (int64_t)(ps->p - from), __ATOMIC_RELAXED);
}

/* Parse the elements from ps->p; stop before an element that starts at or after `stop` (NULL: none). Returns 1, or 0 to refuse. */
static int parse_elements(Parser *ps, const uint8_t *stop, int release, const uint8_t **reached) {
    const uint8_t *done = ps->p, *from = ps->p, *told = ps->p;
    skip_ws(ps);
    if (ps->p >= ps->end) { *reached = ps->p; return 1; }
    for (;;) {
        if (stop && ps->p >= stop) break;
        if (*ps->p != '{' || !parse_event(ps) || !emit(ps)) return 0;
        if (release && ps->p - done >= RELEASE_EVERY) release_pages(&done, ps->p);
        if (ps->p - told >= PROGRESS_EVERY) {
            tell(ps, from);
            told = ps->p;
        }
        skip_ws(ps);
        if (ps->p >= ps->end) break;
        if (*ps->p != ',') return 0;
        ps->p++;
        skip_ws(ps);
        if (ps->p >= ps->end) return 0; /* a comma before the closing bracket */
    }
    if (release) release_pages(&done, ps->p);
    tell(ps, from);
    *reached = ps->p;
    return 1;
}

/* ---- Columns as Python objects exporting Arrow arrays ---- */

typedef struct {
    PyObject_HEAD
    Col col;
    int taken;
} Column;

static const char *format_of(int kind) { return kind == K_I64 ? "l" : kind == K_STR ? "vu" : "b"; }

/* What an exported array owns: the column's buffers and the list of them handed to the importer. */
typedef struct {
    Col col;
    const void **buffers;
} Owned;

static const int64_t NO_SIZES[1] = {0};

static void release_array(struct ArrowArray *a) {
    Owned *o = a->private_data;
    col_free(&o->col);
    free(o->buffers);
    free(o);
    a->release = NULL;
}

static void release_schema(struct ArrowSchema *s) { s->release = NULL; }

static void schema_capsule_free(PyObject *cap) {
    struct ArrowSchema *s = PyCapsule_GetPointer(cap, "arrow_schema");
    if (s) {
        if (s->release) s->release(s);
        free(s);
    }
}

static void array_capsule_free(PyObject *cap) {
    struct ArrowArray *a = PyCapsule_GetPointer(cap, "arrow_array");
    if (a) {
        if (a->release) a->release(a);
        free(a);
    }
}

static PyObject *column_arrow(Column *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"requested_schema", NULL};
    PyObject *requested = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", kw, &requested)) return NULL;
    if (self->taken) {
        PyErr_SetString(PyExc_RuntimeError, "the column was already exported");
        return NULL;
    }
    struct ArrowSchema *s = calloc(1, sizeof *s);
    struct ArrowArray *a = calloc(1, sizeof *a);
    Owned *o = calloc(1, sizeof *o);
    /* validity, values, then for text: each data buffer and the list of their sizes */
    int64_t n_buffers = self->col.kind == K_STR ? 3 + self->col.nbufs : 2;
    const void **buffers = o ? calloc((size_t)n_buffers, sizeof *buffers) : NULL;
    if (!s || !a || !o || !buffers) {
        free(s); free(a); free(o); free(buffers);
        return PyErr_NoMemory();
    }
    o->buffers = buffers;
    o->col = self->col;
    self->taken = 1;
    memset(&self->col, 0, sizeof self->col);
    Col *c = &o->col;
    s->format = format_of(c->kind);
    s->name = "";
    s->flags = ARROW_FLAG_NULLABLE;
    s->release = release_schema;
    buffers[0] = c->nulls ? c->valid : NULL;
    buffers[1] = c->data;
    if (c->kind == K_STR) {
        for (int64_t i = 0; i < c->nbufs; i++) buffers[2 + i] = c->bufs[i];
        buffers[2 + c->nbufs] = c->nbufs ? c->sizes : NO_SIZES;
    }
    a->length = c->n;
    a->null_count = c->nulls;
    a->n_buffers = n_buffers;
    a->buffers = buffers;
    a->release = release_array;
    a->private_data = o;
    PyObject *sc = PyCapsule_New(s, "arrow_schema", schema_capsule_free);
    if (!sc) { release_array(a); free(a); free(s); return NULL; }
    PyObject *ac = PyCapsule_New(a, "arrow_array", array_capsule_free);
    if (!ac) { Py_DECREF(sc); release_array(a); free(a); return NULL; }
    PyObject *out = PyTuple_Pack(2, sc, ac);
    Py_DECREF(sc);
    Py_DECREF(ac);
    return out;
}

static Py_ssize_t column_len(Column *self) { return (Py_ssize_t)self->col.n; }

static void column_dealloc(Column *self) {
    col_free(&self->col);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef column_methods[] = {
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))column_arrow, METH_VARARGS | METH_KEYWORDS,
     "The column as an Arrow array (PyCapsules of an ArrowSchema and an ArrowArray); its buffers move to the importer, so only once."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods column_sequence = {.sq_length = (lenfunc)column_len};

static PyTypeObject ColumnType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ntrace.io.kineto._native.Column",
    .tp_basicsize = sizeof(Column),
    .tp_dealloc = (destructor)column_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One decoded column, handed to Polars through the Arrow C data interface.",
    .tp_methods = column_methods,
    .tp_as_sequence = &column_sequence,
};

static void parser_free(Parser *ps) {
    for (int i = 0; i < N_COLS; i++) col_free(&ps->cols[i]);
    for (int k = 0; k < N_KEYS; k++) {
        if (ps->texts[k]) col_free(ps->texts[k]);
        free(ps->texts[k]);
        free(ps->ev.key_s[k].own);
    }
    Str *owned[] = {&ps->ev.ph, &ps->ev.cat, &ps->ev.name, &ps->ev.bp, &ps->ev.model, &ps->ev.pid_s, &ps->ev.tid_s};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]->own);
    free(ps->dims);
}

static PyObject *decode(PyObject *module, PyObject *args) {
    Py_buffer view, progress = {0};
    Py_ssize_t start, end, stop = -1;
    int release = 0;
    if (!PyArg_ParseTuple(args, "y*nn|npw*", &view, &start, &end, &stop, &release, &progress)) return NULL;
    if (start < 0 || end < start || end > view.len || (stop >= 0 && (stop < start || stop > end))
        || (progress.buf && (progress.len < (Py_ssize_t)sizeof(int64_t) || (uintptr_t)progress.buf % sizeof(int64_t)))) {
        PyBuffer_Release(&view);
        if (progress.buf) PyBuffer_Release(&progress);
        PyErr_SetString(PyExc_ValueError, "offsets outside the buffer, or a progress buffer that is not one aligned int64");
        return NULL;
    }
    Parser *ps = calloc(1, sizeof *ps);
    if (!ps) {
        PyBuffer_Release(&view);
        if (progress.buf) PyBuffer_Release(&progress);
        return PyErr_NoMemory();
    }
    ps->progress = progress.buf;
    int ok = 1;
    for (int i = 0; i < N_COLS; i++) ok = col_init(&ps->cols[i], KINDS[i]) && ok;
    const uint8_t *base = view.buf, *reached = NULL;
    if (ok) {
        ps->p = base + start;
        ps->end = base + end;
        Py_BEGIN_ALLOW_THREADS
        ok = parse_elements(ps, stop >= 0 ? base + stop : NULL, release, &reached);
        Py_END_ALLOW_THREADS
    } else {
        ps->oom = 1;
    }
    PyBuffer_Release(&view);
    if (progress.buf) PyBuffer_Release(&progress);
    if (!ok) {
        int oom = ps->oom;
        parser_free(ps);
        free(ps);
        if (oom) return PyErr_NoMemory();
        Py_RETURN_NONE;
    }
    PyObject *cols = PyTuple_New(N_COLS), *texts = PyTuple_New(N_KEYS);
    for (int i = 0; cols && texts && i < N_COLS + N_KEYS; i++) {
        Col *from = i < N_COLS ? &ps->cols[i] : ps->texts[i - N_COLS];
        PyObject *item;
        if (from) {
            Column *c = PyObject_New(Column, &ColumnType);
            if (!c) { Py_CLEAR(cols); break; }
            c->col = *from;
            c->taken = 0;
            memset(from, 0, sizeof *from);
            item = (PyObject *)c;
        } else {
            item = Py_NewRef(Py_None);
        }
        PyTuple_SET_ITEM(i < N_COLS ? cols : texts, i < N_COLS ? i : i - N_COLS, item);
    }
    parser_free(ps);
    free(ps);
    if (!cols || !texts) {
        Py_XDECREF(cols);
        Py_XDECREF(texts);
        return NULL;
    }
    return Py_BuildValue("(NNn)", cols, texts, (Py_ssize_t)(reached - base));
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS,
     "decode(buffer, start, end, stop=-1, release=False[, progress]) -> (columns, key_texts, reached) | None\n\n"
     "The events of the array content buffer[start:end] as 25 columns, or None where this path does not read it; "
     "key_texts holds, per linking key (id, then the integer args), the values given as text (None when there were none). "
     "With stop, parsing ends before the first element that starts at or after it; `reached` is where parsing ended. "
     "`release` gives the pages of a memory map back as they are parsed. "
     "`progress`, a writable buffer of one aligned int64, gets the bytes parsed so far every MiB and at the end (another thread may read it)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "Kineto events parsed into Arrow columns (see _native.c).", -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    for (int i = 0; i < N_ARG_INTS; i++) ARG_LENS[i] = (int64_t)strlen(ARG_INTS[i]);
    for (int c = 0x20; c < 0x80; c++) PLAIN[c] = c != '"' && c != '\\';
    if (PyType_Ready(&ColumnType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ColumnType);
    if (PyModule_AddObject(m, "Column", (PyObject *)&ColumnType) < 0) {
        Py_DECREF(&ColumnType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddIntConstant(m, "N_COLUMNS", N_COLS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
