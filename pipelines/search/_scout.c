/* The position search's scanner in compiled code: games stored as Polyglot moves replayed on
 * a board, each position checked against a query's conditions by Scoutfish's search loop
 * (scan.py says the semantics; query.py says the rules).
 *
 * Why compiled: a search replays every position of every game kept (billions), and it replaces
 * Scoutfish, which does some 35 million positions a second a core. The board is twelve
 * bitboards and a 64-square mailbox, with the pieces' counts and the pieces' value kept as
 * moves are played; a move is read once (whose piece, what it takes, castling, promotion) for
 * both the rules and playing it; a condition's rules are checked cheapest first. Nothing is
 * allocated per game, and the GIL is let go while scanning, so callers may scan batches on
 * several threads.
 *
 * The data: per game a ply a uint16 little-endian Polyglot move (to-square bits 0-5, from-square
 * 6-11, promotion 12-14; castling as the king taking its own rook). Damaged data (an odd length,
 * a move from an empty square, of the side not to move, onto the mover's own piece other than
 * castling, a promotion where none may be, an en passant without the pawn it takes, a move
 * taking a king) ends the game there: the position before it is the game's last (it has no
 * move). Every read of a game is checked against its bytes, every index against its table.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { PAWN = 1, KNIGHT, BISHOP, ROOK, QUEEN, KING };

/* A whole position as scan.py lays it out, for the games' starts and the `exact` rule: the 12
 * bitboards (White's pawn..king, then Black's), the castling rights (rook squares) and the side
 * to move (1: White). */
typedef struct {
    uint64_t masks[12];
    uint64_t castling;
    uint64_t turn;
} Position;

/* A condition: its scalar rules and where its listed rules' items are (first, count). */
typedef struct {
    int32_t streak_first; /* the first condition of its streak (itself when not in one) */
    int32_t stm;          /* -1: either side; 1: White; 0: Black */
    int32_t captured;     /* 0: no rule; bit 0: takes nothing; bit t: takes a piece of type t */
    int32_t moved;        /* 0: no rule; bit t: a piece of type t moves */
    int32_t sub_fen_first, sub_fen_count;
    int32_t material_first, material_count;
    int32_t imbalance_first, imbalance_count;
    int32_t move_first, move_count;
    int32_t exact_first, exact_count;
} Condition;

/* A sub-FEN: the squares each side must occupy (a quick first test), then each piece's. */
typedef struct {
    uint64_t occupied[2];
    uint64_t masks[12];
} SubFen;

/* Piece counts as the board keeps them: a byte per piece type (pawn first), White's word then
 * Black's. */
typedef struct {
    uint64_t counts[2];
} Material;

typedef struct {
    int64_t pawns, pieces;
} Imbalance;

/* A move pattern against a move's key (move_key() below): (key & mask) == value. */
typedef struct {
    uint32_t value, mask;
} MovePattern;

/* The key of a move, each field in its bits, for the move patterns. */
#define KEY_FROM_FILE 6
#define KEY_FROM_RANK 9
#define KEY_TYPE 12
#define KEY_WHITE 15
#define KEY_CASTLE 16
#define KEY_CAPTURE 18
#define KEY_PROMOTION 19

typedef struct {
    uint64_t masks[12];
    uint64_t occupied[2]; /* White's, Black's */
    uint64_t castling;    /* rook squares */
    uint64_t counts[2];   /* as Material's */
    int64_t pieces;       /* White's pieces' value less Black's (kings and pawns: 0) */
    int side;             /* to move: 0 White, 1 Black */
    uint8_t square[64];   /* 0 empty, else the piece's index (0-11) + 1 */
} Board;

/* By piece code (index + 1): its side, its type, its count's unit and its signed value. */
static const uint8_t SIDE[13] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1};
static const uint8_t TYPE[13] = {0, PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING,
                                 PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING};
static const int64_t VALUE[13] = {0, 0, 753, 826, 1285, 2513, 0, 0, -753, -826, -1285, -2513, 0};
#define UNIT(code) ((uint64_t)1 << (8 * (TYPE[code] - 1)))
#define BIT(square) ((uint64_t)1 << (square))
/* A side's first rank, where a king's move takes its castling rights. */
static const uint64_t BACK_RANK[2] = {0xFFull, 0xFFull << 56};

