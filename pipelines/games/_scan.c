/* The game filter's fast path in compiled code: games of a block of PGN text whose tag section
 * is laid out as Lichess lays it out, decided from their tags (game_filter.py says what is kept).
 *
 * A game is decided here when its tag section is plain: tag pairs `Name "value"`, one a line,
 * names of letters, digits and "_", values free of quotes and line ends, then a blank line;
 * Result, WhiteElo, BlackElo (each of 1 to 9 digits) and TimeControl each once, WhiteTitle
 * and BlackTitle at most once, no Variant and no FEN, and no tag whose name is one of those in
 * another case. Every other game is handed back for game_filter.py to decide: this code never
 * decides a game otherwise than the one-game filter would.
 *
 * Bounds: every read is checked against the text's length.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The reasons a game is dropped here, in the order game_filter.DROP_ORDER names them. */
enum { READ, RATING_LOW, TIME_CONTROL, SPEED, BOT, VARIANT, RESULT, OVERSIZED, UNREADABLE, COUNTS };

/* What deciding needs, from the filter (see game_filter._compiled_rules). */
typedef struct {
    long min_rating;
    int allow_bots, standard;
    PyObject *speeds;   /* frozenset of Speed */
    PyObject *speed_of; /* bytes -> Speed | None */
    PyObject *otb;      /* Speed.OTB */
    PyObject *kept;     /* KeptGame */
} Rules;

static int read_rules(PyObject *tuple, Rules *rules) {
    int allow_bots, standard;
    if (!PyArg_ParseTuple(tuple, "lppOOOO", &rules->min_rating, &allow_bots, &standard,
                          &rules->speeds, &rules->speed_of, &rules->otb, &rules->kept))
        return 0;
    rules->allow_bots = allow_bots;
    rules->standard = standard;
    return 1;
}

typedef struct {
    const char *start;
    Py_ssize_t size;
    int count;
} Tag;

enum { T_RESULT, T_WHITE_ELO, T_BLACK_ELO, T_WHITE_TITLE, T_BLACK_TITLE, T_TIME_CONTROL,
       T_VARIANT, T_FEN, TAGS };
static const char *TAG_NAMES[TAGS] = {"Result", "WhiteElo", "BlackElo", "WhiteTitle",
                                      "BlackTitle", "TimeControl", "Variant", "FEN"};
static const Py_ssize_t TAG_SIZES[TAGS] = {6, 8, 8, 10, 10, 11, 7, 3};

static inline int name_byte(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* Which read tag a name is (exactly), TAGS for another name, -1 for one of them in another
 * case. */
static int tag_of(const char *name, Py_ssize_t size) {
    for (int t = 0; t < TAGS; t++) {
        if (TAG_SIZES[t] != size) continue;
        if (memcmp(name, TAG_NAMES[t], (size_t)size) == 0) return t;
        int same = 1;
        for (Py_ssize_t i = 0; i < size && same; i++) {
            char a = name[i], b = TAG_NAMES[t][i];
            if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
            if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
            same = a == b;
        }
        if (same) return -1;
    }
    return TAGS;
}

/* What read_tags returns for a tag section that is not plain, and for one whose ratings are
 * read and low (the game is dropped as rating_low whatever the tags after them). */
#define NOT_PLAIN (-1)
#define LOW_RATED (-2)

static long rating_of(const Tag *tag);

/* Read a plain tag section at the start of `game` (its leading "[" cut); return where the
 * movetext starts, NOT_PLAIN, or LOW_RATED once both ratings are read, plain and one of them
 * below `min_rating` (then `*read` says how far the section was read: the tags before the
 * ratings and the ratings are plain, and nothing after them is looked at). */
static Py_ssize_t read_tags(const char *game, Py_ssize_t n, Tag tags[TAGS], long min_rating,
                            Py_ssize_t *read) {
    memset(tags, 0, sizeof(Tag) * TAGS);
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t name = i;
        while (i < n && name_byte(game[i])) i++;
        if (i == name || i + 1 >= n || game[i] != ' ' || game[i + 1] != '"') return NOT_PLAIN;
        Py_ssize_t name_size = i - name;
        i += 2;
        Py_ssize_t value = i;
        while (i < n && game[i] != '"' && game[i] != '\n') i++;
        if (i + 2 >= n || game[i] != '"' || game[i + 1] != ']' || game[i + 2] != '\n')
            return NOT_PLAIN;
        int t = tag_of(game + name, name_size);
        if (t < 0) return NOT_PLAIN;
        if (t < TAGS) {
            if (tags[t].count++) return NOT_PLAIN;
            tags[t].start = game + value;
            tags[t].size = i - value;
        }
        i += 3;
        if ((t == T_WHITE_ELO || t == T_BLACK_ELO) && tags[T_WHITE_ELO].count &&
            tags[T_BLACK_ELO].count) {
            long white = rating_of(&tags[T_WHITE_ELO]), black = rating_of(&tags[T_BLACK_ELO]);
            if (white >= 0 && black >= 0 && (white < min_rating || black < min_rating)) {
                *read = i;
                return LOW_RATED;
            }
        }
        if (i < n && game[i] == '\n') return i + 1;
        if (i >= n || game[i] != '[') return NOT_PLAIN;
        i++;
    }
}

