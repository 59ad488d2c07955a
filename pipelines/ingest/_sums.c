/* Summing rows of move statistics by (key, packed dimensions), compiled. runs.py is its Python
 * face: it packs the move, speed, band and group of each row into 32 bits that sort as a month's
 * file sorts them (and keeps the NumPy way for what does not pack).
 *
 * The rows are sorted by (Polyglot key, packed) stably: a pass spreads them into 2**16 buckets by
 * the key's top 16 bits, then each bucket is sorted on its own, in cache (insertion sort when
 * small, merge sort when not: the first plies put thousands of rows in one key). A last pass sums
 * the counts of equal rows.
 *
 * Two shapes of input: rows of plies (a mover's points, 0-2, and rating, one row a ply) and rows
 * of counts (wins, draws, losses and rating sums, as runs hold them). Both give, in sort order,
 * one row per distinct (key, packed) with its summed counts. Each row also carries a first-play
 * rank (a ply's place in file order, or a row's least one): a group's is the least of its rows'.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t key;
    uint32_t packed;
    /* Rows of plies: the mover's rating (low 16 bits) and points (the next 2), so that summing
     * reads the records in order; rows of counts: the input row, whose counts are summed. */
    uint32_t payload;
    /* The row's first-play rank: its group's is the least. */
    uint64_t first;
} Record;

#define BUCKET_BITS 16
#define BUCKETS (1u << BUCKET_BITS)
#define SMALL 24 /* buckets up to this size are insertion-sorted */

static inline int before(const Record *a, const Record *b) {
    return a->key < b->key || (a->key == b->key && a->packed < b->packed);
}

static void insertion_sort(Record *records, size_t n) {
    for (size_t i = 1; i < n; i++) {
        Record r = records[i];
        size_t j = i;
        for (; j > 0 && before(&r, &records[j - 1]); j--) records[j] = records[j - 1];
        records[j] = r;
    }
}

/* Sort records[0:n] stably, with spare[0:n] to merge through; the result is in records. */
static void merge_sort(Record *records, Record *spare, size_t n) {
    if (n <= SMALL) {
        insertion_sort(records, n);
        return;
    }
    size_t half = n / 2;
    merge_sort(records, spare, half);
    merge_sort(records + half, spare + half, n - half);
    if (!before(&records[half], &records[half - 1])) return; /* already in order */
    memcpy(spare, records, n * sizeof *records);
    size_t i = 0, j = half, out = 0;
    while (i < half && j < n)
        records[out++] = before(&spare[j], &spare[i]) ? spare[j++] : spare[i++];
    while (i < half) records[out++] = spare[i++];
    while (j < n) records[out++] = spare[j++];
}

/* Sort the rows into `records` (n of them, `spare` as large) stably by (key, packed), each with
 * its payload (the rating and points of rows of plies, or else the row); returns 0 when out of
 * memory. */
static int sort_rows(const uint64_t *keys, const uint32_t *packed, const uint64_t *firsts,
                     const uint8_t *points, const uint16_t *ratings, size_t n, Record *records,
                     Record *spare) {
    uint32_t *starts = calloc(BUCKETS + 1, sizeof *starts);
    if (!starts) return 0;
    for (size_t i = 0; i < n; i++) starts[(keys[i] >> (64 - BUCKET_BITS)) + 1]++;
    for (size_t b = 1; b <= BUCKETS; b++) starts[b] += starts[b - 1];
    uint32_t *at = malloc(BUCKETS * sizeof *at);
    if (!at) {
        free(starts);
        return 0;
    }
    memcpy(at, starts, BUCKETS * sizeof *at);
    for (size_t i = 0; i < n; i++) {
        Record *r = &records[at[keys[i] >> (64 - BUCKET_BITS)]++];
        r->key = keys[i];
        r->packed = packed[i];
        r->payload = points ? (uint32_t)ratings[i] | (uint32_t)points[i] << 16 : (uint32_t)i;
        r->first = firsts[i];
    }
    for (size_t b = 0; b < BUCKETS; b++) {
        size_t first = starts[b], size = starts[b + 1] - first;
        if (size > 1) merge_sort(records + first, spare + first, size);
    }
    free(at);
    free(starts);
    return 1;
}

/* The columns of one call. */
typedef struct {
    Py_buffer key, packed, first, a, b, c, d;
    int plies; /* a: points (uint8), b: ratings (uint16); else a-d: uint64 counts */
    size_t n;
} Input;

/* Whether sorted record i starts a group of equal (key, packed). */
static inline int starts_group(const Record *sorted, size_t i) {
    return i == 0 || sorted[i].key != sorted[i - 1].key || sorted[i].packed != sorted[i - 1].packed;
}

static size_t count_groups(const Record *sorted, size_t n) {
    size_t groups = 0;
    for (size_t i = 0; i < n; i++) groups += starts_group(sorted, i);
    return groups;
}

/* Sum the sorted rows into the group columns (each `groups` long, written from scratch). */
static void sum_groups(const Input *in, const Record *sorted, uint64_t *keys, uint32_t *packed,
                       uint64_t *firsts, uint64_t *wins, uint64_t *draws, uint64_t *losses,
                       uint64_t *ratings) {
    size_t g = (size_t)-1;
    for (size_t i = 0; i < in->n; i++) {
        const Record *r = &sorted[i];
        if (starts_group(sorted, i)) {
            g++;
            keys[g] = r->key;
            packed[g] = r->packed;
            firsts[g] = r->first;
            wins[g] = draws[g] = losses[g] = ratings[g] = 0;
        } else if (r->first < firsts[g]) {
            firsts[g] = r->first;
        }
        size_t row = r->payload;
        if (in->plies) {
            uint32_t points = r->payload >> 16;
            wins[g] += points == 2;
            draws[g] += points == 1;
            losses[g] += points == 0;
            ratings[g] += r->payload & 0xFFFF;
        } else {
            wins[g] += ((const uint64_t *)in->a.buf)[row];
            draws[g] += ((const uint64_t *)in->b.buf)[row];
            losses[g] += ((const uint64_t *)in->c.buf)[row];
            ratings[g] += ((const uint64_t *)in->d.buf)[row];
        }
    }
}

