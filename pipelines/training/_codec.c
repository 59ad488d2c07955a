/* The `.plain` <-> `.binpack` codec in compiled code: a board, legal moves, FEN and UCI read
 * and written, chains encoded and decoded, as schemas/binpack.py and schemas/plain.py do.
 *
 * Only records of the plain, canonical shape are taken here: six lines exactly as chesspipe and
 * Stockfish write them, a FEN with all six fields in canonical form (each castling letter
 * standing for a king and rook on their squares, an en-passant square only on the rank a
 * double step passes over), a legal move in UCI with castling as the king's destination,
 * integers without leading zeros, within the format's ranges. Anything else is refused: the
 * encoder stops before the record and the Python path (codec.py) takes it, so the bytes and
 * error messages are the Python path's. A `.binpack` block with anything unusual (a stem of an
 * odd shape, movetext that does not decode, an illegal move) is refused whole the same way.
 *
 * Bounds: every read is checked against its buffer's length.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { EMPTY = 0, PAWN = 1, KNIGHT, BISHOP, ROOK, QUEEN, KING };
enum { WHITE = 0, BLACK = 1 };

#define BIT(s) ((uint64_t)1 << (s))
#define RANK_1 ((uint64_t)0xFF)
#define RANK_8 ((uint64_t)0xFF << 56)
#define CORNERS (BIT(0) | BIT(7) | BIT(56) | BIT(63))
#define BLOCK_SIZE (1 << 20)
#define MAX_CHAIN_PLIES 0xFFFF

typedef struct {
    uint8_t sq[64];      /* 0 empty, else type | colour << 3 */
    uint64_t by_type[7]; /* [0] unused */
    uint64_t by_colour[2];
    int turn;            /* WHITE or BLACK */
    uint64_t castle;     /* rook squares with castling rights, always clean here */
    int ep;              /* the square a double step passed over, or -1 */
    long halfmove;
} Board;

typedef struct {
    int from, to, promotion; /* promotion: a piece type, or 0 */
} Move;

static uint64_t KNIGHT_ATTACKS[64], KING_ATTACKS[64], PAWN_ATTACKS[2][64];

static inline int popcount(uint64_t b) { return __builtin_popcountll(b); }
static inline int lsb(uint64_t b) { return __builtin_ctzll(b); }
static inline int file_of(int s) { return s & 7; }
static inline int rank_of(int s) { return s >> 3; }

