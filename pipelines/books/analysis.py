"""What a book report shows, as data: the opening tree, coverage by ply, whole-book facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import chess
import numpy as np

from pipelines.books.settings import COVERAGE_PLIES, COVERAGE_POSITIONS, TREE_PLIES, TREE_WIDTH
from schemas.polyglot import Book, polyglot_key


@dataclass(frozen=True)
class TreeNode:
    """A book move in the opening tree: SAN, weight, share of its position, and replies."""

    san: str
    uci: str
    weight: int
    share: float
    line: tuple[str, ...]
    children: tuple[TreeNode, ...] = ()


@dataclass
class Coverage:
    """What a walk over book moves from the start position reaches, ply by ply.

    Positions count once, at the first ply they are reached, and only when they have a legal
    book move; entries are those stored under the counted positions' keys. Leaves are positions
    a book move leads to that have no book move.
    """

    positions_by_ply: list[int] = field(default_factory=list)
    entries_by_ply: list[int] = field(default_factory=list)
    positions_reached: int = 0
    entries_reached: int = 0
    leaves: int = 0
    truncated: bool = False


@dataclass
class BookFacts:
    """Whole-book numbers: entries, positions, weights, and their distributions."""

    path: str
    size: int
    entries: int
    positions: int
    weight_total: int
    weight_max: int
    zero_weight: int
    moves_per_position: dict[int, int]


def opening_tree(
    book: Book,
    board: chess.Board | None = None,
    plies: int = TREE_PLIES,
    width: tuple[int, ...] = TREE_WIDTH,
) -> tuple[TreeNode, ...]:
    """Return the heaviest book lines from a position: width[i] moves at ply i (last repeats)."""
    board = board.copy() if board is not None else chess.Board()
    return _tree(book, board, plies, width, 0, ())


def _tree(
    book: Book,
    board: chess.Board,
    plies: int,
    width: tuple[int, ...],
    ply: int,
    line: tuple[str, ...],
) -> tuple[TreeNode, ...]:
    if ply >= plies:
        return ()
    moves = book.moves(board)
    total = sum(m.weight for m in moves)
    nodes = []
    for book_move in moves[: width[min(ply, len(width) - 1)]]:
        san = board.san(book_move.move)
        board.push(book_move.move)
        children = _tree(book, board, plies, width, ply + 1, (*line, san))
        board.pop()
        nodes.append(
            TreeNode(
                san,
                book_move.move.uci(),
                book_move.weight,
                book_move.weight / total,
                (*line, san),
                children,
            )
        )
    return tuple(nodes)


def coverage(
    book: Book, max_plies: int = COVERAGE_PLIES, max_positions: int = COVERAGE_POSITIONS
) -> Coverage:
    """Walk book moves breadth-first from the start position; count what each ply reaches."""
    result = Coverage()
    start = chess.Board()
    seen: set[int] = {polyglot_key(start)}
    frontier = [(start, polyglot_key(start))]
    for ply in range(max_plies + 1):
        positions = entries = 0
        following: list[tuple[chess.Board, int]] = []
        for board, board_key in frontier:
            moves = book.moves(board, board_key)
            if not moves:
                result.leaves += 1
                continue
            positions += 1
            entries += len(book.raw_entries(board_key))
            if ply == max_plies:
                result.truncated = True
                continue
            for book_move in moves:
                child = board.copy(stack=False)
                child.push(book_move.move)
                key = polyglot_key(child)
                if key in seen:
                    continue
                if len(seen) >= max_positions:
                    result.truncated = True
                    continue
                seen.add(key)
                following.append((child, key))
        if not positions:
            break
        result.positions_by_ply.append(positions)
        result.entries_by_ply.append(entries)
        frontier = following
    result.positions_reached = sum(result.positions_by_ply)
    result.entries_reached = sum(result.entries_by_ply)
    return result


def book_facts(book: Book, path: Path) -> BookFacts:
    """Return whole-book numbers that need no board: sizes, weights, moves per position."""
    weights = book.entries["weight"].astype(np.int64)
    _, per_key = np.unique(book.keys, return_counts=True)
    counts, how_often = np.unique(per_key, return_counts=True)
    return BookFacts(
        path=str(path),
        size=Path(path).stat().st_size,
        entries=len(book),
        positions=len(per_key),
        weight_total=int(weights.sum()),
        weight_max=int(weights.max()) if len(weights) else 0,
        zero_weight=int((weights == 0).sum()),
        moves_per_position={int(c): int(n) for c, n in zip(counts, how_often, strict=True)},
    )