/* A rating of 1 to 9 digits, or -1. */
static long rating_of(const Tag *tag) {
    if (tag->size < 1 || tag->size > 9) return -1;
    long value = 0;
    for (Py_ssize_t i = 0; i < tag->size; i++) {
        char c = tag->start[i];
        if (c < '0' || c > '9') return -1;
        value = value * 10 + (c - '0');
    }
    return value;
}

#define EQUALS(tag, literal)                                                                    \
    ((tag)->count && (tag)->size == (Py_ssize_t)sizeof(literal) - 1 &&                          \
     memcmp((tag)->start, literal, sizeof(literal) - 1) == 0)

/* What decide() returns for a game game_filter.py must decide (no reference). */
static char hand_back_marker;
#define HAND_BACK ((PyObject *)&hand_back_marker)

static PyObject *decide_read(const char *game, Py_ssize_t n, const Rules *rules, Tag tags[TAGS],
                             Py_ssize_t movetext, Py_ssize_t counts[COUNTS]);

/* Decide one game (its leading "[" cut). Return a new KeptGame, Py_None (a new reference) when
 * it is dropped (its reason counted), HAND_BACK when game_filter.py must decide it, or NULL on
 * a Python error. */
static PyObject *decide(const char *game, Py_ssize_t n, const Rules *rules,
                        Py_ssize_t counts[COUNTS]) {
    Tag tags[TAGS];
    Py_ssize_t read = 0;
    Py_ssize_t movetext = read_tags(game, n, tags, rules->min_rating, &read);
    return decide_read(game, n, rules, tags, movetext, counts);
}