static void init_tables(void) {
    static const int kn[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
    static const int kg[8][2] = {{1, 0}, {1, 1}, {0, 1}, {-1, 1}, {-1, 0}, {-1, -1}, {0, -1}, {1, -1}};
    for (int s = 0; s < 64; s++) {
        int f = file_of(s), r = rank_of(s);
        KNIGHT_ATTACKS[s] = KING_ATTACKS[s] = 0;
        for (int i = 0; i < 8; i++) {
            int nf = f + kn[i][0], nr = r + kn[i][1];
            if (nf >= 0 && nf < 8 && nr >= 0 && nr < 8) KNIGHT_ATTACKS[s] |= BIT(nr * 8 + nf);
            nf = f + kg[i][0];
            nr = r + kg[i][1];
            if (nf >= 0 && nf < 8 && nr >= 0 && nr < 8) KING_ATTACKS[s] |= BIT(nr * 8 + nf);
        }
        PAWN_ATTACKS[WHITE][s] = PAWN_ATTACKS[BLACK][s] = 0;
        if (r < 7) {
            if (f > 0) PAWN_ATTACKS[WHITE][s] |= BIT(s + 7);
            if (f < 7) PAWN_ATTACKS[WHITE][s] |= BIT(s + 9);
        }
        if (r > 0) {
            if (f > 0) PAWN_ATTACKS[BLACK][s] |= BIT(s - 9);
            if (f < 7) PAWN_ATTACKS[BLACK][s] |= BIT(s - 7);
        }
    }
}

static uint64_t ray_attacks(int s, uint64_t occupied, const int (*dirs)[2]) {
    uint64_t out = 0;
    for (int i = 0; i < 4; i++) {
        int f = file_of(s) + dirs[i][0], r = rank_of(s) + dirs[i][1];
        while (f >= 0 && f < 8 && r >= 0 && r < 8) {
            int t = r * 8 + f;
            out |= BIT(t);
            if (occupied & BIT(t)) break;
            f += dirs[i][0];
            r += dirs[i][1];
        }
    }
    return out;
}

static const int ROOK_DIRS[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
static const int BISHOP_DIRS[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};

static inline uint64_t rook_attacks(int s, uint64_t occ) { return ray_attacks(s, occ, ROOK_DIRS); }
static inline uint64_t bishop_attacks(int s, uint64_t occ) {
    return ray_attacks(s, occ, BISHOP_DIRS);
}

static inline uint64_t occupied(const Board *b) { return b->by_colour[0] | b->by_colour[1]; }

static inline void put(Board *b, int s, int piece) {
    int old = b->sq[s];
    if (old) {
        b->by_type[old & 7] &= ~BIT(s);
        b->by_colour[old >> 3] &= ~BIT(s);
    }
    b->sq[s] = (uint8_t)piece;
    if (piece) {
        b->by_type[piece & 7] |= BIT(s);
        b->by_colour[piece >> 3] |= BIT(s);
    }
}

static void clear_board(Board *b) {
    memset(b, 0, sizeof *b);
    b->ep = -1;
}

/* Whether `by` attacks square s. */
static int attacked(const Board *b, int s, int by) {
    uint64_t them = b->by_colour[by], occ = occupied(b);
    if (PAWN_ATTACKS[by ^ 1][s] & b->by_type[PAWN] & them) return 1;
    if (KNIGHT_ATTACKS[s] & b->by_type[KNIGHT] & them) return 1;
    if (KING_ATTACKS[s] & b->by_type[KING] & them) return 1;
    if (bishop_attacks(s, occ) & (b->by_type[BISHOP] | b->by_type[QUEEN]) & them) return 1;
    if (rook_attacks(s, occ) & (b->by_type[ROOK] | b->by_type[QUEEN]) & them) return 1;
    return 0;
}

static inline int king_square(const Board *b, int colour) {
    uint64_t k = b->by_type[KING] & b->by_colour[colour];
    return k ? lsb(k) : -1;
}

/* A piece's attack set (python-chess's attacks_mask). */
static uint64_t attacks_of(const Board *b, int s) {
    int piece = b->sq[s], type = piece & 7;
    uint64_t occ = occupied(b);
    switch (type) {
    case PAWN: return PAWN_ATTACKS[piece >> 3][s];
    case KNIGHT: return KNIGHT_ATTACKS[s];
    case BISHOP: return bishop_attacks(s, occ);
    case ROOK: return rook_attacks(s, occ);
    case QUEEN: return bishop_attacks(s, occ) | rook_attacks(s, occ);
    case KING: return KING_ATTACKS[s];
    }
    return 0;
}

static inline int is_castling(const Board *b, Move m) {
    return (b->sq[m.from] & 7) == KING && abs(file_of(m.to) - file_of(m.from)) == 2;
}

static inline int is_en_passant(const Board *b, Move m) {
    return (b->sq[m.from] & 7) == PAWN && m.to == b->ep && file_of(m.to) != file_of(m.from) &&
           !b->sq[m.to];
}

/* Play a move known legal (or pseudo-legal), as python-chess's push does. */
static void make_move(Board *b, Move m) {
    int piece = b->sq[m.from], type = piece & 7, us = b->turn;
    int capture = b->sq[m.to] != 0;
    if (is_en_passant(b, m)) {
        put(b, m.to + (us == WHITE ? -8 : 8), EMPTY);
        capture = 1;
    }
    if (is_castling(b, m)) {
        int rank = rank_of(m.from) * 8;
        if (file_of(m.to) > file_of(m.from)) {
            put(b, rank + 5, b->sq[rank + 7]);
            put(b, rank + 7, EMPTY);
        } else {
            put(b, rank + 3, b->sq[rank]);
            put(b, rank, EMPTY);
        }
    }
    put(b, m.from, EMPTY);
    put(b, m.to, m.promotion ? (m.promotion | (us << 3)) : piece);
    b->halfmove = (type == PAWN || capture) ? 0 : b->halfmove + 1;
    b->castle &= ~(BIT(m.from) | BIT(m.to));
    if (type == KING) b->castle &= ~(us == WHITE ? RANK_1 : RANK_8);
    b->ep = (type == PAWN && abs(m.to - m.from) == 16) ? (m.from + m.to) / 2 : -1;
    b->turn ^= 1;
}

/* Whether a pseudo-legal move leaves the mover's king safe. */
static int king_safe_after(const Board *b, Move m) {
    Board c = *b;
    int us = b->turn;
    make_move(&c, m);
    int k = king_square(&c, us);
    return k >= 0 && !attacked(&c, k, us ^ 1);
}

/* python-chess's pseudo-legal en passant: the square empty, the double-stepped pawn beyond. */
static int ep_possible(const Board *b) {
    if (b->ep < 0 || b->sq[b->ep]) return 0;
    int behind = b->ep + (b->turn == WHITE ? -8 : 8);
    if (behind < 0 || behind > 63) return 0;
    return b->sq[behind] == (PAWN | ((b->turn ^ 1) << 3));
}

/* The en-passant square's bit where a capture is legal (Stockfish keeps no other). */
static uint64_t legal_ep(const Board *b) {
    if (!ep_possible(b)) return 0;
    uint64_t capturers = PAWN_ATTACKS[b->turn ^ 1][b->ep] & b->by_type[PAWN] &
                         b->by_colour[b->turn] & (b->turn == WHITE ? (RANK_1 << 32) : (RANK_1 << 24));
    while (capturers) {
        int s = lsb(capturers);
        capturers &= capturers - 1;
        Move m = {s, b->ep, 0};
        if (king_safe_after(b, m)) return BIT(b->ep);
    }
    return 0;
}

/* Whether a move is legal, by python-chess's rules for standard chess. */
static int is_legal(const Board *b, Move m) {
    if (m.from < 0 || m.from > 63 || m.to < 0 || m.to > 63 || m.from == m.to) return 0;
    int piece = b->sq[m.from], us = b->turn;
    if (!piece || (piece >> 3) != us) return 0;
    int type = piece & 7;
    uint64_t own = b->by_colour[us], occ = occupied(b), to = BIT(m.to);
    int last_rank = us == WHITE ? 7 : 0;
    if (type == PAWN) {
        if ((rank_of(m.to) == last_rank) != (m.promotion != 0)) return 0;
        if (m.promotion && (m.promotion < KNIGHT || m.promotion > QUEEN)) return 0;
        int step = us == WHITE ? 8 : -8;
        if (m.to == m.from + step) {
            if (occ & to) return 0;
        } else if (m.to == m.from + 2 * step) {
            if (rank_of(m.from) != (us == WHITE ? 1 : 6) || (occ & to) || (occ & BIT(m.from + step)))
                return 0;
        } else if (PAWN_ATTACKS[us][m.from] & to) {
            if (!(b->by_colour[us ^ 1] & to)) {
                if (!(m.to == b->ep && ep_possible(b))) return 0;
            }
        } else {
            return 0;
        }
        return king_safe_after(b, m);
    }
    if (m.promotion) return 0;
    if (type == KING && is_castling(b, m)) {
        int rank = rank_of(m.from) * 8;
        if (m.from != rank + 4 || rank != (us == WHITE ? 0 : 56)) return 0;
        int kingside = file_of(m.to) > file_of(m.from);
        int rook = kingside ? rank + 7 : rank;
        if (!(b->castle & BIT(rook)) || b->sq[rook] != (ROOK | (us << 3))) return 0;
        uint64_t between = kingside ? (BIT(rank + 5) | BIT(rank + 6))
                                    : (BIT(rank + 1) | BIT(rank + 2) | BIT(rank + 3));
        if (occ & between) return 0;
        int step = kingside ? 1 : -1;
        for (int i = 0; i <= 2; i++)
            if (attacked(b, m.from + i * step, us ^ 1)) return 0;
        return 1;
    }
    if (own & to) return 0;
    if (!(attacks_of(b, m.from) & to)) return 0;
    return king_safe_after(b, m);
}

/* ---------- FEN and UCI ---------- */

static const char PIECE_LETTERS[] = " PNBRQK  pnbrqk";

/* Read a canonical non-negative integer (no sign, no leading zero) of at most 9 digits. */
static int read_uint(const char *s, Py_ssize_t n, Py_ssize_t *i, long *out) {
    Py_ssize_t start = *i;
    long v = 0;
    while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
        if (*i - start >= 9) return 0;
        v = v * 10 + (s[*i] - '0');
        (*i)++;
    }
    if (*i == start || (s[start] == '0' && *i - start > 1)) return 0;
    *out = v;
    return 1;
}

/* Read a canonical integer with an optional minus sign (no "-0"). */
static int read_int(const char *s, Py_ssize_t n, Py_ssize_t *i, long *out) {
    int negative = 0;
    if (*i < n && s[*i] == '-') {
        negative = 1;
        (*i)++;
    }
    if (!read_uint(s, n, i, out)) return 0;
    if (negative) {
        if (*out == 0) return 0;
        *out = -*out;
    }
    return 1;
}

/* Whether the position is one a record may stand on, and the shape this code takes:
 * one king each, the side not to move not in check, no pawn on a back rank, at most 32 pieces,
 * castling rights only for a king on its square and a rook in its corner. */
static int usable(const Board *b) {
    for (int c = 0; c < 2; c++)
        if (popcount(b->by_type[KING] & b->by_colour[c]) != 1) return 0;
    if (b->by_type[PAWN] & (RANK_1 | RANK_8)) return 0;
    if (popcount(occupied(b)) > 32) return 0;
    uint64_t rights = b->castle;
    if (rights & ~CORNERS) return 0;
    if ((rights & RANK_1) && (b->sq[4] != KING || (rights & ~b->by_type[ROOK] & RANK_1) ||
                              (rights & RANK_1 & ~b->by_colour[WHITE])))
        return 0;
    if ((rights & RANK_8) && (b->sq[60] != (KING | 8) || (rights & ~b->by_type[ROOK] & RANK_8) ||
                              (rights & RANK_8 & ~b->by_colour[BLACK])))
        return 0;
    int them = b->turn ^ 1;
    return !attacked(b, king_square(b, them), b->turn);
}

/* Parse a canonical FEN of exactly n bytes; return 0 for anything else. */
static int parse_fen(const char *s, Py_ssize_t n, Board *b) {
    clear_board(b);
    Py_ssize_t i = 0;
    for (int rank = 7; rank >= 0; rank--) {
        int file = 0, last_digit = 0;
        while (file < 8) {
            if (i >= n) return 0;
            char c = s[i++];
            if (c >= '1' && c <= '8') {
                if (last_digit) return 0;
                file += c - '0';
                last_digit = 1;
                continue;
            }
            last_digit = 0;
            const char *p = c ? strchr(PIECE_LETTERS, c) : NULL;
            if (!p || c == ' ') return 0;
            put(b, rank * 8 + file, (int)(p - PIECE_LETTERS));
            file++;
        }
        if (file != 8) return 0;
        if (rank) {
            if (i >= n || s[i++] != '/') return 0;
        }
    }
    if (i + 3 > n || s[i] != ' ') return 0;
    if (s[i + 1] == 'w') b->turn = WHITE;
    else if (s[i + 1] == 'b') b->turn = BLACK;
    else return 0;
    if (s[i + 2] != ' ') return 0;
    i += 3;
    if (i < n && s[i] == '-') {
        i++;
    } else {
        static const char order[] = "KQkq";
        static const int corner[] = {7, 0, 63, 56};
        int next = 0, any = 0;
        while (i < n && s[i] != ' ') {
            while (next < 4 && order[next] != s[i]) next++;
            if (next == 4) return 0;
            b->castle |= BIT(corner[next]);
            next++;
            i++;
            any = 1;
        }
        if (!any) return 0;
    }
    if (i + 2 > n || s[i] != ' ') return 0;
    i++;
    if (s[i] == '-') {
        i++;
    } else {
        if (i + 2 > n || s[i] < 'a' || s[i] > 'h') return 0;
        int want = b->turn == WHITE ? '6' : '3';
        if (s[i + 1] != want) return 0;
        b->ep = (s[i + 1] - '1') * 8 + (s[i] - 'a');
        i += 2;
    }
    long halfmove, fullmove;
    if (i >= n || s[i++] != ' ' || !read_uint(s, n, &i, &halfmove) || halfmove > 65535) return 0;
    if (i >= n || s[i++] != ' ' || !read_uint(s, n, &i, &fullmove) || fullmove < 1) return 0;
    if (i != n) return 0;
    b->halfmove = halfmove;
    return usable(b);
}

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} Buffer;