static inline void add_piece(Board *b, int square, int code) {
    b->masks[code - 1] |= BIT(square);
    b->occupied[SIDE[code]] |= BIT(square);
    b->counts[SIDE[code]] += UNIT(code);
    b->pieces += VALUE[code];
    b->square[square] = (uint8_t)code;
}

static inline void remove_piece(Board *b, int square) {
    int code = b->square[square];
    b->masks[code - 1] &= ~BIT(square);
    b->occupied[SIDE[code]] &= ~BIT(square);
    b->counts[SIDE[code]] -= UNIT(code);
    b->pieces -= VALUE[code];
    b->square[square] = 0;
}

/* A board from a start position; 0 when two pieces share a square or the side is not 0/1. */
static int set_board(Board *b, const Position *start) {
    memset(b, 0, sizeof *b);
    if (start->turn > 1) return 0;
    for (int i = 0; i < 12; i++) {
        for (int square = 0; square < 64; square++) {
            if (!(start->masks[i] >> square & 1)) continue;
            if (b->square[square]) return 0;
            add_piece(b, square, i + 1);
        }
    }
    b->castling = start->castling;
    b->side = start->turn ? 0 : 1;
    return 1;
}

/* A move read against the board: what playing it and the rules need. */
typedef struct {
    int from, to, code;   /* code: the moving piece */
    int castle;           /* 0; 1 short (the rook on a higher file than the king); 2 long */
    int taken;            /* the type of the piece taken, 0 none */
    int taken_square;     /* where it stands (en passant: behind the target) */
    int promotion;        /* the type promoted to, 0 none */
} Move;

/* Read the move `raw` on the board; 0 when it is damage (see the top of this file). */
static inline int read_move(const Board *b, unsigned raw, Move *m) {
    int to = (int)(raw & 63), from = (int)(raw >> 6 & 63), code_bits = (int)(raw >> 12);
    if (code_bits > 4) return 0; /* promotion codes 5-7, or bit 15 */
    int code = b->square[from];
    if (!code || SIDE[code] != b->side) return 0;
    int type = TYPE[code], target = b->square[to];
    m->from = from;
    m->to = to;
    m->code = code;
    m->castle = 0;
    m->taken = 0;
    m->taken_square = to;
    m->promotion = code_bits ? code_bits + 1 : 0;
    if (target) {
        if (SIDE[target] == b->side) {
            /* The king taking its own rook on its rank: castling; its landing squares must be
             * free but for the king and the rook. */
            if (type != KING || TYPE[target] != ROOK || (from ^ to) >> 3 || code_bits) return 0;
            m->castle = (to & 7) > (from & 7) ? 1 : 2;
            int rank = from & 56;
            int king_to = rank + (m->castle == 1 ? 6 : 2), rook_to = rank + (m->castle == 1 ? 5 : 3);
            if ((b->square[king_to] && king_to != from && king_to != to) ||
                (b->square[rook_to] && rook_to != from && rook_to != to))
                return 0;
        } else {
            if (TYPE[target] == KING) return 0;
            m->taken = TYPE[target];
        }
    } else if (type == PAWN && (from ^ to) & 7) {
        /* A pawn moving aslant to an empty square takes en passant: the pawn behind it. */
        int behind = b->side ? to + 8 : to - 8;
        if (behind < 0 || behind > 63 || b->square[behind] != (b->side ? PAWN : PAWN + 6))
            return 0;
        m->taken = PAWN;
        m->taken_square = behind;
    }
    if (type == PAWN) {
        /* A pawn promotes exactly when it reaches the far rank. */
        if (((to >> 3) == (b->side ? 0 : 7)) != (code_bits != 0)) return 0;
    } else if (code_bits) {
        return 0;
    }
    return 1;
}