/* decide() of a game whose tag section read_tags has read (giving `movetext`). */
static PyObject *decide_read(const char *game, Py_ssize_t n, const Rules *rules, Tag tags[TAGS],
                             Py_ssize_t movetext, Py_ssize_t counts[COUNTS]) {
    if (movetext == LOW_RATED) {
        counts[READ]++;
        counts[RATING_LOW]++;
        Py_RETURN_NONE;
    }
    long white = -1, black = -1;
    if (movetext >= 0) {
        white = rating_of(&tags[T_WHITE_ELO]);
        black = rating_of(&tags[T_BLACK_ELO]);
    }
    if (movetext < 0 || !tags[T_RESULT].count || !tags[T_TIME_CONTROL].count ||
        tags[T_VARIANT].count || tags[T_FEN].count || white < 0 || black < 0)
        return HAND_BACK;
    counts[READ]++;
    if (white < rules->min_rating || black < rules->min_rating) {
        counts[RATING_LOW]++;
        Py_RETURN_NONE;
    }
    PyObject *control = PyBytes_FromStringAndSize(tags[T_TIME_CONTROL].start,
                                                  tags[T_TIME_CONTROL].size);
    if (!control) return NULL;
    PyObject *speed = PyObject_CallOneArg(rules->speed_of, control);
    Py_DECREF(control);
    if (!speed) return NULL;
    if (speed == Py_None) {
        int otb = PySet_Contains(rules->speeds, rules->otb);
        if (otb < 0) {
            Py_DECREF(speed);
            return NULL;
        }
        if (!otb) {
            Py_DECREF(speed);
            counts[TIME_CONTROL]++;
            Py_RETURN_NONE;
        }
        Py_DECREF(speed);
        speed = rules->otb;
        Py_INCREF(speed);
    }
    int wanted = PySet_Contains(rules->speeds, speed);
    if (wanted <= 0) {
        Py_DECREF(speed);
        if (wanted < 0) return NULL;
        counts[SPEED]++;
        Py_RETURN_NONE;
    }
    if (!rules->allow_bots && (EQUALS(&tags[T_WHITE_TITLE], "BOT") ||
                               EQUALS(&tags[T_BLACK_TITLE], "BOT"))) {
        Py_DECREF(speed);
        counts[BOT]++;
        Py_RETURN_NONE;
    }
    if (!rules->standard) { /* no Variant tag: a Standard game */
        Py_DECREF(speed);
        counts[VARIANT]++;
        Py_RETURN_NONE;
    }
    long points = EQUALS(&tags[T_RESULT], "1-0") ? 2
                  : EQUALS(&tags[T_RESULT], "1/2-1/2") ? 1
                  : EQUALS(&tags[T_RESULT], "0-1") ? 0 : -1;
    if (points < 0) {
        Py_DECREF(speed);
        counts[RESULT]++;
        Py_RETURN_NONE;
    }
    /* KeptGame(...) as tuple.__new__(KeptGame, fields) makes it (the class's own __new__ is
     * Python code). */
    PyObject *fields = Py_BuildValue("(llOlOy#)", white, black, speed, points, Py_None,
                                     game + movetext, n - movetext);
    Py_DECREF(speed);
    if (!fields) return NULL;
    PyObject *arguments = PyTuple_Pack(1, fields);
    Py_DECREF(fields);
    if (!arguments) return NULL;
    PyObject *kept = PyTuple_Type.tp_new((PyTypeObject *)rules->kept, arguments, NULL);
    Py_DECREF(arguments);
    return kept;
}

static int is_blank(const char *text, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!strchr(" \t\n\r\v\f", text[i]) || text[i] == 0) return 0;
    return 1;
}

/* Where the next game boundary (a blank line, then "[") at or after `at` starts, or NULL. */
static const char *next_boundary(const char *text, Py_ssize_t at, Py_ssize_t size) {
    /* Movetext holds few line ends (a Lichess game's is one line), "[" many (clock comments). */
    Py_ssize_t i = at;
    while (i + 2 < size) {
        const char *end = memchr(text + i, '\n', (size_t)(size - 2 - i));
        if (!end) return NULL;
        if (end[1] == '\n' && end[2] == '[') return end;
        i = end - text + 1;
    }
    return NULL;
}

/* comments_span_lines(text) -> bool: whether a "{" is followed by a line end before any other
 * brace (a comment across lines, which may hold a blank line). */