static int reserve(Buffer *buf, Py_ssize_t more) {
    if (buf->size + more <= buf->capacity) return 1;
    Py_ssize_t capacity = buf->capacity ? buf->capacity : 4096;
    while (capacity < buf->size + more) capacity *= 2;
    char *data = realloc(buf->data, (size_t)capacity);
    if (!data) return 0;
    buf->data = data;
    buf->capacity = capacity;
    return 1;
}

static inline char *put_number(char *p, long v) {
    char digits[24];
    int n = 0;
    unsigned long u = v < 0 ? (unsigned long)(-v) : (unsigned long)v;
    if (v < 0) *p++ = '-';
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    while (n) *p++ = digits[--n];
    return p;
}

/* Write `board.fen(en_passant="legal")` with fullmove number `fullmove`; at most 100 bytes. */
static char *put_fen(char *p, const Board *b, long fullmove) {
    for (int rank = 7; rank >= 0; rank--) {
        int empty = 0;
        for (int file = 0; file < 8; file++) {
            int piece = b->sq[rank * 8 + file];
            if (!piece) {
                empty++;
                continue;
            }
            if (empty) *p++ = (char)('0' + empty);
            empty = 0;
            *p++ = PIECE_LETTERS[piece];
        }
        if (empty) *p++ = (char)('0' + empty);
        if (rank) *p++ = '/';
    }
    *p++ = ' ';
    *p++ = b->turn == WHITE ? 'w' : 'b';
    *p++ = ' ';
    if (!b->castle) *p++ = '-';
    if (b->castle & BIT(7)) *p++ = 'K';
    if (b->castle & BIT(0)) *p++ = 'Q';
    if (b->castle & BIT(63)) *p++ = 'k';
    if (b->castle & BIT(56)) *p++ = 'q';
    *p++ = ' ';
    uint64_t ep = legal_ep(b);
    if (ep) {
        *p++ = (char)('a' + file_of(b->ep));
        *p++ = (char)('1' + rank_of(b->ep));
    } else {
        *p++ = '-';
    }
    *p++ = ' ';
    p = put_number(p, b->halfmove);
    *p++ = ' ';
    return put_number(p, fullmove);
}