/* The move's key, for the move patterns: each of its fields in its bits (KEY_*). */
static inline uint32_t move_key(const Move *m) {
    return (uint32_t)m->to | (uint32_t)(m->from & 7) << KEY_FROM_FILE |
           (uint32_t)(m->from >> 3) << KEY_FROM_RANK | (uint32_t)TYPE[m->code] << KEY_TYPE |
           (uint32_t)(SIDE[m->code] == 0) << KEY_WHITE | (uint32_t)m->castle << KEY_CASTLE |
           (uint32_t)(m->taken != 0) << KEY_CAPTURE | (uint32_t)m->promotion << KEY_PROMOTION;
}

/* Play a move read_move() took. */
static inline void play(Board *b, const Move *m) {
    int side = b->side, from = m->from, to = m->to, code = m->code;
    if (m->castle) {
        int rank = from & 56;
        int king_to = rank + (m->castle == 1 ? 6 : 2), rook_to = rank + (m->castle == 1 ? 5 : 3);
        int rook = b->square[to];
        /* (XOR: right when the king or the rook stays where it is) */
        b->masks[code - 1] ^= BIT(from) ^ BIT(king_to);
        b->masks[rook - 1] ^= BIT(to) ^ BIT(rook_to);
        b->occupied[side] ^= BIT(from) ^ BIT(king_to) ^ BIT(to) ^ BIT(rook_to);
        b->square[from] = 0;
        b->square[to] = 0;
        b->square[king_to] = (uint8_t)code;
        b->square[rook_to] = (uint8_t)rook;
    } else {
        if (m->taken) remove_piece(b, m->taken_square);
        if (m->promotion) {
            remove_piece(b, from);
            add_piece(b, to, m->promotion + 6 * side);
        } else {
            uint64_t both = BIT(from) | BIT(to);
            b->masks[code - 1] ^= both;
            b->occupied[side] ^= both;
            b->square[from] = 0;
            b->square[to] = (uint8_t)code;
        }
    }
    b->castling &= ~(BIT(from) | BIT(to));
    if (TYPE[code] == KING) b->castling &= ~BACK_RANK[side];
    b->side = side ^ 1;
}

/* The query as scan() reads it. */
typedef struct {
    const Condition *conditions;
    Py_ssize_t count;
    const SubFen *sub_fens;
    const Material *materials;
    const Imbalance *imbalances;
    const MovePattern *moves;
    const Position *exacts;
} Query;

/* Whether every rule of a condition holds at the board's position, with `m` the move played
 * from it (NULL: none). Cheapest first. */
static inline int holds(const Query *q, const Condition *c, const Board *b, const Move *m) {
    if (c->stm >= 0 && c->stm != (b->side == 0)) return 0;
    if (c->moved && !(m && c->moved >> TYPE[m->code] & 1)) return 0;
    if (c->captured && !(m && c->captured >> m->taken & 1)) return 0;
    if (c->move_count) {
        if (!m) return 0;
        uint32_t key = move_key(m);
        const MovePattern *p = q->moves + c->move_first, *end = p + c->move_count;
        while (p < end && (key & p->mask) != p->value) p++;
        if (p == end) return 0;
    }
    if (c->material_count) {
        const Material *p = q->materials + c->material_first, *end = p + c->material_count;
        while (p < end && (p->counts[0] != b->counts[0] || p->counts[1] != b->counts[1])) p++;
        if (p == end) return 0;
    }
    if (c->imbalance_count) {
        int64_t pawns = (int64_t)(b->counts[0] & 0xFF) - (int64_t)(b->counts[1] & 0xFF);
        const Imbalance *p = q->imbalances + c->imbalance_first, *end = p + c->imbalance_count;
        while (p < end && (p->pawns != pawns || p->pieces != b->pieces)) p++;
        if (p == end) return 0;
    }
    if (c->sub_fen_count) {
        const SubFen *p = q->sub_fens + c->sub_fen_first, *end = p + c->sub_fen_count;
        for (; p < end; p++) {
            if ((b->occupied[0] & p->occupied[0]) != p->occupied[0] ||
                (b->occupied[1] & p->occupied[1]) != p->occupied[1])
                continue;
            uint64_t missing = 0;
            for (int i = 0; i < 12; i++) missing |= p->masks[i] & ~b->masks[i];
            if (!missing) break;
        }
        if (p == end) return 0;
    }
    if (c->exact_count) {
        const Position *p = q->exacts + c->exact_first, *end = p + c->exact_count;
        for (; p < end; p++) {
            if (p->turn != (uint64_t)(b->side == 0) || p->castling != b->castling) continue;
            int i = 0;
            while (i < 12 && p->masks[i] == b->masks[i]) i++;
            if (i == 12) break;
        }
        if (p == end) return 0;
    }
    return 1;
}

