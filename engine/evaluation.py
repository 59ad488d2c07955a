"""Static evaluation: material and piece placement, tapered from middlegame to endgame."""

from __future__ import annotations

import chess

#: Piece values in centipawns, (middlegame, endgame).
PIECE_VALUES = {
    chess.PAWN: (100, 120),
    chess.KNIGHT: (320, 300),
    chess.BISHOP: (330, 320),
    chess.ROOK: (500, 540),
    chess.QUEEN: (950, 1000),
    chess.KING: (0, 0),
}

#: Rough values for ordering captures and pruning (most valuable victim first).
ORDER_VALUES = {
    chess.PAWN: 100,
    chess.KNIGHT: 320,
    chess.BISHOP: 330,
    chess.ROOK: 500,
    chess.QUEEN: 950,
    chess.KING: 20000,
}

#: Game phase weights; 24 is a full board, 0 bare kings and pawns.
_PHASE = {chess.KNIGHT: 1, chess.BISHOP: 1, chess.ROOK: 2, chess.QUEEN: 4}
_FULL_PHASE = 24

#: Largest value an evaluation may take, well below tablebase and mate scores.
EVAL_LIMIT = 20000


def _center_distance(square: int) -> int:
    """Manhattan distance from a square to the nearest of the four centre squares."""
    file, rank = chess.square_file(square), chess.square_rank(square)
    return max(3 - file, file - 4, 0) + max(3 - rank, rank - 4, 0)


def _placement(piece_type: int, square: int) -> tuple[int, int]:
    """Bonus (middlegame, endgame) for a white piece on a square."""
    file, rank = chess.square_file(square), chess.square_rank(square)
    center = _center_distance(square)
    if piece_type == chess.PAWN:
        central = 12 if file in (3, 4) and rank in (3, 4) else 0
        return (rank - 1) * 4 + central, (rank - 1) * 12
    if piece_type == chess.KNIGHT:
        return -8 * center, -6 * center
    if piece_type == chess.BISHOP:
        return -4 * center + (5 if rank == 1 else 0), -4 * center
    if piece_type == chess.ROOK:
        return (20 if rank == 6 else 0) + (6 if file in (3, 4) else 0), 0
    if piece_type == chess.QUEEN:
        return -2 * center, -4 * center
    # King: sheltered on the back rank in the middlegame, central in the endgame.
    shelter = 20 if file in (0, 1, 2, 6, 7) else 0
    return (shelter if rank == 0 else -25 * rank), -10 * center


def _tables() -> dict[tuple[bool, int], tuple[list[int], list[int]]]:
    tables = {}
    for piece_type in chess.PIECE_TYPES:
        mg_value, eg_value = PIECE_VALUES[piece_type]
        for color in chess.COLORS:
            mg, eg = [0] * 64, [0] * 64
            for square in chess.SQUARES:
                own = square if color == chess.WHITE else chess.square_mirror(square)
                bonus_mg, bonus_eg = _placement(piece_type, own)
                mg[square], eg[square] = mg_value + bonus_mg, eg_value + bonus_eg
            tables[(color, piece_type)] = (mg, eg)
    return tables


_TABLES = _tables()
_CENTER_DISTANCE = [_center_distance(sq) for sq in chess.SQUARES]
_FILE_MASKS = [chess.BB_FILES[f] for f in range(8)]
_ADJACENT_FILES = [
    (chess.BB_FILES[f - 1] if f > 0 else 0) | (chess.BB_FILES[f + 1] if f < 7 else 0)
    for f in range(8)
]
_PASSED_BONUS = [0, 5, 10, 20, 35, 60, 100, 0]


def _front_span(color: bool, square: int) -> int:
    """Squares ahead of a pawn on its own and adjacent files (where enemy pawns stop it)."""
    file, rank = chess.square_file(square), chess.square_rank(square)
    ranks = range(rank + 1, 8) if color == chess.WHITE else range(rank - 1, -1, -1)
    ahead = 0
    for r in ranks:
        ahead |= chess.BB_RANKS[r]
    return ahead & (_FILE_MASKS[file] | _ADJACENT_FILES[file])


_FRONT_SPANS = {color: [_front_span(color, sq) for sq in chess.SQUARES] for color in chess.COLORS}


def _pawn_structure(white_pawns: int, black_pawns: int) -> tuple[int, int]:
    """(middlegame, endgame) pawn structure score from White's view."""
    mg = eg = 0
    for color, own, enemy in (
        (chess.WHITE, white_pawns, black_pawns),
        (chess.BLACK, black_pawns, white_pawns),
    ):
        sign = 1 if color == chess.WHITE else -1
        for square in chess.scan_forward(own):
            file, rank = chess.square_file(square), chess.square_rank(square)
            if not own & _ADJACENT_FILES[file]:
                mg -= sign * 10
                eg -= sign * 15
            if chess.popcount(own & _FILE_MASKS[file]) > 1:
                mg -= sign * 6
                eg -= sign * 12
            relative = rank if color == chess.WHITE else 7 - rank
            if not enemy & _FRONT_SPANS[color][square]:
                mg += sign * _PASSED_BONUS[relative] // 2
                eg += sign * _PASSED_BONUS[relative]
    return mg, eg


def evaluate(board: chess.Board) -> int:
    """Return the static score of a position in centipawns, from the side to move's view."""
    mg = eg = phase = 0
    material = [0, 0]
    for (color, piece_type), (mg_table, eg_table) in _TABLES.items():
        mask = board.pieces_mask(piece_type, color)
        if not mask:
            continue
        sign = 1 if color == chess.WHITE else -1
        count = 0
        for square in chess.scan_forward(mask):
            mg += sign * mg_table[square]
            eg += sign * eg_table[square]
            count += 1
        phase += _PHASE.get(piece_type, 0) * count
        material[color] += PIECE_VALUES[piece_type][1] * count
        if piece_type == chess.BISHOP and count >= 2:
            mg += sign * 30
            eg += sign * 40
    structure_mg, structure_eg = _pawn_structure(
        board.pieces_mask(chess.PAWN, chess.WHITE), board.pieces_mask(chess.PAWN, chess.BLACK)
    )
    mg += structure_mg
    eg += structure_eg
    eg += _mop_up(board, material)
    phase = min(phase, _FULL_PHASE)
    # Truncate toward zero, so that a position and its mirror image score alike.
    score = int((mg * phase + eg * (_FULL_PHASE - phase)) / _FULL_PHASE)
    score = max(-EVAL_LIMIT, min(EVAL_LIMIT, score))
    return (score if board.turn == chess.WHITE else -score) + 10


def _mop_up(board: chess.Board, material: list[int]) -> int:
    """Endgame bonus (White's view) for driving a lone enemy king to the edge with our king."""
    for strong in chess.COLORS:
        weak = not strong
        if board.pawns & board.occupied_co[weak] or board.occupied_co[weak] & ~board.kings:
            continue
        if (
            material[strong] < PIECE_VALUES[chess.ROOK][1]
            or board.pawns & board.occupied_co[strong]
        ):
            continue
        strong_king = board.king(strong)
        weak_king = board.king(weak)
        if strong_king is None or weak_king is None:
            continue
        bonus = 10 * _CENTER_DISTANCE[weak_king] + 4 * (
            14 - chess.square_manhattan_distance(strong_king, weak_king)
        )
        return bonus if strong == chess.WHITE else -bonus
    return 0
