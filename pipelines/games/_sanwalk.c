/* The SAN walk of Standard games from the start position, in compiled code.
 *
 * For each movetext: read its first SAN moves as python-chess's PGN reader finds them, play
 * each on a board with python-chess's rules for SAN (Board.parse_san), and write the Polyglot
 * key of the position before each move and the move's Polyglot code.
 *
 * Only movetext of a plain shape is read here: move numbers, SAN moves of the usual shapes
 * with check signs and !/? annotations, brace comments, NAGs and results. A movetext with
 * anything else before the moves asked for (a variation, a rest-of-line comment, an escape
 * line, a blank line, a null move, a move written another way) or a move that is not exactly
 * one legal move is refused (length -1), and python-chess decides it: this code never accepts
 * what python-chess would read otherwise. A text with fewer moves than asked for is walked to
 * its end (the caller knows how many it holds).
 *
 * The annotated walk (walk_annotated) reads too, in the same pass, the clock and the evaluation
 * Lichess writes in the comments after each move walked ([%clk 0:01:00], [%eval 0.17]): as
 * eval_comments.py's move_annotations reads them, a comment belonging to the last move before
 * it. Past the moves asked for it reads on to the next move, for the comments of the last move
 * walked, and stops where the walk would refuse the text (the moves walked stand).
 *
 * Bounds: every read is checked against the text's length; no input byte sequence reads
 * outside its buffer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The walk is compiled twice (plain and annotated), each with its helpers inlined as when it
 * was compiled once. */
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* Pieces as codes: 0 empty, 1-6 White pawn, knight, bishop, rook, queen, king; 7-12 Black's. */
enum { EMPTY = 0, PAWN = 1, KNIGHT, BISHOP, ROOK, QUEEN, KING };

#define WHITE_KINGSIDE 1
#define WHITE_QUEENSIDE 2
#define BLACK_KINGSIDE 4
#define BLACK_QUEENSIDE 8

/* The 781 Polyglot random numbers, set once by set_randoms() from python-chess's table. */
static uint64_t RANDOM[781];
static int randoms_set = 0;

typedef struct {
    uint8_t square[64]; /* a1 = 0, b1 = 1, ..., h8 = 63 */
    int white;          /* White to move */
    int castling;       /* rights, the four bits above */
    int en_passant;     /* the square a double step passed over, or -1 */
    int king[2];        /* the kings' squares, Black's then White's */
    uint64_t pieces;    /* the pieces' part of the Polyglot key */
    uint64_t occupied[13]; /* by piece code: the squares it stands on (bit 0: a1) */
} Board;

/* Put a piece on a square, or take what stands there off (EMPTY), keeping the bitboards. */
static inline void put(Board *b, int square, int piece) {
    b->occupied[b->square[square]] &= ~((uint64_t)1 << square);
    b->square[square] = (uint8_t)piece;
    b->occupied[piece] |= (uint64_t)1 << square;
}

typedef struct {
    int from, to, promotion; /* promotion: a piece type, or 0 */
    int castles;             /* 1: the king moves two files, its rook with it */
    int en_passant;          /* 1: a pawn takes the pawn beside its target */
} Move;

static const uint8_t TYPE_OF[13] = {EMPTY, PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING,
                                    PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING};
static inline int type_of(int piece) { return TYPE_OF[piece]; }
static inline int is_white(int piece) { return piece >= 1 && piece <= 6; }
static inline int own(const Board *b, int piece) {
    return piece != EMPTY && is_white(piece) == b->white;
}
static inline int make_piece(int type, int white) { return white ? type : type + 6; }
static inline int file_of(int square) { return square & 7; }
static inline int rank_of(int square) { return square >> 3; }

static inline uint64_t piece_random(int piece, int square) {
    int kind = (type_of(piece) - 1) * 2 + (is_white(piece) ? 1 : 0);
    return RANDOM[64 * kind + square];
}

static ALWAYS_INLINE void start_position(Board *b) {
    static const uint8_t back[8] = {ROOK, KNIGHT, BISHOP, QUEEN, KING, BISHOP, KNIGHT, ROOK};
    memset(b->square, EMPTY, sizeof b->square);
    memset(b->occupied, 0, sizeof b->occupied);
    b->occupied[EMPTY] = ~(uint64_t)0;
    for (int f = 0; f < 8; f++) {
        put(b, f, back[f]);
        put(b, 8 + f, PAWN);
        put(b, 48 + f, PAWN + 6);
        put(b, 56 + f, back[f] + 6);
    }
    b->white = 1;
    b->castling = WHITE_KINGSIDE | WHITE_QUEENSIDE | BLACK_KINGSIDE | BLACK_QUEENSIDE;
    b->en_passant = -1;
    b->king[1] = 4;
    b->king[0] = 60;
    b->pieces = 0;
    for (int s = 0; s < 64; s++)
        if (b->square[s]) b->pieces ^= piece_random(b->square[s], s);
}

/* The Polyglot key: pieces, castling rights, the en passant file where a pawn of the side to
 * move stands beside the pawn that made the double step (legality aside), side to move. */