/* The games: arrow's binary (offsets of 4 bytes) or large_binary (8) layout. */
typedef struct {
    const uint8_t *data;
    Py_ssize_t data_size;
    const uint8_t *offsets; /* (read with memcpy: a slice's buffer need not be aligned) */
    int wide;
    const uint8_t *validity; /* NULL: no nulls */
    Py_ssize_t first;        /* the array's offset */
} Games;

/* A game's bytes; an empty range when it is null or its offsets are out of bounds. */
static inline const uint8_t *game_bytes(const Games *g, Py_ssize_t i, Py_ssize_t *size) {
    Py_ssize_t at = g->first + i;
    *size = 0;
    if (g->validity && !(g->validity[at >> 3] >> (at & 7) & 1)) return g->data;
    int64_t begin, end;
    if (g->wide) {
        memcpy(&begin, g->offsets + 8 * at, 8);
        memcpy(&end, g->offsets + 8 * (at + 1), 8);
    } else {
        int32_t b32, e32;
        memcpy(&b32, g->offsets + 4 * at, 4);
        memcpy(&e32, g->offsets + 4 * (at + 1), 4);
        begin = b32;
        end = e32;
    }
    if (begin < 0 || end < begin || end > g->data_size) return g->data;
    *size = (Py_ssize_t)(end - begin);
    return g->data + begin;
}

/* Growing outputs: the matched games' indexes and their plies (conditions a game). */
typedef struct {
    int64_t *games;
    int32_t *plies;
    Py_ssize_t size, room;
} Found;

static int found_add(Found *f, int64_t game, const int32_t *plies, Py_ssize_t conditions) {
    if (f->size == f->room) {
        Py_ssize_t room = f->room ? 2 * f->room : 64;
        int64_t *games = realloc(f->games, (size_t)room * sizeof *games);
        if (!games) return 0;
        f->games = games;
        int32_t *more = realloc(f->plies, (size_t)(room * conditions) * sizeof *more);
        if (!more) return 0;
        f->plies = more;
        f->room = room;
    }
    f->games[f->size] = game;
    memcpy(f->plies + f->size * conditions, plies, (size_t)conditions * sizeof *plies);
    f->size++;
    return 1;
}

/* Scoutfish's loop over one game from `board`: 1 when it matches (its plies in `plies`), 0 when
 * not. `positions` counts the positions looked at. */
static int scan_game(const Query *q, Board *board, const uint8_t *moves, Py_ssize_t size,
                     int32_t *plies, long long *positions) {
    Py_ssize_t n = size / 2, c = 0, last = q->count - 1;
    Move move;
    for (Py_ssize_t p = 0;; p++) {
        const Move *m = NULL;
        if (p < n) {
            unsigned raw = (unsigned)moves[2 * p] | (unsigned)moves[2 * p + 1] << 8;
            if (read_move(board, raw, &move)) m = &move;
        }
        ++*positions;
        /* In a streak past its first condition, the last match must be the ply before. */
        const Condition *cond = q->conditions + c;
        if (cond->streak_first < c && plies[c - 1] != p - 1) {
            c = 0;
            cond = q->conditions;
        }
        if (holds(q, cond, board, m)) {
            plies[c] = (int32_t)(p > INT32_MAX ? INT32_MAX : p);
            if (c == last) return 1;
            c++;
        }
        if (!m) return 0;
        play(board, m);
    }
}