static PyObject *comments_span_lines(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    const char *text = view.buf;
    Py_ssize_t size = view.len, i = 0;
    int spans = 0;
    while (!spans && i < size) {
        const char *open = memchr(text + i, '{', (size_t)(size - i));
        if (!open) break;
        Py_ssize_t j = open - text + 1;
        while (j < size && text[j] != '{' && text[j] != '}' && text[j] != '\n') j++;
        spans = j < size && text[j] == '\n';
        i = j;
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(spans);
}

static PyObject *counts_tuple(const Py_ssize_t counts[COUNTS]) {
    PyObject *tuple = PyTuple_New(COUNTS);
    if (!tuple) return NULL;
    for (int i = 0; i < COUNTS; i++) {
        PyObject *number = PyLong_FromSsize_t(counts[i]);
        if (!number) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, number);
    }
    return tuple;
}

/* scan_block(block, max_game_bytes, rules, with_text) -> (games, counts) */
static PyObject *scan_block(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t max_game_bytes;
    PyObject *rules_tuple;
    int with_text;
    if (!PyArg_ParseTuple(args, "y*nOp", &view, &max_game_bytes, &rules_tuple, &with_text))
        return NULL;
    Rules rules;
    PyObject *games = NULL;
#ifdef CHESSPIPE_EXACT_BUFFERS
    char *copy = NULL;
#endif
    if (!read_rules(rules_tuple, &rules)) goto failed;
    games = PyList_New(0);
    if (!games) goto failed;
    Py_ssize_t counts[COUNTS] = {0};
    const char *text = view.buf;
    Py_ssize_t size = view.len;
#ifdef CHESSPIPE_EXACT_BUFFERS
    /* The sanitizer build (tests/test_compiled_sanitized.py) reads a copy of the block in a
     * buffer of its exact size, so that a read one byte past it is caught. */
    copy = malloc(size ? (size_t)size : 1);
    if (!copy) {
        PyErr_NoMemory();
        goto failed;
    }
    memcpy(copy, text, (size_t)size);
    text = copy;
#endif
    /* Games are what stands between boundaries (a blank line, then "["). A game's tags are read
     * first, on the text from its start: a tag section holds no blank line but its end, so the
     * next boundary is looked for from there on only. */
    Py_ssize_t at = 0;
    for (;;) {
        const char *game = text + at;
        Tag tags[TAGS];
        Py_ssize_t read = 0;
        Py_ssize_t movetext = read_tags(game, size - at, tags, rules.min_rating, &read);
        Py_ssize_t header = movetext >= 0 ? movetext : movetext == LOW_RATED ? read : 0;
        const char *found = next_boundary(text, at + (header >= 2 ? header - 2 : 0), size);
        Py_ssize_t end = found ? found - text : size;
        Py_ssize_t n = end - at;
        /* What was read must lie inside the game, as reading the game alone would read it. */
        if ((movetext >= 0 && movetext > n) || (movetext == LOW_RATED && read > n))
            movetext = NOT_PLAIN;
        if (n > max_game_bytes) {
            counts[READ]++;
            counts[OVERSIZED]++;
            counts[UNREADABLE] += n;
        } else if (n > 0 && !is_blank(game, n)) {
            PyObject *decided = movetext == NOT_PLAIN
                                    ? HAND_BACK
                                    : decide_read(game, n, &rules, tags, movetext, counts);
            if (!decided) goto failed;
            PyObject *item = NULL; /* what the list gets for this game, if anything */
            if (decided == HAND_BACK || (with_text && decided != Py_None)) {
                PyObject *piece = PyBytes_FromStringAndSize(game, n);
                if (piece && decided != HAND_BACK) {
                    item = PyTuple_Pack(2, decided, piece);
                    Py_DECREF(piece);
                } else {
                    item = piece;
                }
            } else if (decided != Py_None) {
                item = decided;
                Py_INCREF(item);
            }
            int failed_here = (decided != HAND_BACK && decided != Py_None && !item) ||
                              (decided == HAND_BACK && !item);
            if (decided != HAND_BACK) Py_DECREF(decided);
            if (failed_here || (item && PyList_Append(games, item) < 0)) {
                Py_XDECREF(item);
                goto failed;
            }
            Py_XDECREF(item);
        }
        if (!found) break;
        at = end + 3;
    }
#ifdef CHESSPIPE_EXACT_BUFFERS
    free(copy);
    copy = NULL;
#endif
    PyBuffer_Release(&view);
    PyObject *tuple = counts_tuple(counts);
    if (!tuple) {
        Py_DECREF(games);
        return NULL;
    }
    PyObject *result = PyTuple_Pack(2, games, tuple);
    Py_DECREF(games);
    Py_DECREF(tuple);
    return result;
failed:
#ifdef CHESSPIPE_EXACT_BUFFERS
    free(copy);
#endif
    Py_XDECREF(games);
    PyBuffer_Release(&view);
    return NULL;
}