static ALWAYS_INLINE uint64_t polyglot_key(const Board *b) {
    uint64_t key = b->pieces;
    for (int bit = 0; bit < 4; bit++)
        if (b->castling >> bit & 1) key ^= RANDOM[768 + bit];
    if (b->en_passant >= 0) {
        int file = file_of(b->en_passant);
        int beside_rank = b->white ? 4 : 3;
        int pawn = make_piece(PAWN, b->white);
        if ((file > 0 && b->square[beside_rank * 8 + file - 1] == pawn) ||
            (file < 7 && b->square[beside_rank * 8 + file + 1] == pawn))
            key ^= RANDOM[772 + file];
    }
    if (b->white) key ^= RANDOM[780];
    return key;
}

static const int KNIGHT_STEPS[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2},
                                       {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
static const int KING_STEPS[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1},
                                     {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
static const int ROOK_RAYS[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
static const int BISHOP_RAYS[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

static inline int on_board(int file, int rank) {
    return file >= 0 && file < 8 && rank >= 0 && rank < 8;
}

/* Squares by square, set once by init_tables(): a knight's and a king's targets (-1 ends the
 * list), and the squares of each ray from the square outwards (rook rays first, -1 ends). */
static int8_t KNIGHT_TARGETS[64][9], KING_TARGETS[64][9], RAYS[64][8][8];
/* The same as bitboards, and the squares from which a pawn (Black's, White's) attacks a
 * square. */
static uint64_t KNIGHT_MASK[64], KING_MASK[64], RAY_MASK[64][8], PAWN_ATTACKERS[2][64];
/* The squares of a square's rook rays, and of its bishop rays. */
static uint64_t LINES[64][2];

static void init_tables(void) {
    for (int square = 0; square < 64; square++) {
        int f = file_of(square), r = rank_of(square), knights = 0, kings = 0;
        for (int i = 0; i < 8; i++) {
            if (on_board(f + KNIGHT_STEPS[i][0], r + KNIGHT_STEPS[i][1]))
                KNIGHT_TARGETS[square][knights++] =
                    (int8_t)((r + KNIGHT_STEPS[i][1]) * 8 + f + KNIGHT_STEPS[i][0]);
            if (on_board(f + KING_STEPS[i][0], r + KING_STEPS[i][1]))
                KING_TARGETS[square][kings++] =
                    (int8_t)((r + KING_STEPS[i][1]) * 8 + f + KING_STEPS[i][0]);
            const int *ray = i < 4 ? ROOK_RAYS[i] : BISHOP_RAYS[i - 4];
            int length = 0;
            for (int sf = f + ray[0], sr = r + ray[1]; on_board(sf, sr); sf += ray[0], sr += ray[1])
                RAYS[square][i][length++] = (int8_t)(sr * 8 + sf);
            if (length < 8) RAYS[square][i][length] = -1;
        }
        KNIGHT_TARGETS[square][knights] = -1;
        KING_TARGETS[square][kings] = -1;
        for (int k = 0; k < knights; k++) KNIGHT_MASK[square] |= (uint64_t)1 << KNIGHT_TARGETS[square][k];
        for (int k = 0; k < kings; k++) KING_MASK[square] |= (uint64_t)1 << KING_TARGETS[square][k];
        for (int i = 0; i < 8; i++) {
            for (int k = 0; k < 8 && RAYS[square][i][k] >= 0; k++)
                RAY_MASK[square][i] |= (uint64_t)1 << RAYS[square][i][k];
            LINES[square][i >= 4] |= RAY_MASK[square][i];
        }
        for (int white = 0; white < 2; white++) {
            int pawn_rank = white ? r - 1 : r + 1;
            for (int side = -1; side <= 1; side += 2)
                if (on_board(f + side, pawn_rank))
                    PAWN_ATTACKERS[white][square] |= (uint64_t)1 << (pawn_rank * 8 + f + side);
        }
    }
}

/* Whether `square` is attacked by the side `white`'s pieces. */
static int attacked(const Board *b, int square, int white) {
    const uint64_t *on = b->occupied;
    int base = white ? 0 : 6;
    if (PAWN_ATTACKERS[white][square] & on[base + PAWN]) return 1;
    if (KNIGHT_MASK[square] & on[base + KNIGHT]) return 1;
    if (KING_MASK[square] & on[base + KING]) return 1;
    uint64_t straight = on[base + ROOK] | on[base + QUEEN];
    uint64_t diagonal = on[base + BISHOP] | on[base + QUEEN];
    if (!((LINES[square][0] & straight) | (LINES[square][1] & diagonal))) return 0;
    for (int i = 0; i < 8; i++) {
        uint64_t sliders = i < 4 ? straight : diagonal;
        if (!(RAY_MASK[square][i] & sliders)) continue;
        /* The first piece on the ray: is it one of them? */
        const int8_t *ray = RAYS[square][i];
        for (int k = 0; k < 8 && ray[k] >= 0; k++) {
            if (b->square[ray[k]] != EMPTY) {
                if (sliders >> ray[k] & 1) return 1;
                break;
            }
        }
    }
    return 0;
}

/* Play a move the caller found pseudo-legal: the pieces and the kings' squares, and with
 * `keyed` the key's pieces part and the state too (without: enough to see a check). */
static void play(Board *b, const Move *m, int keyed) {
    int piece = b->square[m->from];
    int target = b->square[m->to];
    if (keyed) {
        b->pieces ^= piece_random(piece, m->from);
        if (target != EMPTY) b->pieces ^= piece_random(target, m->to);
    }
    if (m->en_passant) {
        int taken = rank_of(m->from) * 8 + file_of(m->to);
        if (keyed) b->pieces ^= piece_random(b->square[taken], taken);
        put(b, taken, EMPTY);
    }
    int placed = m->promotion ? make_piece(m->promotion, b->white) : piece;
    put(b, m->from, EMPTY);
    put(b, m->to, placed);
    if (type_of(piece) == KING) b->king[b->white] = m->to;
    if (keyed) b->pieces ^= piece_random(placed, m->to);
    if (m->castles) {
        int base = rank_of(m->from) * 8;
        int kingside = file_of(m->to) > file_of(m->from);
        int rook_from = base + (kingside ? 7 : 0), rook_to = base + (kingside ? 5 : 3);
        int rook = b->square[rook_from];
        if (keyed) b->pieces ^= piece_random(rook, rook_from) ^ piece_random(rook, rook_to);
        put(b, rook_from, EMPTY);
        put(b, rook_to, rook);
    }
    if (!keyed) {
        b->white = !b->white;
        return;
    }
    /* Castling rights: lost when the king moves, and when a piece leaves or reaches a corner. */
    if (type_of(piece) == KING)
        b->castling &= b->white ? ~(WHITE_KINGSIDE | WHITE_QUEENSIDE)
                                : ~(BLACK_KINGSIDE | BLACK_QUEENSIDE);
    for (int i = 0; i < 2; i++) {
        int s = i ? m->to : m->from;
        if (s == 7) b->castling &= ~WHITE_KINGSIDE;
        if (s == 0) b->castling &= ~WHITE_QUEENSIDE;
        if (s == 63) b->castling &= ~BLACK_KINGSIDE;
        if (s == 56) b->castling &= ~BLACK_QUEENSIDE;
    }
    b->en_passant = -1;
    if (type_of(piece) == PAWN && abs(m->to - m->from) == 16) b->en_passant = (m->from + m->to) / 2;
    b->white = !b->white;
}

/* Whether a pseudo-legal move leaves the mover's king unattacked. */
static ALWAYS_INLINE int legal(const Board *b, const Move *m, int in_check) {
    int king = b->king[b->white];
    /* Out of check, a piece that is not the king, not taking en passant and not on a line
     * with its king cannot uncover an attack on it: legal without playing it. */
    if (!in_check && m->from != king && !m->en_passant) {
        int df = file_of(m->from) - file_of(king), dr = rank_of(m->from) - rank_of(king);
        if (df != 0 && dr != 0 && abs(df) != abs(dr)) return 1;
    }
    Board after = *b;
    play(&after, m, 0);
    return !attacked(&after, after.king[b->white], after.white);
}

/* Whether a king on `from` reaches `to` in one step. */
static ALWAYS_INLINE int king_step(int from, int to) {
    int adf = abs(file_of(to) - file_of(from)), adr = abs(rank_of(to) - rank_of(from));
    return adf <= 1 && adr <= 1 && (adf | adr);
}

/* A pawn's pseudo-legal move from `from` to `to`, if it has one (promotion not looked at). */
static ALWAYS_INLINE int pawn_move(const Board *b, int from, int to, Move *m) {
    int forward = b->white ? 1 : -1;
    int df = file_of(to) - file_of(from), dr = rank_of(to) - rank_of(from);
    memset(m, 0, sizeof *m);
    m->from = from;
    m->to = to;
    if (df == 0) {
        if (b->square[to] != EMPTY) return 0;
        if (dr == forward) return 1;
        int home = b->white ? 1 : 6;
        return dr == 2 * forward && rank_of(from) == home && b->square[from + 8 * forward] == EMPTY;
    }
    if (abs(df) != 1 || dr != forward) return 0;
    if (b->square[to] != EMPTY) return !own(b, b->square[to]);
    if (to == b->en_passant) {
        m->en_passant = 1;
        return 1;
    }
    return 0;
}

/* A SAN move as read: castling (1 kingside, 2 queenside), or the piece type, the origin's
 * file and rank where given (-1), the target and the promotion's piece type (0). */
typedef struct {
    int castles, type, from_file, from_rank, to, promotion;
} San;

/* The squares from which a piece of the SAN's type could come to its target (at most 8; each
 * is checked again by the caller): a knight's steps from the target, the first piece on each of
 * a slider's rays from it (its path empty), the king's square (its step checked by the
 * caller), and a pawn's squares behind the target. */
static ALWAYS_INLINE int candidate_origins(const Board *b, const San *san, int origins[8]) {
    int count = 0, to = san->to, f = file_of(to), r = rank_of(to);
    if (san->type == PAWN) {
        int back = b->white ? -1 : 1;
        for (int df = -1; df <= 1; df++)
            if (on_board(f + df, r + back)) origins[count++] = (r + back) * 8 + f + df;
        if (on_board(f, r + 2 * back)) origins[count++] = (r + 2 * back) * 8 + f;
    } else if (san->type == KNIGHT) {
        for (const int8_t *t = KNIGHT_TARGETS[to]; *t >= 0; t++) origins[count++] = *t;
    } else if (san->type == KING) {
        origins[count++] = b->king[b->white];
    } else {
        for (int i = san->type == BISHOP ? 4 : 0; i < (san->type == ROOK ? 4 : 8); i++) {
            const int8_t *ray = RAYS[to][i];
            int k = 0;
            while (k < 8 && ray[k] >= 0 && b->square[ray[k]] == EMPTY) k++;
            if (k < 8 && ray[k] >= 0) origins[count++] = ray[k];
        }
    }
    return count;
}

/* Whether exactly one legal move matches the SAN, as Board.parse_san reads it (the capture
 * sign and check signs are not checked, as it does not check them); that move is written. */
static ALWAYS_INLINE int resolve(const Board *b, const San *san, Move *out) {
    if (san->castles) {
        int base = b->white ? 0 : 56, king = base + 4;
        int kingside = san->castles == 1;
        int right = b->white ? (kingside ? WHITE_KINGSIDE : WHITE_QUEENSIDE)
                             : (kingside ? BLACK_KINGSIDE : BLACK_QUEENSIDE);
        int rook = base + (kingside ? 7 : 0);
        if (!(b->castling & right) || b->square[king] != make_piece(KING, b->white) ||
            b->square[rook] != make_piece(ROOK, b->white))
            return 0;
        int low = kingside ? king + 1 : rook + 1, high = kingside ? rook - 1 : king - 1;
        for (int s = low; s <= high; s++)
            if (b->square[s] != EMPTY) return 0;
        int step = kingside ? 1 : -1;
        for (int i = 0; i <= 2; i++)
            if (attacked(b, king + i * step, !b->white)) return 0;
        memset(out, 0, sizeof *out);
        out->from = king;
        out->to = king + 2 * step;
        out->castles = 1;
        return 1;
    }
    if (own(b, b->square[san->to])) return 0;
    int origins[8], count = candidate_origins(b, san, origins);
    int in_check = -1; /* not known yet */
    int found = 0;
    int last_rank = b->white ? 7 : 0;
    for (int k = 0; k < count; k++) {
        int from = origins[k];
        if (b->square[from] != make_piece(san->type, b->white)) continue;
        if (san->from_file >= 0 && file_of(from) != san->from_file) continue;
        if (san->from_rank >= 0 && rank_of(from) != san->from_rank) continue;
        Move m;
        if (san->type == PAWN) {
            /* Without a file, a pawn moves on the target's file (no capture). */
            if (san->from_file < 0 && file_of(from) != file_of(san->to)) continue;
            if (!pawn_move(b, from, san->to, &m)) continue;
            if ((rank_of(san->to) == last_rank) != (san->promotion != 0)) continue;
            m.promotion = san->promotion;
        } else {
            if (san->promotion || (san->type == KING && !king_step(from, san->to))) continue;
            memset(&m, 0, sizeof m);
            m.from = from;
            m.to = san->to;
        }
        if (in_check < 0) in_check = attacked(b, b->king[b->white], !b->white);
        if (!legal(b, &m, in_check)) continue;
        if (++found > 1) return 0; /* ambiguous */
        *out = m;
    }
    return found == 1;
}

static ALWAYS_INLINE int piece_letter(char c) {
    switch (c) {
    case 'N': return KNIGHT;
    case 'B': return BISHOP;
    case 'R': return ROOK;
    case 'Q': return QUEEN;
    case 'K': return KING;
    default: return 0;
    }
}

static inline int is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
static inline int is_file(char c) { return c >= 'a' && c <= 'h'; }
static inline int is_rank(char c) { return c >= '1' && c <= '8'; }

/* Whether a token that ends at `at` is followed by what may follow it: the end, white space, a
 * comment or a NAG. */
static inline int ends_token(const char *t, Py_ssize_t n, Py_ssize_t at) {
    return at >= n || is_space(t[at]) || t[at] == '{' || t[at] == '$';
}

/* Read a SAN move of a usual shape at t[*at], with its check sign and annotation; advance *at.
 * The shapes: O-O, O-O-O; a piece letter, an optional origin file and rank, an optional "x",
 * a target; a pawn's target, or its file, "x" and target; then "=" and N, B, R or Q for a
 * promotion. Return 1 if one is read and ends where a token may end. */
static ALWAYS_INLINE int read_san(const char *t, Py_ssize_t n, Py_ssize_t *at, San *san) {
    Py_ssize_t i = *at;
    memset(san, 0, sizeof *san);
    san->from_file = san->from_rank = -1;
    if (i + 2 < n && t[i] == 'O' && t[i + 1] == '-' && t[i + 2] == 'O') {
        i += 3;
        san->castles = 1;
        if (i + 1 < n && t[i] == '-' && t[i + 1] == 'O') {
            i += 2;
            san->castles = 2;
        }
    } else {
        int type = piece_letter(t[i]);
        if (type) {
            /* Up to four characters before the target's: file, rank, "x". */
            Py_ssize_t j = i + 1;
            if (j < n && is_file(t[j]) && j + 1 < n && !is_rank(t[j + 1])) san->from_file = t[j++] - 'a';
            else if (j + 2 < n && is_file(t[j]) && is_rank(t[j + 1]) &&
                     (is_file(t[j + 2]) || t[j + 2] == 'x')) {
                san->from_file = t[j] - 'a';
                san->from_rank = t[j + 1] - '1';
                j += 2;
            }
            if (san->from_file < 0 && j < n && is_rank(t[j])) san->from_rank = t[j++] - '1';
            if (j < n && t[j] == 'x') j++;
            if (!(j + 1 < n && is_file(t[j]) && is_rank(t[j + 1]))) return 0;
            san->type = type;
            san->to = (t[j + 1] - '1') * 8 + (t[j] - 'a');
            i = j + 2;
        } else if (is_file(t[i])) {
            Py_ssize_t j = i;
            if (j + 1 < n && t[j + 1] == 'x') {
                san->from_file = t[j] - 'a';
                j += 2;
            }
            if (!(j + 1 < n && is_file(t[j]) && is_rank(t[j + 1]))) return 0;
            san->type = PAWN;
            san->to = (t[j + 1] - '1') * 8 + (t[j] - 'a');
            i = j + 2;
            if (i + 1 < n && t[i] == '=') {
                int promotion = piece_letter(t[i + 1]);
                if (!promotion || promotion == KING) return 0;
                san->promotion = promotion;
                i += 2;
            }
        } else {
            return 0;
        }
    }
    if (i < n && (t[i] == '+' || t[i] == '#')) i++;
    for (int k = 0; k < 2 && i < n && (t[i] == '!' || t[i] == '?'); k++) i++;
    if (!ends_token(t, n, i)) return 0;
    *at = i;
    return 1;
}

/* A move's clock and evaluation where it has none (or one that does not read). */
#define NO_CLOCK (-1)
#define NO_EVAL INT32_MIN
/* A mate announcement #n: 32000 - n from the mating side (Stockfish's VALUE_MATE). */
#define VALUE_MATE 32000
/* Centipawns from here up would read as mate or tablebase scores: not read. */
#define MAX_CP 31506

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
/* White space as Python's bytes know it (\s, bytes.strip): space, \t, \n, \v, \f, \r. */
static inline int is_blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* A command's value, white space taken off both ends: *at and *end are moved inwards. */
static inline void strip(const char *v, Py_ssize_t *at, Py_ssize_t *end) {
    while (*at < *end && is_blank(v[*at])) (*at)++;
    while (*end > *at && is_blank(v[*end - 1])) (*end)--;
}

/* A [%clk] value: H:MM:SS or H:MM:SS.f (hours of 1 to 4 digits, minutes and seconds 00 to 59,
 * a fraction of any length), in tenths of a second, the fraction rounded down; or NO_CLOCK. */
static int32_t read_clock(const char *v, Py_ssize_t at, Py_ssize_t end) {
    strip(v, &at, &end);
    int32_t hours = 0, minutes, seconds, tenths = 0;
    Py_ssize_t digits = 0;
    while (at < end && is_digit(v[at]) && digits < 4) {
        hours = hours * 10 + (v[at++] - '0');
        digits++;
    }
    if (!digits || end - at < 6 || v[at] != ':' || v[at + 1] < '0' || v[at + 1] > '5' ||
        !is_digit(v[at + 2]) || v[at + 3] != ':' || v[at + 4] < '0' || v[at + 4] > '5' ||
        !is_digit(v[at + 5]))
        return NO_CLOCK;
    minutes = (v[at + 1] - '0') * 10 + (v[at + 2] - '0');
    seconds = (v[at + 4] - '0') * 10 + (v[at + 5] - '0');
    at += 6;
    if (at < end) {
        if (v[at++] != '.') return NO_CLOCK;
        if (at < end && is_digit(v[at])) tenths = v[at] - '0';
        while (at < end && is_digit(v[at])) at++;
        if (at < end) return NO_CLOCK;
    }
    return ((hours * 60 + minutes) * 60 + seconds) * 10 + tenths;
}

/* Up to `most` digits at v[*at] (at least one): their value, *at moved past them; -1 if none. */
static int64_t read_digits(const char *v, Py_ssize_t *at, Py_ssize_t end, int most) {
    int64_t value = 0;
    int digits = 0;
    while (*at < end && is_digit(v[*at]) && digits < most) {
        value = value * 10 + (v[(*at)++] - '0');
        digits++;
    }
    return digits ? value : -1;
}

/* An [%eval] value as eval_comments.read_eval reads it (#n, or centipawns as pawns with up to
 * two decimals, an optional ",depth" after either), from White's view: centipawns, or a mate
 * as +-(VALUE_MATE - |n|) (#0: the side to move is mated, by the side `white_moved` says); or
 * NO_EVAL when it does not read or its centipawns are above MAX_CP. */
static int32_t read_eval(const char *v, Py_ssize_t at, Py_ssize_t end, int white_moved) {
    strip(v, &at, &end);
    int32_t score;
    if (at < end && v[at] == '#') {
        at++;
        int negative = at < end && v[at] == '-';
        if (at < end && (v[at] == '-' || v[at] == '+')) at++;
        int64_t moves = read_digits(v, &at, end, 4);
        if (moves < 0) return NO_EVAL;
        if (moves == 0) score = white_moved ? VALUE_MATE : -VALUE_MATE;
        else score = negative ? -(VALUE_MATE - (int32_t)moves) : VALUE_MATE - (int32_t)moves;
    } else {
        int negative = at < end && v[at] == '-';
        if (at < end && (v[at] == '-' || v[at] == '+')) at++;
        int64_t whole = read_digits(v, &at, end, 10), fraction = -1;
        if (at < end && v[at] == '.') {
            Py_ssize_t first = ++at;
            fraction = read_digits(v, &at, end, 2);
            if (fraction < 0) return NO_EVAL; /* "1." is not read */
            if (at - first == 1) fraction *= 10; /* ".5": 50 */
        }
        if (whole < 0 && fraction < 0) return NO_EVAL;
        int64_t cp = (whole < 0 ? 0 : whole) * 100 + (fraction < 0 ? 0 : fraction);
        if (cp > MAX_CP) return NO_EVAL;
        score = (int32_t)(negative ? -cp : cp);
    }
    if (at < end && v[at] == ',') {
        at++;
        if (read_digits(v, &at, end, 4) < 0) return NO_EVAL;
    }
    return at == end ? score : NO_EVAL;
}

/* Read a comment's clock and eval for the move before it, each where not yet decided by an
 * earlier comment (`decided`: 1 the clock, 2 the eval): the first [%clk and the first [%eval
 * that one white space follows and a ']' after it, as eval_comments.py's regular expressions
 * find them; a value that does not read decides too (NO_CLOCK, NO_EVAL). */
static void annotate(const char *c, Py_ssize_t len, int white_moved, int *decided, int32_t *clock,
                     int32_t *eval) {
    Py_ssize_t at = 0;
    while (at < len && *decided != 3) {
        const char *open = memchr(c + at, '[', (size_t)(len - at));
        if (!open) return;
        Py_ssize_t p = open - c, start;
        int command;
        at = p + 1;
        if (!(*decided & 1) && len - p > 5 && memcmp(c + p + 1, "%clk", 4) == 0 &&
            is_blank(c[p + 5])) {
            command = 1;
            start = p + 6;
        } else if (!(*decided & 2) && len - p > 6 && memcmp(c + p + 1, "%eval", 5) == 0 &&
                   is_blank(c[p + 6])) {
            command = 2;
            start = p + 7;
        } else {
            continue;
        }
        const char *close = memchr(c + start, ']', (size_t)(len - start));
        if (!close) return; /* nor has any command after this one its ']' */
        if (command == 1) *clock = read_clock(c, start, close - c);
        else *eval = read_eval(c, start, close - c, white_moved);
        *decided |= command;
    }
}

/* Growing output: Polyglot keys and moves, one of each a ply; for an annotated walk a clock
 * and an eval a ply too. */
typedef struct {
    uint64_t *keys;
    uint16_t *moves;
    int32_t *clocks, *evals;
    Py_ssize_t size, capacity;
    int annotated;
} Rows;

static ALWAYS_INLINE int reserve(Rows *rows, Py_ssize_t more) {
    if (rows->size + more <= rows->capacity) return 1;
    Py_ssize_t capacity = rows->capacity ? rows->capacity : 4096;
    while (capacity < rows->size + more) capacity *= 2;
    uint64_t *keys = realloc(rows->keys, (size_t)capacity * sizeof *keys);
    if (!keys) return 0;
    rows->keys = keys;
    uint16_t *moves = realloc(rows->moves, (size_t)capacity * sizeof *moves);
    if (!moves) return 0;
    rows->moves = moves;
    if (rows->annotated) {
        int32_t *clocks = realloc(rows->clocks, (size_t)capacity * sizeof *clocks);
        if (!clocks) return 0;
        rows->clocks = clocks;
        int32_t *evals = realloc(rows->evals, (size_t)capacity * sizeof *evals);
        if (!evals) return 0;
        rows->evals = evals;
    }
    rows->capacity = capacity;
    return 1;
}

/* Walk one movetext: at most `plies` moves (all when negative). Return the moves walked
 * (written to rows), -1 if the text is refused, -2 when memory runs out. An annotated walk
 * reads on past the moves asked for to the next move, and stops without refusing there.
 * (Compiled once for each value of `annotated`: the plain walk pays nothing for the notes.) */
static ALWAYS_INLINE Py_ssize_t walk(const char *t, Py_ssize_t n, Py_ssize_t plies, Rows *rows,
                                     const int annotated) {
    Board board;
    start_position(&board);
    Py_ssize_t start = rows->size, walked = 0, i = 0;
    int decided = 0; /* the last move's clock (1) and eval (2) read */
    while (i < n && (plies < 0 || walked < plies || annotated)) {
        char c = t[i];
        if (c == '\n') {
            /* A blank line ends a game for python-chess's reader (counting reads on). */
            Py_ssize_t j = i + 1;
            while (j < n && (t[j] == ' ' || t[j] == '\t' || t[j] == '\r')) j++;
            if (j < n && t[j] == '\n') goto refused;
            i = j;
        } else if (is_space(c)) {
            i++;
        } else if (c == '{') {
            const char *close = memchr(t + i, '}', (size_t)(n - i));
            if (!close) goto refused;
            if (annotated && walked > 0 && decided != 3)
                annotate(t + i + 1, close - t - i - 1, walked & 1, &decided,
                         &rows->clocks[rows->size - 1], &rows->evals[rows->size - 1]);
            i = close - t + 1;
        } else if (c == '$') {
            Py_ssize_t j = i + 1;
            while (j < n && t[j] >= '0' && t[j] <= '9') j++;
            if (j == i + 1 || !ends_token(t, n, j)) goto refused;
            i = j;
        } else if (c == '!' || c == '?') {
            Py_ssize_t j = i;
            while (j < n && j < i + 2 && (t[j] == '!' || t[j] == '?')) j++;
            if (!ends_token(t, n, j)) goto refused;
            i = j;
        } else if (c == '*') {
            if (!ends_token(t, n, i + 1)) goto refused;
            i++;
        } else if (c >= '0' && c <= '9') {
            Py_ssize_t j = i, zeros = 0;
            while (j < n && t[j] >= '0' && t[j] <= '9') {
                zeros = t[j] == '0' ? zeros + 1 : 0;
                if (zeros >= 4) goto refused; /* "0000" is a null move to python-chess */
                j++;
            }
            if (j < n && t[j] == '.') {
                while (j < n && t[j] == '.') j++;
                if (j < n && !is_space(t[j]) && !(t[j] >= 'a' && t[j] <= 'h') &&
                    !piece_letter(t[j]) && t[j] != 'O')
                    goto refused;
                i = j; /* a move may follow the number at once ("1.e4") */
            } else {
                static const char *results[3] = {"1-0", "0-1", "1/2-1/2"};
                int matched = 0;
                for (int k = 0; k < 3 && !matched; k++) {
                    Py_ssize_t len = (Py_ssize_t)strlen(results[k]);
                    if (n - i >= len && memcmp(t + i, results[k], (size_t)len) == 0 &&
                        ends_token(t, n, i + len)) {
                        i += len;
                        matched = 1;
                    }
                }
                if (!matched) goto refused;
            }
        } else {
            San san;
            Move move;
            if (walked == plies) break; /* (annotated) the next move: the comments are read */
            if (!read_san(t, n, &i, &san) || !resolve(&board, &san, &move)) goto refused;
            if (!reserve(rows, 1)) return -2;
            int to = move.to;
            if (move.castles) /* Polyglot writes castling as the king taking its rook */
                to = rank_of(move.from) * 8 + (file_of(move.to) > file_of(move.from) ? 7 : 0);
            int promotion = move.promotion ? move.promotion - 1 : 0;
            rows->keys[rows->size] = polyglot_key(&board);
            rows->moves[rows->size] = (uint16_t)(to | move.from << 6 | promotion << 12);
            if (annotated) {
                rows->clocks[rows->size] = NO_CLOCK;
                rows->evals[rows->size] = NO_EVAL;
                decided = 0;
            }
            rows->size++;
            play(&board, &move, 1);
            walked++;
        }
    }
    return walked;
refused:
    if (walked == plies) return walked; /* (annotated) past the moves asked for: they stand */
    rows->size = start;
    return -1;
}

static Py_ssize_t walk_plain(const char *t, Py_ssize_t n, Py_ssize_t plies, Rows *rows) {
    return walk(t, n, plies, rows, 0);
}

static Py_ssize_t walk_notes(const char *t, Py_ssize_t n, Py_ssize_t plies, Rows *rows) {
    return walk(t, n, plies, rows, 1);
}

static PyObject *set_randoms(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    if (view.len != (Py_ssize_t)sizeof RANDOM) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "expected %zd bytes of Polyglot randoms, got %zd",
                            (Py_ssize_t)sizeof RANDOM, view.len);
    }
    memcpy(RANDOM, view.buf, sizeof RANDOM);
    PyBuffer_Release(&view);
    randoms_set = 1;
    Py_RETURN_NONE;
}

/* walk_openings and walk_annotated: the texts walked, their rows as bytes. */
static PyObject *walk_texts(PyObject *args, int annotated) {
    PyObject *texts;
    Py_ssize_t plies;
    if (!PyArg_ParseTuple(args, "On", &texts, &plies)) return NULL;
    if (!randoms_set) {
        PyErr_SetString(PyExc_RuntimeError, "set_randoms() was not called");
        return NULL;
    }
    PyObject *sequence = PySequence_Fast(texts, "texts must be a sequence of bytes");
    if (!sequence) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(sequence);
    PyObject **items = PySequence_Fast_ITEMS(sequence);
    for (Py_ssize_t g = 0; g < count; g++) {
        if (!PyBytes_Check(items[g])) {
            Py_DECREF(sequence);
            return PyErr_Format(PyExc_TypeError, "texts[%zd] is not bytes", g);
        }
    }
    int32_t *lengths = malloc((size_t)(count ? count : 1) * sizeof *lengths);
    Rows rows = {NULL, NULL, NULL, NULL, 0, 0, annotated};
    int out_of_memory = lengths == NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t g = 0; g < count && !out_of_memory; g++) {
        const char *text = PyBytes_AS_STRING(items[g]);
        Py_ssize_t size = PyBytes_GET_SIZE(items[g]);
#ifdef CHESSPIPE_EXACT_BUFFERS
        /* The sanitizer build (tests/test_compiled_sanitized.py) walks a copy of each text in
         * a buffer of its exact size, so that a read one byte past it is caught. */
        char *copy = malloc(size ? (size_t)size : 1);
        if (!copy) {
            out_of_memory = 1;
            break;
        }
        memcpy(copy, text, (size_t)size);
        text = copy;
#endif
        Py_ssize_t walked = annotated ? walk_notes(text, size, plies, &rows)
                                      : walk_plain(text, size, plies, &rows);
#ifdef CHESSPIPE_EXACT_BUFFERS
        free(copy);
#endif
        if (walked == -2) out_of_memory = 1;
        lengths[g] = walked > INT32_MAX ? -1 : (int32_t)walked;
    }
    Py_END_ALLOW_THREADS
    Py_DECREF(sequence);
    PyObject *result = NULL;
    if (out_of_memory) {
        PyErr_NoMemory();
    } else {
        static const char nothing[1] = {0}; /* (a NULL pointer would give None) */
        const char *keys = rows.keys ? (const char *)rows.keys : nothing;
        const char *moves = rows.moves ? (const char *)rows.moves : nothing;
        if (annotated)
            result = Py_BuildValue(
                "y#y#y#y#y#", keys, rows.size * 8, moves, rows.size * 2, (const char *)lengths,
                count * 4, rows.clocks ? (const char *)rows.clocks : nothing, rows.size * 4,
                rows.evals ? (const char *)rows.evals : nothing, rows.size * 4);
        else
            result = Py_BuildValue("y#y#y#", keys, rows.size * 8, moves, rows.size * 2,
                                   (const char *)lengths, count * 4);
    }
    free(rows.keys);
    free(rows.moves);
    free(rows.clocks);
    free(rows.evals);
    free(lengths);
    return result;
}

static PyObject *walk_openings(PyObject *self, PyObject *args) {
    (void)self;
    return walk_texts(args, 0);
}

static PyObject *walk_annotated(PyObject *self, PyObject *args) {
    (void)self;
    return walk_texts(args, 1);
}

/* Of each text's rows (lengths[g] rows a text, none where not above 0), the rows that keep
 * each position once per text: the last row of each key (lila-openingexplorer's
 * `without_loops`). Return the kept rows' indexes, ascending, as native int64. */
static PyObject *last_visits(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer keys_view, lengths_view;
    if (!PyArg_ParseTuple(args, "y*y*", &keys_view, &lengths_view)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t rows = keys_view.len / 8, texts = lengths_view.len / 4;
    int64_t *kept = NULL;
    if (keys_view.len % 8 || lengths_view.len % 4) {
        PyErr_SetString(PyExc_ValueError, "keys must be uint64 and lengths int32");
        goto done;
    }
    const uint64_t *keys = keys_view.buf;
    const int32_t *lengths = lengths_view.buf;
    Py_ssize_t total = 0;
    for (Py_ssize_t g = 0; g < texts; g++) total += lengths[g] > 0 ? lengths[g] : 0;
    if (total != rows) {
        PyErr_Format(PyExc_ValueError, "lengths add up to %zd rows, keys hold %zd", total, rows);
        goto done;
    }
    kept = malloc((size_t)(rows ? rows : 1) * sizeof *kept);
    if (!kept) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t count = 0, first = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t g = 0; g < texts; g++) {
        Py_ssize_t end = first + (lengths[g] > 0 ? lengths[g] : 0);
        for (Py_ssize_t i = first; i < end; i++) {
            Py_ssize_t j = i + 1;
            while (j < end && keys[j] != keys[i]) j++;
            if (j == end) kept[count++] = (int64_t)i;
        }
        first = end;
    }
    Py_END_ALLOW_THREADS
    result = PyBytes_FromStringAndSize((const char *)kept, count * 8);
done:
    free(kept);
    PyBuffer_Release(&keys_view);
    PyBuffer_Release(&lengths_view);
    return result;
}

static PyMethodDef methods[] = {
    {"set_randoms", set_randoms, METH_O,
     "set_randoms(randoms: bytes) -> None\n\nThe 781 Polyglot random numbers, native uint64."},
    {"walk_openings", walk_openings, METH_VARARGS,
     "walk_openings(texts: Sequence[bytes], plies: int) -> (keys, moves, lengths)\n\n"
     "Native uint64 keys and uint16 moves of each ply walked, int32 moves walked per text (-1:\n"
     "refused). plies < 0: every move."},
    {"walk_annotated", walk_annotated, METH_VARARGS,
     "walk_annotated(texts: Sequence[bytes], plies: int)\n"
     "    -> (keys, moves, lengths, clocks, evals)\n\n"
     "walk_openings's rows, and per row the [%clk] after the move in tenths of a second (-1:\n"
     "none) and the [%eval] after it from White's view (INT32_MIN: none), both native int32."},
    {"last_visits", last_visits, METH_VARARGS,
     "last_visits(keys: bytes, lengths: bytes) -> bytes\n\n"
     "Native int64 indexes of the rows keeping each key once per text (its last row)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sanwalk", "The SAN walk of Standard games, compiled.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sanwalk(void) {
    init_tables();
    return PyModule_Create(&module);
}