static char *put_uci(char *p, Move m) {
    *p++ = (char)('a' + file_of(m.from));
    *p++ = (char)('1' + rank_of(m.from));
    *p++ = (char)('a' + file_of(m.to));
    *p++ = (char)('1' + rank_of(m.to));
    if (m.promotion) *p++ = "  nbrq"[m.promotion];
    return p;
}

/* Read a canonical UCI move (4 or 5 bytes) that is legal in b, castling as the king's
 * destination. */
static int parse_uci(const char *s, Py_ssize_t n, const Board *b, Move *m) {
    if (n != 4 && n != 5) return 0;
    if (s[0] < 'a' || s[0] > 'h' || s[1] < '1' || s[1] > '8' || s[2] < 'a' || s[2] > 'h' ||
        s[3] < '1' || s[3] > '8')
        return 0;
    m->from = (s[1] - '1') * 8 + (s[0] - 'a');
    m->to = (s[3] - '1') * 8 + (s[2] - 'a');
    m->promotion = 0;
    if (n == 5) {
        const char *p = s[4] ? strchr("nbrq", s[4]) : NULL;
        if (!p) return 0;
        m->promotion = (int)(p - "nbrq") + KNIGHT;
    }
    return is_legal(b, *m);
}

/* ---------- the binpack encoding ---------- */

static inline uint16_t zigzag(long value) {
    unsigned raw = (unsigned)value & 0xFFFF;
    if (raw & 0x8000) raw ^= 0x7FFF;
    return (uint16_t)(((raw << 1) | (raw >> 15)) & 0xFFFF);
}

static inline long unzigzag(unsigned raw) {
    raw = ((raw << 15) | (raw >> 1)) & 0xFFFF;
    if (raw & 0x8000) raw ^= 0x7FFF;
    return raw & 0x8000 ? (long)raw - 0x10000 : (long)raw;
}

static inline int used_bits(int choices) {
    if (choices <= 1) return 0;
    int bits = 0;
    unsigned v = (unsigned)(choices - 1);
    while (v) {
        bits++;
        v >>= 1;
    }
    return bits;
}

static inline int nth_square(uint64_t bb, int n) {
    for (int i = 0; i < n; i++) bb &= bb - 1;
    return lsb(bb);
}

static uint64_t pawn_targets(const Board *b, int s) {
    int us = b->turn;
    uint64_t occ = occupied(b);
    uint64_t targets = PAWN_ATTACKS[us][s] & (b->by_colour[us ^ 1] | legal_ep(b));
    int forward = us == WHITE ? s + 8 : s - 8;
    if (!(occ & BIT(forward))) {
        targets |= BIT(forward);
        if (rank_of(s) == (us == WHITE ? 1 : 6)) {
            int two = us == WHITE ? forward + 8 : forward - 8;
            if (!(occ & BIT(two))) targets |= BIT(two);
        }
    }
    return targets;
}

static void castling_rights(const Board *b, int *count, int *queenside) {
    uint64_t rights = b->castle & (b->turn == WHITE ? RANK_1 : RANK_8);
    *count = popcount(rights);
    *queenside = (rights & (BIT(0) | BIT(56))) != 0;
}

static int nibble(const Board *b, uint64_t ep, int s) {
    int piece = b->sq[s], type = piece & 7, colour = piece >> 3;
    if (type == PAWN && ep) {
        int behind = b->ep + (colour == WHITE ? 8 : -8);
        if (behind == s && colour != b->turn) return 12;
    }
    if (type == ROOK && (b->castle & BIT(s))) return colour == WHITE ? 13 : 14;
    if (type == KING && colour == BLACK && b->turn == BLACK) return 15;
    return 2 * (type - 1) + colour;
}

static inline unsigned char *put_u16(unsigned char *p, unsigned v) {
    *p++ = (unsigned char)(v >> 8);
    *p++ = (unsigned char)v;
    return p;
}

static unsigned move_code(const Board *b, Move m) {
    int kind = 0, to = m.to;
    if (is_castling(b, m)) {
        kind = 2;
        to = rank_of(m.from) * 8 + (file_of(m.to) > file_of(m.from) ? 7 : 0);
    } else if (is_en_passant(b, m)) {
        kind = 3;
    } else if (m.promotion) {
        kind = 1;
    }
    unsigned promotion = m.promotion ? (unsigned)(m.promotion - KNIGHT) : 0;
    return ((unsigned)kind << 14) | ((unsigned)m.from << 8) | ((unsigned)to << 2) | promotion;
}