/* decide_game(game, rules) -> (KeptGame | None | game, counts) */
static PyObject *decide_game(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *game, *rules_tuple;
    if (!PyArg_ParseTuple(args, "SO", &game, &rules_tuple)) return NULL;
    Rules rules;
    if (!read_rules(rules_tuple, &rules)) return NULL;
    Py_ssize_t counts[COUNTS] = {0};
    PyObject *decided = decide(PyBytes_AS_STRING(game), PyBytes_GET_SIZE(game), &rules, counts);
    if (!decided) return NULL;
    if (decided == HAND_BACK) {
        decided = game;
        Py_INCREF(decided);
    }
    PyObject *tuple = counts_tuple(counts);
    if (!tuple) {
        Py_DECREF(decided);
        return NULL;
    }
    PyObject *result = PyTuple_Pack(2, decided, tuple);
    Py_DECREF(decided);
    Py_DECREF(tuple);
    return result;
}

/* A tag's match at `p` of a header as the pattern \[?([A-Za-z0-9_]+) "((?:[^"\\\n]|\\.)*)"\]
 * matches there (game_record.py's _TAG): 1 and the name's and value's spans, or 0. */
static int tag_at(const char *t, Py_ssize_t n, Py_ssize_t p, Py_ssize_t span[4]) {
    if (t[p] == '[') p++;
    Py_ssize_t name = p;
    while (p < n && name_byte(t[p])) p++;
    if (p == name || p + 1 >= n || t[p] != ' ' || t[p + 1] != '"') return 0;
    Py_ssize_t value = p + 2;
    p = value;
    while (p < n && t[p] != '"' && t[p] != '\n') {
        if (t[p] == '\\') {
            if (p + 1 >= n || t[p + 1] == '\n') return 0;
            p++;
        }
        p++;
    }
    if (p + 1 >= n || t[p] != '"' || t[p + 1] != ']') return 0;
    span[0] = name, span[1] = value - 2, span[2] = value, span[3] = p;
    return 1;
}

/* A tag value as game_record.tags() gives it: UTF-8 (errors replaced), then \" read as " and
 * \\ as \ (in that order). */
static PyObject *tag_value(const char *v, Py_ssize_t size) {
    if (!memchr(v, '\\', (size_t)size)) return PyUnicode_DecodeUTF8(v, size, "replace");
    char *once = malloc((size_t)size), *twice = malloc((size_t)size);
    PyObject *value = NULL;
    if (once && twice) {
        Py_ssize_t a = 0, b = 0;
        for (Py_ssize_t i = 0; i < size; i++) {
            if (v[i] == '\\' && i + 1 < size && v[i + 1] == '"') i++;
            once[a++] = v[i];
        }
        for (Py_ssize_t i = 0; i < a; i++) {
            if (once[i] == '\\' && i + 1 < a && once[i + 1] == '\\') i++;
            twice[b++] = once[i];
        }
        value = PyUnicode_DecodeUTF8(twice, b, "replace");
    } else {
        PyErr_NoMemory();
    }
    free(once);
    free(twice);
    return value;
}

/* header_tags(texts, names): per name, a list of each text's first value of that tag (None
 * where it has none), read from the text's header (up to its first blank line) as
 * game_record.tags() reads it. */