/* The Py_buffer arguments of scan(), released together. */
enum { B_DATA, B_OFFSETS, B_VALIDITY, B_RESULTS, B_START_OF, B_STARTS, B_CONDITIONS,
       B_SUB_FENS, B_MATERIALS, B_IMBALANCES, B_MOVES, B_EXACTS, B_ALLOWED, BUFFERS };

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view[BUFFERS];
    Py_ssize_t first, count, limit;
    int wide;
    memset(view, 0, sizeof view);
    if (!PyArg_ParseTuple(args, "y*y*pz*nny*y*y*y*y*y*y*y*y*y*n", &view[B_DATA],
                          &view[B_OFFSETS], &wide, &view[B_VALIDITY], &first, &count,
                          &view[B_RESULTS], &view[B_START_OF], &view[B_STARTS],
                          &view[B_CONDITIONS], &view[B_SUB_FENS], &view[B_MATERIALS],
                          &view[B_IMBALANCES], &view[B_MOVES], &view[B_EXACTS], &view[B_ALLOWED],
                          &limit))
        return NULL; /* (PyArg_ParseTuple releases what it took when it fails) */
    PyObject *result = NULL;
    Board *boards = NULL;
    int32_t *plies = NULL;
    Found found = {NULL, NULL, 0, 0};
    Query q;
    Py_ssize_t starts = view[B_STARTS].len / (Py_ssize_t)sizeof(Position);
    Py_ssize_t widths = wide ? 8 : 4;
    q.count = view[B_CONDITIONS].len / (Py_ssize_t)sizeof(Condition);
    Py_ssize_t sizes[5] = {
        view[B_SUB_FENS].len / (Py_ssize_t)sizeof(SubFen),
        view[B_MATERIALS].len / (Py_ssize_t)sizeof(Material),
        view[B_IMBALANCES].len / (Py_ssize_t)sizeof(Imbalance),
        view[B_MOVES].len / (Py_ssize_t)sizeof(MovePattern),
        view[B_EXACTS].len / (Py_ssize_t)sizeof(Position),
    };
    if (first < 0 || count < 0 || first > PY_SSIZE_T_MAX / 16 - count - 1 ||
        view[B_OFFSETS].len < (first + count + 1) * widths ||
        (view[B_VALIDITY].buf && view[B_VALIDITY].len < (first + count + 7) / 8) ||
        view[B_RESULTS].len != count || view[B_START_OF].len != count * 4) {
        PyErr_SetString(PyExc_ValueError, "the games' buffers do not hold that many games");
        goto done;
    }
    if (view[B_STARTS].len % (Py_ssize_t)sizeof(Position) ||
        view[B_CONDITIONS].len % (Py_ssize_t)sizeof(Condition) || q.count < 1 ||
        view[B_SUB_FENS].len % (Py_ssize_t)sizeof(SubFen) ||
        view[B_MATERIALS].len % (Py_ssize_t)sizeof(Material) ||
        view[B_IMBALANCES].len % (Py_ssize_t)sizeof(Imbalance) ||
        view[B_MOVES].len % (Py_ssize_t)sizeof(MovePattern) ||
        view[B_EXACTS].len % (Py_ssize_t)sizeof(Position) || view[B_ALLOWED].len != 256) {
        PyErr_SetString(PyExc_ValueError, "the query's or the starts' buffers are not whole");
        goto done;
    }
    q.conditions = view[B_CONDITIONS].buf;
    q.sub_fens = view[B_SUB_FENS].buf;
    q.materials = view[B_MATERIALS].buf;
    q.imbalances = view[B_IMBALANCES].buf;
    q.moves = view[B_MOVES].buf;
    q.exacts = view[B_EXACTS].buf;
    for (Py_ssize_t c = 0; c < q.count; c++) {
        const Condition *cond = q.conditions + c;
        const int32_t ranges[5][2] = {{cond->sub_fen_first, cond->sub_fen_count},
                                      {cond->material_first, cond->material_count},
                                      {cond->imbalance_first, cond->imbalance_count},
                                      {cond->move_first, cond->move_count},
                                      {cond->exact_first, cond->exact_count}};
        int bad = cond->streak_first < 0 || cond->streak_first > c || cond->stm < -1 ||
                  cond->stm > 1;
        for (int r = 0; r < 5; r++)
            bad |= ranges[r][0] < 0 || ranges[r][1] < 0 || ranges[r][0] > sizes[r] ||
                   ranges[r][1] > sizes[r] - ranges[r][0];
        if (bad) {
            PyErr_Format(PyExc_ValueError, "condition %zd's rules are out of the query's tables",
                         c);
            goto done;
        }
    }
    const int32_t *start_of = view[B_START_OF].buf;
    for (Py_ssize_t g = 0; g < count; g++) {
        if (start_of[g] < -1 || start_of[g] >= starts) {
            PyErr_Format(PyExc_ValueError, "game %zd's start %d is not in the start table", g,
                         (int)start_of[g]);
            goto done;
        }
    }
    boards = malloc((size_t)(starts + 1) * sizeof *boards);
    plies = malloc((size_t)q.count * sizeof *plies);
    if (!boards || !plies) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < starts; s++) {
        if (!set_board(&boards[s], (const Position *)view[B_STARTS].buf + s)) {
            PyErr_Format(PyExc_ValueError, "start %zd has two pieces on a square", s);
            goto done;
        }
    }
    Games games = {view[B_DATA].buf, view[B_DATA].len, view[B_OFFSETS].buf, wide,
                   view[B_VALIDITY].buf, first};
    const uint8_t *results = view[B_RESULTS].buf, *allowed = view[B_ALLOWED].buf;
    Board *board = &boards[starts]; /* the game's board, set from its start's */
    long long positions = 0;
    int out_of_memory = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t g = 0; g < count && (limit < 0 || found.size < limit); g++) {
        /* A result rule that fails fails at every position: the game is not replayed. */
        if (!allowed[results[g]] || start_of[g] < 0) continue;
        Py_ssize_t size;
        const uint8_t *moves = game_bytes(&games, g, &size);
#ifdef CHESSPIPE_EXACT_BUFFERS
        /* The sanitizer build (tests/test_compiled_sanitized.py) reads a copy of each game in a
         * buffer of its exact size, so that a read one byte past it is caught. */
        uint8_t *copy = malloc(size ? (size_t)size : 1);
        if (!copy) {
            out_of_memory = 1;
            break;
        }
        memcpy(copy, moves, (size_t)size);
        moves = copy;
#endif
        memcpy(board, &boards[start_of[g]], sizeof *board);
        int matched = scan_game(&q, board, moves, size, plies, &positions);
#ifdef CHESSPIPE_EXACT_BUFFERS
        free(copy);
#endif
        if (matched && !found_add(&found, (int64_t)g, plies, q.count)) {
            out_of_memory = 1;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (out_of_memory) {
        PyErr_NoMemory();
        goto done;
    }
    static const char nothing[1] = {0}; /* (a NULL pointer would give None) */
    result = Py_BuildValue("y#y#L", found.games ? (const char *)found.games : nothing,
                           found.size * 8, found.plies ? (const char *)found.plies : nothing,
                           found.size * q.count * 4, positions);
done:
    free(found.games);
    free(found.plies);
    free(boards);
    free(plies);
    for (int i = 0; i < BUFFERS; i++)
        if (view[i].obj) PyBuffer_Release(&view[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, offsets, wide, validity, first, count, results, start_of, starts, conditions,\n"
     "     sub_fens, materials, imbalances, moves, exacts, allowed, limit)\n"
     "-> (games, plies, positions)\n\n"
     "Scan `count` games of an arrow binary array's buffers (offsets of 8 bytes when `wide`;\n"
     "validity None: no nulls; `first`: the array's offset) for the query of the struct tables\n"
     "scan.py lays out. Native int64 indexes of the games matched, native int32 plies (one a\n"
     "condition per game), and the positions looked at. limit < 0: no limit."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scout", "The position search's scanner, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__scout(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    /* The tables' record sizes, which scan.py's dtypes must equal. */
    static const struct {
        const char *name;
        long size;
    } sizes[] = {{"POSITION_SIZE", (long)sizeof(Position)},
                 {"CONDITION_SIZE", (long)sizeof(Condition)},
                 {"SUB_FEN_SIZE", (long)sizeof(SubFen)},
                 {"MATERIAL_SIZE", (long)sizeof(Material)},
                 {"IMBALANCE_SIZE", (long)sizeof(Imbalance)},
                 {"MOVE_SIZE", (long)sizeof(MovePattern)}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        if (PyModule_AddIntConstant(m, sizes[i].name, sizes[i].size) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