/* The 32-byte stem of a record. */
static void pack_stem(unsigned char *out, const Board *b, Move m, long score, long ply,
                      long result) {
    uint64_t occ = occupied(b), ep = legal_ep(b);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(occ >> (56 - 8 * i));
    memset(out + 8, 0, 16);
    int index = 0;
    for (uint64_t bb = occ; bb; bb &= bb - 1, index++)
        out[8 + index / 2] |= (unsigned char)(nibble(b, ep, lsb(bb)) << (4 * (index & 1)));
    unsigned char *p = out + 24;
    p = put_u16(p, move_code(b, m));
    p = put_u16(p, zigzag(score));
    p = put_u16(p, (unsigned)ply | ((unsigned)zigzag(result) << 14));
    put_u16(p, (unsigned)b->halfmove);
}

typedef struct {
    Buffer bytes;
    uint64_t bits; /* total bits written */
} Bits;

static int bits_add(Bits *w, unsigned value, int count) {
    for (int i = count - 1; i >= 0; i--) {
        Py_ssize_t byte = (Py_ssize_t)(w->bits >> 3);
        if (byte >= w->bytes.size) {
            if (!reserve(&w->bytes, 1)) return 0;
            w->bytes.data[w->bytes.size++] = 0;
        }
        if (value >> i & 1) w->bytes.data[byte] |= (char)(0x80 >> (w->bits & 7));
        w->bits++;
    }
    return 1;
}

/* Append one ply to a chain's movetext; return the score negated, or -1 when out of memory. */
static long encode_ply(Bits *w, const Board *b, Move m, long score, unsigned last) {
    int us = b->turn;
    uint64_t ours = b->by_colour[us], below = BIT(m.to) - 1;
    int type = b->sq[m.from] & 7, moves, move_id;
    if (type == PAWN) {
        uint64_t targets = pawn_targets(b, m.from);
        moves = popcount(targets);
        move_id = popcount(targets & below);
        if (rank_of(m.from) == (us == WHITE ? 6 : 1)) {
            move_id = move_id * 4 + (m.promotion ? m.promotion : KNIGHT) - KNIGHT;
            moves *= 4;
        }
    } else if (type == KING) {
        uint64_t attacks = KING_ATTACKS[m.from] & ~ours;
        int rights, queenside;
        castling_rights(b, &rights, &queenside);
        moves = popcount(attacks) + rights;
        if (is_castling(b, m)) {
            int kingside = file_of(m.to) > file_of(m.from);
            move_id = popcount(attacks) - 1 + queenside + kingside;
        } else {
            move_id = popcount(attacks & below);
        }
    } else {
        uint64_t attacks = attacks_of(b, m.from) & ~ours;
        moves = popcount(attacks);
        move_id = popcount(attacks & below);
    }
    if (!bits_add(w, (unsigned)popcount(ours & (BIT(m.from) - 1)), used_bits(popcount(ours))))
        return -1;
    if (!bits_add(w, (unsigned)move_id, used_bits(moves))) return -1;
    unsigned delta = zigzag(score - (long)last);
    for (;;) {
        int more = delta > 15;
        if (!bits_add(w, (delta & 15) | ((unsigned)more << 4), 5)) return -1;
        delta >>= 4;
        if (!delta) break;
    }
    return (long)((unsigned)(-score) & 0xFFFF);
}

/* ---------- the encoder object ---------- */

typedef struct {
    PyObject_HEAD
    Buffer block;
    Bits bits;
    long plies;
    int started;
    int have_board;
    Board board; /* before `move` */
    Move move;
    long ply, result;
    unsigned last;
    Buffer out; /* whole blocks, for the caller */
} Encoder;

static void encoder_dealloc(Encoder *self) {
    free(self->block.data);
    free(self->bits.bytes.data);
    free(self->out.data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int encoder_init(Encoder *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "", kwlist)) return -1;
    free(self->block.data);
    free(self->bits.bytes.data);
    free(self->out.data);
    memset(&self->block, 0, sizeof self->block);
    memset(&self->bits, 0, sizeof self->bits);
    memset(&self->out, 0, sizeof self->out);
    self->plies = 0;
    self->started = 0;
    self->have_board = 0;
    self->ply = -2;
    self->result = 2;
    self->last = 0;
    return 0;
}

static int end_chain(Encoder *self) {
    if (!self->started) return 1;
    Py_ssize_t n = (Py_ssize_t)((self->bits.bits + 7) >> 3);
    if (!reserve(&self->block, 2 + n)) return 0;
    put_u16((unsigned char *)self->block.data + self->block.size, (unsigned)self->plies);
    self->block.size += 2;
    if (self->plies) {
        memcpy(self->block.data + self->block.size, self->bits.bytes.data, (size_t)n);
        self->block.size += n;
    }
    self->bits.bytes.size = 0;
    self->bits.bits = 0;
    self->plies = 0;
    return 1;
}

static int flush_block(Encoder *self) {
    if (!self->block.size) return 1;
    if (!reserve(&self->out, 8 + self->block.size)) return 0;
    unsigned char *p = (unsigned char *)self->out.data + self->out.size;
    memcpy(p, "BINP", 4);
    uint32_t size = (uint32_t)self->block.size;
    for (int i = 0; i < 4; i++) p[4 + i] = (unsigned char)(size >> (8 * i));
    memcpy(p + 8, self->block.data, (size_t)self->block.size);
    self->out.size += 8 + self->block.size;
    self->block.size = 0;
    return 1;
}

/* The end of the line starting at i (its '\n'), or -1 past `n`. */
static inline Py_ssize_t line_end(const char *s, Py_ssize_t n, Py_ssize_t i) {
    const char *p = memchr(s + i, '\n', (size_t)(n - i));
    return p ? p - s : -1;
}

static int has_prefix(const char *s, Py_ssize_t start, Py_ssize_t end, const char *prefix) {
    size_t k = strlen(prefix);
    return (size_t)(end - start) >= k && memcmp(s + start, prefix, k) == 0;
}

/* Whether a position equals another as chains compare them. */
static int same_position(const Board *a, const Board *b) {
    return memcmp(a->sq, b->sq, 64) == 0 && a->turn == b->turn && a->castle == b->castle &&
           legal_ep(a) == legal_ep(b) && a->halfmove == b->halfmove;
}