static PyObject *header_tags(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *texts_in, *names_in;
    if (!PyArg_ParseTuple(args, "OO", &texts_in, &names_in)) return NULL;
    PyObject *texts = PySequence_Fast(texts_in, "texts must be a sequence of bytes");
    if (!texts) return NULL;
    PyObject *names = PySequence_Fast(names_in, "names must be a sequence of bytes");
    PyObject *columns = NULL;
    if (!names) goto fail;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(texts), wanted = PySequence_Fast_GET_SIZE(names);
    for (Py_ssize_t k = 0; k < wanted; k++) {
        if (!PyBytes_Check(PySequence_Fast_GET_ITEM(names, k))) {
            PyErr_SetString(PyExc_TypeError, "names must be bytes");
            goto fail;
        }
    }
    columns = PyList_New(wanted);
    if (!columns) goto fail;
    for (Py_ssize_t k = 0; k < wanted; k++) {
        PyObject *column = PyList_New(count);
        if (!column) goto fail;
        PyList_SET_ITEM(columns, k, column);
        for (Py_ssize_t g = 0; g < count; g++) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(column, g, Py_None);
        }
    }
    for (Py_ssize_t g = 0; g < count; g++) {
        PyObject *item = PySequence_Fast_GET_ITEM(texts, g);
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "texts[%zd] is not bytes", g);
            goto fail;
        }
        const char *t = PyBytes_AS_STRING(item);
        Py_ssize_t n = PyBytes_GET_SIZE(item);
        for (Py_ssize_t end = 0; end + 1 < n; end++) {
            if (t[end] == '\n' && t[end + 1] == '\n') {
                n = end;
                break;
            }
        }
        Py_ssize_t span[4], found = 0;
        for (Py_ssize_t p = 0; p < n && found < wanted;) {
            if (!tag_at(t, n, p, span)) {
                p++;
                continue;
            }
            p = span[3] + 2;
            for (Py_ssize_t k = 0; k < wanted; k++) {
                PyObject *name = PySequence_Fast_GET_ITEM(names, k);
                PyObject *column = PyList_GET_ITEM(columns, k);
                if (PyBytes_GET_SIZE(name) != span[1] - span[0] ||
                    memcmp(PyBytes_AS_STRING(name), t + span[0], (size_t)(span[1] - span[0])) ||
                    PyList_GET_ITEM(column, g) != Py_None)
                    continue;
                PyObject *value = tag_value(t + span[2], span[3] - span[2]);
                if (!value) goto fail;
                Py_DECREF(Py_None);
                PyList_SET_ITEM(column, g, value);
                found++;
                break;
            }
        }
    }
    Py_DECREF(texts);
    Py_DECREF(names);
    return columns;
fail:
    Py_DECREF(texts);
    Py_XDECREF(names);
    Py_XDECREF(columns);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan_block", scan_block, METH_VARARGS,
     "scan_block(block, max_game_bytes, rules, with_text) -> (games, counts)\n\n"
     "The games of a block (from game_blocks) decided: a list, in order, of each kept game\n"
     "(KeptGame, or (KeptGame, its text) with_text) and each game handed back (its bytes);\n"
     "the counts of the games decided here, by the enum of _scan.c."},
    {"comments_span_lines", comments_span_lines, METH_O,
     "comments_span_lines(text) -> bool\n\nWhether a \"{\" is followed by a line end before any "
     "other brace."},
    {"decide_game", decide_game, METH_VARARGS,
     "decide_game(game, rules) -> (KeptGame | None | game, counts)\n\n"
     "One game (its leading \"[\" cut): kept, dropped (its reason counted) or handed back."},
    {"header_tags", header_tags, METH_VARARGS,
     "header_tags(texts, names) -> list[list[str | None]]\n\n"
     "Per name, each text's first value of that tag in its header (None: none)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "The game filter's fast path, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