static PyObject *run(Input *in) {
    size_t n = in->n;
    if (n > UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "more than 2**32 - 1 rows to sum at once");
        return NULL;
    }
    Record *records = malloc((n ? n : 1) * sizeof *records);
    Record *spare = malloc((n ? n : 1) * sizeof *spare);
    int sorted = 0;
    size_t groups = 0;
    if (records && spare) {
        /* (the input buffers stay held by the caller's Py_buffer views meanwhile) */
        Py_BEGIN_ALLOW_THREADS
        sorted = sort_rows(in->key.buf, in->packed.buf, in->first.buf,
                           in->plies ? in->a.buf : NULL,
                           in->plies ? in->b.buf : NULL, n, records, spare);
        if (sorted) groups = count_groups(records, n);
        Py_END_ALLOW_THREADS
    }
    free(spare);
    if (!sorted) {
        free(records);
        return PyErr_NoMemory();
    }
    Py_ssize_t size = (Py_ssize_t)groups;
    PyObject *columns[7] = {
        PyBytes_FromStringAndSize(NULL, size * 8), PyBytes_FromStringAndSize(NULL, size * 4),
        PyBytes_FromStringAndSize(NULL, size * 8), PyBytes_FromStringAndSize(NULL, size * 8),
        PyBytes_FromStringAndSize(NULL, size * 8), PyBytes_FromStringAndSize(NULL, size * 8),
        PyBytes_FromStringAndSize(NULL, size * 8),
    };
    PyObject *result = NULL;
    int made = 1;
    for (int i = 0; i < 7; i++) made &= columns[i] != NULL;
    if (made) {
        char *out[7];
        for (int i = 0; i < 7; i++) out[i] = PyBytes_AS_STRING(columns[i]);
        Py_BEGIN_ALLOW_THREADS
        sum_groups(in, records, (uint64_t *)out[0], (uint32_t *)out[1], (uint64_t *)out[2],
                   (uint64_t *)out[3], (uint64_t *)out[4], (uint64_t *)out[5], (uint64_t *)out[6]);
        Py_END_ALLOW_THREADS
        result = PyTuple_Pack(7, columns[0], columns[1], columns[2], columns[3], columns[4],
                              columns[5], columns[6]);
    }
    for (int i = 0; i < 7; i++) Py_XDECREF(columns[i]);
    free(records);
    return result;
}

static int check(Py_buffer *view, size_t n, size_t itemsize, const char *name) {
    if ((size_t)view->len != n * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, not %zu rows of %zu bytes", name,
                     view->len, n, itemsize);
        return 0;
    }
    return 1;
}

static void release(Input *in, int views) {
    Py_buffer *all[] = {&in->key, &in->packed, &in->first, &in->a, &in->b, &in->c, &in->d};
    for (int i = 0; i < views; i++) PyBuffer_Release(all[i]);
}

static PyObject *sum_plies(PyObject *self, PyObject *args) {
    (void)self;
    Input in;
    memset(&in, 0, sizeof in);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &in.key, &in.packed, &in.first, &in.a, &in.b))
        return NULL;
    in.plies = 1;
    in.n = (size_t)in.key.len / 8;
    PyObject *result = NULL;
    if (check(&in.key, in.n, 8, "keys") && check(&in.packed, in.n, 4, "packed") &&
        check(&in.first, in.n, 8, "first_play") && check(&in.a, in.n, 1, "points") &&
        check(&in.b, in.n, 2, "ratings"))
        result = run(&in);
    release(&in, 5);
    return result;
}

static PyObject *sum_counts(PyObject *self, PyObject *args) {
    (void)self;
    Input in;
    memset(&in, 0, sizeof in);
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*", &in.key, &in.packed, &in.first, &in.a, &in.b,
                          &in.c, &in.d))
        return NULL;
    in.n = (size_t)in.key.len / 8;
    PyObject *result = NULL;
    if (check(&in.key, in.n, 8, "keys") && check(&in.packed, in.n, 4, "packed") &&
        check(&in.first, in.n, 8, "first_play") && check(&in.a, in.n, 8, "wins") && check(&in.b, in.n, 8, "draws") &&
        check(&in.c, in.n, 8, "losses") && check(&in.d, in.n, 8, "rating_sum"))
        result = run(&in);
    release(&in, 7);
    return result;
}

static PyMethodDef methods[] = {
    {"sum_plies", sum_plies, METH_VARARGS,
     "sum_plies(keys, packed, first_play, points, ratings) -> (keys, packed, first_play, wins,\n"
     "draws, losses, rating_sum)\n\n"
     "Rows of plies (native uint64 keys, uint32 packed dimensions, uint64 first-play ranks,\n"
     "uint8 points of the mover, uint16 ratings) summed per (key, packed), in that order: each\n"
     "distinct (key, packed) (uint64, uint32), its least rank and its uint64 sums, as bytes."},
    {"sum_counts", sum_counts, METH_VARARGS,
     "sum_counts(keys, packed, first_play, wins, draws, losses, rating_sum) -> (keys, packed,\n"
     "first_play, wins, draws, losses, rating_sum)\n\n"
     "Rows of counts (uint64) summed as sum_plies sums rows of plies."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sums", "Move statistics summed by key and dimensions, compiled.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sums(void) { return PyModule_Create(&module); }