enum { TAKEN = 0, REFUSED = 1, SHORT = 2, NOMEM = 3 };

/* Take one record at data[*i:]; TAKEN moves *i past it. */
static int take_record(Encoder *self, const char *s, Py_ssize_t n, Py_ssize_t *i) {
    static const char *labels[5] = {"fen ", "move ", "score ", "ply ", "result "};
    Py_ssize_t start[6], end[6], at = *i;
    for (int k = 0; k < 6; k++) {
        Py_ssize_t e = line_end(s, n, at);
        if (e < 0) return SHORT;
        start[k] = at;
        end[k] = e;
        at = e + 1;
    }
    for (int k = 0; k < 5; k++) {
        if (!has_prefix(s, start[k], end[k], labels[k])) return REFUSED;
        start[k] += (Py_ssize_t)strlen(labels[k]);
    }
    if (end[5] - start[5] != 1 || s[start[5]] != 'e') return REFUSED;
    long score, ply, result;
    Py_ssize_t j = start[2];
    if (!read_int(s, end[2], &j, &score) || j != end[2] || score < -32768 || score > 32767)
        return REFUSED;
    j = start[3];
    if (!read_uint(s, end[3], &j, &ply) || j != end[3] || ply >= (1 << 14)) return REFUSED;
    j = start[4];
    if (!read_int(s, end[4], &j, &result) || j != end[4] || result < -1 || result > 1)
        return REFUSED;
    Board board;
    if (!parse_fen(s + start[0], end[0] - start[0], &board)) return REFUSED;
    Move move;
    if (!parse_uci(s + start[1], end[1] - start[1], &board, &move)) return REFUSED;
    int follows = 0;
    if (self->have_board && ply == self->ply + 1 && result == -self->result &&
        self->plies < MAX_CHAIN_PLIES) {
        Board after = self->board;
        make_move(&after, self->move);
        follows = same_position(&after, &board);
    }
    if (follows) {
        long last = encode_ply(&self->bits, &board, move, score, self->last);
        if (last < 0) return NOMEM;
        self->last = (unsigned)last;
        self->plies++;
    } else {
        if (!end_chain(self)) return NOMEM;
        if (self->block.size >= BLOCK_SIZE && !flush_block(self)) return NOMEM;
        if (!reserve(&self->block, 32)) return NOMEM;
        pack_stem((unsigned char *)self->block.data + self->block.size, &board, move, score, ply,
                  result);
        self->block.size += 32;
        self->started = 1;
        self->last = (unsigned)(-score) & 0xFFFF;
    }
    self->board = board;
    self->move = move;
    self->have_board = 1;
    self->ply = ply;
    self->result = result;
    *i = at;
    return TAKEN;
}

static PyObject *take_out(Encoder *self) {
    PyObject *out = PyBytes_FromStringAndSize(self->out.data ? self->out.data : "", self->out.size);
    if (out) self->out.size = 0;
    return out;
}

/* encode(data, start, limit) -> (position, records, status, whole blocks): status 0 when
 * `limit` records are taken, 1 at a record refused, 2 at an unfinished record or the end. */
static PyObject *encoder_encode(Encoder *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t i, limit;
    if (!PyArg_ParseTuple(args, "y*nn", &view, &i, &limit)) return NULL;
    const char *s = view.buf;
    Py_ssize_t n = view.len, records = 0;
    int status = TAKEN;
    if (i < 0 || i > n) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "start outside the data");
        return NULL;
    }
#ifdef CHESSPIPE_EXACT_BUFFERS
    /* The sanitizer build (tests/test_compiled_sanitized.py) reads a copy of the data in a
     * buffer of its exact size, so that a read one byte past it is caught. */
    char *copy = malloc(n ? (size_t)n : 1);
    if (!copy) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    memcpy(copy, view.buf, (size_t)n);
    s = copy;
#endif
    Py_BEGIN_ALLOW_THREADS
    while (i < n && records < limit && (status = take_record(self, s, n, &i)) == TAKEN)
        records++;
    Py_END_ALLOW_THREADS
#ifdef CHESSPIPE_EXACT_BUFFERS
    free(copy);
#endif
    PyBuffer_Release(&view);
    if (status == NOMEM) return PyErr_NoMemory();
    if (status == TAKEN) status = i == n ? SHORT : TAKEN;
    PyObject *out = take_out(self);
    if (!out) return NULL;
    return Py_BuildValue("nniN", i, records, status, out);
}

static PyObject *encoder_close(Encoder *self, PyObject *Py_UNUSED(ignored)) {
    if (!end_chain(self)) return PyErr_NoMemory();
    self->started = 0;
    if (!flush_block(self)) return PyErr_NoMemory();
    return take_out(self);
}

/* state() -> (block, bits, bit count, plies, started, fen or None, move, ply, result, last);
 * whole blocks not yet taken come first (as `encode` returns them): take them before. */
static PyObject *encoder_state(Encoder *self, PyObject *Py_UNUSED(ignored)) {
    char fen[128], uci[8];
    PyObject *fen_object;
    if (self->have_board) {
        char *end = put_fen(fen, &self->board, self->ply / 2 + 1);
        fen_object = PyUnicode_FromStringAndSize(fen, end - fen);
        end = put_uci(uci, self->move);
        *end = 0;
    } else {
        fen_object = Py_None;
        Py_INCREF(Py_None);
        strcpy(uci, "0000");
    }
    if (!fen_object) return NULL;
    return Py_BuildValue("y#y#KlONsllk", self->block.data ? self->block.data : "",
                         self->block.size, self->bits.bytes.data ? self->bits.bytes.data : "",
                         self->bits.bytes.size, (unsigned long long)self->bits.bits, self->plies,
                         self->started ? Py_True : Py_False, fen_object, uci, self->ply,
                         self->result, (unsigned long)self->last);
}

/* set_state(the tuple state() returns) -> whether this code takes it (its board and move). */
static PyObject *encoder_set_state(Encoder *self, PyObject *args) {
    Py_buffer block, bits;
    unsigned long long nbits;
    long plies, ply, result;
    unsigned long last;
    int started;
    PyObject *fen;
    const char *uci;
    Py_ssize_t uci_len;
    if (!PyArg_ParseTuple(args, "(y*y*KlpOs#llk)", &block, &bits, &nbits, &plies, &started, &fen,
                          &uci, &uci_len, &ply, &result, &last))
        return NULL;
    int ok = 1;
    Board board;
    Move move = {0, 0, 0};
    if (fen != Py_None) {
        Py_ssize_t len;
        const char *text = PyUnicode_Check(fen) ? PyUnicode_AsUTF8AndSize(fen, &len) : NULL;
        if (!text) {
            PyErr_Clear();
            ok = 0;
        } else {
            ok = parse_fen(text, len, &board) && parse_uci(uci, uci_len, &board, &move);
        }
    }
    if (ok && (nbits > (unsigned long long)bits.len * 8 || plies < 0 || plies > MAX_CHAIN_PLIES))
        ok = 0;
    if (ok) {
        self->block.size = 0;
        self->bits.bytes.size = 0;
        self->bits.bits = 0;
        Py_ssize_t nbytes = (Py_ssize_t)((nbits + 7) >> 3);
        if (!reserve(&self->block, block.len + 1) || !reserve(&self->bits.bytes, nbytes + 1)) {
            PyBuffer_Release(&block);
            PyBuffer_Release(&bits);
            return PyErr_NoMemory();
        }
        memcpy(self->block.data, block.buf, (size_t)block.len);
        self->block.size = block.len;
        memcpy(self->bits.bytes.data, bits.buf, (size_t)nbytes);
        self->bits.bytes.size = nbytes;
        self->bits.bits = nbits;
        if (nbits & 7) /* the padding bits are zero, as bits_add expects */
            self->bits.bytes.data[nbytes - 1] &= (char)(0xFF00 >> (nbits & 7));
        self->plies = plies;
        self->started = started;
        self->have_board = fen != Py_None;
        if (self->have_board) {
            self->board = board;
            self->move = move;
        }
        self->ply = ply;
        self->result = result;
        self->last = (unsigned)(last & 0xFFFF);
    }
    PyBuffer_Release(&block);
    PyBuffer_Release(&bits);
    return PyBool_FromLong(ok);
}

static PyMethodDef encoder_methods[] = {
    {"encode", (PyCFunction)encoder_encode, METH_VARARGS, "Encode the records of data[start:]."},
    {"close", (PyCFunction)encoder_close, METH_NOARGS, "End the last chain and block."},
    {"state", (PyCFunction)encoder_state, METH_NOARGS, "The writer's state."},
    {"set_state", (PyCFunction)encoder_set_state, METH_VARARGS, "Take a writer's state."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pipelines.training._codec.Encoder",
    .tp_basicsize = sizeof(Encoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A .binpack writer of canonical .plain text.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)encoder_init,
    .tp_dealloc = (destructor)encoder_dealloc,
    .tp_methods = encoder_methods,
};

/* ---------- decoding ---------- */

typedef struct {
    const unsigned char *data;
    uint64_t position, end; /* in bits */
} Reader;

static int read_bits(Reader *r, int count, unsigned *out) {
    unsigned v = 0;
    if (r->position + (uint64_t)count > r->end) return 0;
    for (int i = 0; i < count; i++) {
        v = (v << 1) | ((r->data[r->position >> 3] >> (7 - (r->position & 7))) & 1);
        r->position++;
    }
    *out = v;
    return 1;
}

static inline unsigned get_u16(const unsigned char *p) { return ((unsigned)p[0] << 8) | p[1]; }

/* The board of a stem, as unpack_position and the reader's checks make it; 0 if refused. */
static int unpack_stem(const unsigned char *stem, Board *b) {
    clear_board(b);
    uint64_t occ = 0;
    for (int i = 0; i < 8; i++) occ = (occ << 8) | stem[i];
    if (popcount(occ) > 32) return 0;
    int index = 0, eps = 0;
    for (uint64_t bb = occ; bb; bb &= bb - 1, index++) {
        int s = lsb(bb);
        int code = (stem[8 + index / 2] >> (4 * (index & 1))) & 0xF;
        if (code < 12) {
            put(b, s, (code / 2 + 1) | ((code & 1) << 3));
        } else if (code == 12) {
            if (rank_of(s) != 3 && rank_of(s) != 4) return 0;
            int white = rank_of(s) == 3;
            put(b, s, white ? PAWN : (PAWN | 8));
            b->ep = white ? s - 8 : s + 8;
            eps++;
        } else if (code == 13 || code == 14) {
            put(b, s, ROOK | ((code == 14) << 3));
            b->castle |= BIT(s);
        } else {
            put(b, s, KING | 8);
            b->turn = BLACK;
        }
    }
    if (eps > 1) return 0;
    return usable(b);
}

static Move unpack_move(unsigned code) {
    int kind = (int)(code >> 14), from = (int)(code >> 8) & 63, to = (int)(code >> 2) & 63;
    Move m = {from, to, 0};
    if (kind == 1) m.promotion = (int)(code & 3) + KNIGHT;
    if (kind == 2) m.to = rank_of(from) * 8 + (file_of(to) > file_of(from) ? 6 : 2);
    return m;
}

static int put_record(Buffer *out, const Board *b, Move m, long score, long ply, long result) {
    if (!reserve(out, 200)) return 0;
    char *p = out->data + out->size;
    memcpy(p, "fen ", 4);
    p = put_fen(p + 4, b, ply / 2 + 1);
    memcpy(p, "\nmove ", 6);
    p = put_uci(p + 6, m);
    memcpy(p, "\nscore ", 7);
    p = put_number(p + 7, score);
    memcpy(p, "\nply ", 5);
    p = put_number(p + 5, ply);
    memcpy(p, "\nresult ", 8);
    p = put_number(p + 8, result);
    memcpy(p, "\ne\n", 3);
    out->size = p + 3 - out->data;
    return 1;
}

/* Read one ply's movetext: 1 taken, 0 refused. */
static int decode_ply(Reader *r, const Board *b, unsigned last, Move *m, long *score) {
    int us = b->turn;
    uint64_t ours = b->by_colour[us];
    int pieces = popcount(ours);
    unsigned piece_id, move_id;
    if (!read_bits(r, used_bits(pieces), &piece_id) || (int)piece_id >= pieces) return 0;
    int source = nth_square(ours, (int)piece_id), type = b->sq[source] & 7;
    m->from = source;
    m->promotion = 0;
    if (type == PAWN) {
        uint64_t targets = pawn_targets(b, source);
        int moves = popcount(targets);
        if (rank_of(source) == (us == WHITE ? 6 : 1)) {
            if (!read_bits(r, used_bits(moves * 4), &move_id) || (int)move_id >= moves * 4)
                return 0;
            m->to = nth_square(targets, (int)move_id / 4);
            m->promotion = (int)move_id % 4 + KNIGHT;
        } else {
            if (!read_bits(r, used_bits(moves), &move_id) || (int)move_id >= moves) return 0;
            m->to = nth_square(targets, (int)move_id);
        }
    } else if (type == KING) {
        uint64_t attacks = KING_ATTACKS[source] & ~ours;
        int rights, queenside, count = popcount(attacks);
        castling_rights(b, &rights, &queenside);
        if (!read_bits(r, used_bits(count + rights), &move_id) || (int)move_id >= count + rights)
            return 0;
        if ((int)move_id >= count) {
            int king_file = ((int)move_id == count && queenside) ? 2 : 6;
            m->to = rank_of(source) * 8 + king_file;
        } else {
            m->to = nth_square(attacks, (int)move_id);
        }
    } else {
        uint64_t attacks = attacks_of(b, source) & ~ours;
        int moves = popcount(attacks);
        if (!read_bits(r, used_bits(moves), &move_id) || (int)move_id >= moves) return 0;
        m->to = nth_square(attacks, (int)move_id);
    }
    if (!is_legal(b, *m)) return 0;
    unsigned delta = 0, block;
    int shift = 0;
    for (;;) {
        if (shift >= 16) return 0;
        if (!read_bits(r, 5, &block)) return 0;
        delta |= (block & 15) << shift;
        shift += 4;
        if (!(block & 16)) break;
    }
    unsigned value = (last + (unsigned)unzigzag(delta & 0xFFFF)) & 0xFFFF;
    *score = value & 0x8000 ? (long)value - 0x10000 : (long)value;
    return 1;
}

/* Decode a whole block; 1 taken, 0 refused. */
static int decode_block(const unsigned char *data, Py_ssize_t size, Buffer *out,
                        Py_ssize_t *records) {
    Py_ssize_t offset = 0;
    while (offset < size) {
        if (offset + 34 > size) return 0;
        const unsigned char *stem = data + offset;
        Board b;
        if (!unpack_stem(stem, &b)) return 0;
        unsigned rule50 = get_u16(stem + 30), ply_result = get_u16(stem + 28);
        b.halfmove = rule50;
        long ply = ply_result & 0x3FFF, result = unzigzag(ply_result >> 14);
        if (result < -1 || result > 1) return 0;
        Move m = unpack_move(get_u16(stem + 24));
        if (!is_legal(&b, m)) return 0;
        long score = unzigzag(get_u16(stem + 26));
        if (!put_record(out, &b, m, score, ply, result)) return -1;
        (*records)++;
        unsigned plies = get_u16(stem + 32);
        Reader r = {data, (uint64_t)(offset + 34) * 8, (uint64_t)size * 8};
        unsigned last = (unsigned)(-score) & 0xFFFF;
        for (unsigned k = 0; k < plies; k++) {
            make_move(&b, m);
            ply++;
            result = -result;
            if (!decode_ply(&r, &b, last, &m, &score)) return 0;
            last = (unsigned)(-score) & 0xFFFF;
            if (ply >= (1 << 14)) return 0;
            if (!put_record(out, &b, m, score, ply, result)) return -1;
            (*records)++;
        }
        offset = plies ? (Py_ssize_t)((r.position + 7) >> 3) : offset + 34;
    }
    return 1;
}

/* decode_block(block) -> (plain text, records), or None when refused. */
static PyObject *codec_decode_block(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    Buffer out = {NULL, 0, 0};
    Py_ssize_t records = 0;
    int status;
    const unsigned char *data = view.buf;
#ifdef CHESSPIPE_EXACT_BUFFERS
    unsigned char *copy = malloc(view.len ? (size_t)view.len : 1);
    if (!copy) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    memcpy(copy, view.buf, (size_t)view.len);
    data = copy;
#endif
    Py_BEGIN_ALLOW_THREADS
    status = reserve(&out, view.len * 32 + 4096) ? decode_block(data, view.len, &out, &records)
                                                : -1;
    Py_END_ALLOW_THREADS
#ifdef CHESSPIPE_EXACT_BUFFERS
    free(copy);
#endif
    PyBuffer_Release(&view);
    if (status < 0) {
        free(out.data);
        return PyErr_NoMemory();
    }
    if (!status) {
        free(out.data);
        Py_RETURN_NONE;
    }
    PyObject *text = PyBytes_FromStringAndSize(out.data, out.size);
    free(out.data);
    if (!text) return NULL;
    return Py_BuildValue("Nn", text, records);
}

static PyMethodDef codec_methods[] = {
    {"decode_block", codec_decode_block, METH_VARARGS, "A .binpack block as .plain text."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef codec_module = {
    PyModuleDef_HEAD_INIT, "_codec", "The .plain <-> .binpack codec, compiled.", -1,
    codec_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__codec(void) {
    init_tables();
    if (PyType_Ready(&EncoderType) < 0) return NULL;
    PyObject *module = PyModule_Create(&codec_module);
    if (!module) return NULL;
    Py_INCREF(&EncoderType);
    if (PyModule_AddObject(module, "Encoder", (PyObject *)&EncoderType) < 0) {
        Py_DECREF(&EncoderType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
