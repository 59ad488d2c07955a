"""A Polyglot book as one self-contained HTML page: opening tree, coverage by ply, charts."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chess
import numpy as np

from pipelines.books.manifest import read_manifest_beside
from pipelines.books.show import open_book
from pipelines.errors import ChesspipeError
from pipelines.files import write_bytes_atomic
from pipelines.version import __version__
from schemas.polyglot import Book, polyglot_key

#: How far the coverage walk goes by default: plies, and positions in all.
COVERAGE_PLIES = 60
COVERAGE_POSITIONS = 200_000


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
    book: Book, board: chess.Board | None = None, plies: int = 4, width: tuple[int, ...] = (5, 3)
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


# --- SVG charts -------------------------------------------------------------------------------

_BAR = "#3b6ea8"
_ACCENT = "#d08c2c"
_INK = "#222222"
_GRID = "#d9d9d9"


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def bar_chart_svg(
    labels: list[str],
    values: list[float],
    title: str,
    value_text: list[str] | None = None,
    width: int = 560,
    bar_height: int = 22,
    color: str = _BAR,
) -> str:
    """Return a horizontal bar chart as inline SVG, one labelled bar per value."""
    value_text = value_text or [f"{v:g}" for v in values]
    label_w, pad, top = 90, 8, 30
    plot_w = width - label_w - 110
    height = top + len(values) * (bar_height + pad) + pad
    peak = max(values) if values and max(values) > 0 else 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" aria-label="{_esc(title)}">',
        f"<title>{_esc(title)}</title>",
        f'<text x="0" y="18" font-size="15" font-weight="bold" fill="{_INK}">{_esc(title)}</text>',
    ]
    for i, (label, value, text) in enumerate(zip(labels, values, value_text, strict=True)):
        y = top + i * (bar_height + pad)
        w = max(1.0, plot_w * value / peak) if value > 0 else 0.0
        parts.append(
            f'<text x="{label_w - 6}" y="{y + bar_height * 0.72:.1f}" font-size="13" '
            f'text-anchor="end" fill="{_INK}">{_esc(label)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_height}" '
            f'fill="{color}" data-label="{_esc(label)}" data-value="{value:g}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + bar_height * 0.72:.1f}" font-size="12" '
            f'fill="{_INK}">{_esc(text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def column_chart_svg(
    values: list[int],
    title: str,
    x_label: str,
    y_label: str,
    log: bool = False,
    width: int = 720,
    height: int = 260,
    color: str = _ACCENT,
) -> str:
    """Return a vertical column chart (x = index) as inline SVG, optionally on a log scale."""
    left, right, top, bottom = 64, 12, 30, 40
    plot_w, plot_h = width - left - right, height - top - bottom

    def scale(v: float) -> float:
        return float(np.log10(v + 1)) if log else float(v)

    peak = max((scale(v) for v in values), default=1.0) or 1.0
    step = plot_w / max(1, len(values))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" aria-label="{_esc(title)}">',
        f"<title>{_esc(title)}</title>",
        f'<text x="0" y="18" font-size="15" font-weight="bold" fill="{_INK}">{_esc(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        f'stroke="{_INK}"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="{_INK}"/>',
    ]
    if log:
        ticks = [10**e for e in range(0, int(peak) + 1) if scale(10**e) <= peak]
    else:
        ticks = list(np.linspace(0, peak, 5)[1:])
    for tick in ticks:
        y = top + plot_h - plot_h * scale(tick) / peak
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="{_GRID}"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="{_INK}">{int(round(tick)):,}</text>'
        )
    label_every = max(1, len(values) // 20)
    for i, value in enumerate(values):
        h = plot_h * scale(value) / peak
        x = left + i * step
        parts.append(
            f'<rect class="column" x="{x + step * 0.1:.1f}" y="{top + plot_h - h:.1f}" '
            f'width="{step * 0.8:.1f}" height="{h:.1f}" fill="{color}" data-x="{i}" '
            f'data-value="{value}"/>'
        )
        if i % label_every == 0:
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{top + plot_h + 14}" font-size="11" '
                f'text-anchor="middle" fill="{_INK}">{i}</text>'
            )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" font-size="12" text-anchor="middle" '
        f'fill="{_INK}">{_esc(x_label)}</text>'
        f'<text x="12" y="{top + plot_h / 2:.1f}" font-size="12" text-anchor="middle" '
        f'fill="{_INK}" transform="rotate(-90 12 {top + plot_h / 2:.1f})">{_esc(y_label)}</text>'
        "</svg>"
    )
    return "".join(parts)


# --- the page ---------------------------------------------------------------------------------

_STYLE = """
body { font-family: sans-serif; color: #222; background: #fff; margin: 24px; max-width: 1100px; }
h1 { font-size: 24px; } h2 { font-size: 19px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table.facts td { padding: 2px 14px 2px 0; } table.facts td.n { text-align: right; }
ul.tree, ul.tree ul { list-style: none; padding-left: 22px; margin: 0; }
ul.tree { padding-left: 0; } ul.tree li { margin: 2px 0; }
.san { font-weight: bold; display: inline-block; min-width: 56px; }
.pct { display: inline-block; min-width: 64px; text-align: right; }
.w { color: #666; font-size: 13px; margin-left: 8px; }
.meter { display: inline-block; height: 9px; background: #3b6ea8; margin-left: 8px; }
.charts svg { display: block; margin: 14px 0; }
table.cov td, table.cov th { padding: 1px 10px; text-align: right; }
footer { margin-top: 30px; color: #777; font-size: 12px; }
"""


def _moves_text(line: tuple[str, ...]) -> str:
    """Return SAN moves from the start position with move numbers: 1. e4 e5 2. Nf3."""
    out = []
    for i, san in enumerate(line):
        out.append(f"{i // 2 + 1}. {san}" if i % 2 == 0 else san)
    return " ".join(out)


def _tree_html(nodes: tuple[TreeNode, ...], css_class: str = "tree") -> str:
    items = []
    for node in nodes:
        number = f"{(len(node.line) + 1) // 2}." + ("" if len(node.line) % 2 else "..")
        items.append(
            f'<li data-line="{_esc(" ".join(node.line))}" data-uci="{node.uci}" '
            f'data-weight="{node.weight}" data-share="{node.share:.6f}">'
            f'<span class="num">{number}</span> <span class="san">{_esc(node.san)}</span>'
            f'<span class="pct">{node.share:.1%}</span>'
            f'<span class="meter" style="width:{max(1, round(120 * node.share))}px"></span>'
            f'<span class="w">weight {node.weight:,}</span>'
            + (_tree_html(node.children, "") if node.children else "")
            + "</li>"
        )
    attr = f' class="{css_class}"' if css_class else ""
    return f"<ul{attr}>{''.join(items)}</ul>"


def _facts_rows(rows: list[tuple[str, str, str]]) -> str:
    return "".join(
        f'<tr><td>{_esc(name)}</td><td class="n" id="{ident}">{_esc(value)}</td></tr>'
        for name, ident, value in rows
    )


def render_report(
    book_path: Path,
    plies: int = 4,
    width: tuple[int, ...] = (5, 3),
    max_plies: int = COVERAGE_PLIES,
    max_positions: int = COVERAGE_POSITIONS,
) -> str:
    """Return the HTML report of a Polyglot book."""
    book_path = Path(book_path)
    book = open_book(book_path)
    facts = book_facts(book, book_path)
    tree = opening_tree(book, plies=plies, width=width)
    cover = coverage(book, max_plies, max_positions)
    manifest = read_manifest_beside(book_path)
    start_moves = book.moves(chess.Board())
    start_total = sum(m.weight for m in start_moves)
    board = chess.Board()

    rows = [
        ("file", "book-file", book_path.name),
        ("size", "book-size", f"{facts.size:,} bytes"),
        ("entries", "book-entries", f"{facts.entries:,}"),
        ("positions (distinct keys)", "book-positions", f"{facts.positions:,}"),
        ("total weight", "book-weight-total", f"{facts.weight_total:,}"),
        ("largest weight", "book-weight-max", f"{facts.weight_max:,}"),
        ("entries of weight 0", "book-zero-weight", f"{facts.zero_weight:,}"),
        ("book moves at the start position", "book-start-moves", f"{len(start_moves)}"),
        (
            "positions reached from the start",
            "book-reached-positions",
            f"{cover.positions_reached:,} of {facts.positions:,}",
        ),
        (
            "entries in reached positions",
            "book-reached-entries",
            f"{cover.entries_reached:,} of {facts.entries:,} "
            f"({cover.entries_reached / facts.entries if facts.entries else 0:.1%})",
        ),
        (
            "deepest ply with book moves",
            "book-deepest-ply",
            f"{len(cover.positions_by_ply) - 1}" if cover.positions_by_ply else "none",
        ),
    ]
    if manifest:
        rows.append(("months", "manifest-months", ", ".join(manifest.months)))
        settings = ", ".join(
            f"{k} {v}" for k, v in manifest.settings.record().items() if v is not None
        )
        rows.append(("build settings", "manifest-settings", settings))
        rows.append(
            ("game moves behind the entries", "manifest-games", f"{manifest.entry_games:,}")
        )

    if start_moves:
        labels = [board.san(m.move) for m in start_moves[:12]]
        values = [m.weight / start_total for m in start_moves[:12]]
        first_chart = bar_chart_svg(
            labels,
            [round(v * 100, 4) for v in values],
            "First moves: share of the start position's weight",
            [f"{v:.1%} (weight {m.weight:,})" for v, m in zip(values, start_moves, strict=False)],
        )
    else:
        first_chart = "<p>The book has no moves for the start position.</p>"
    depth_chart = (
        column_chart_svg(
            cover.positions_by_ply,
            "Depth profile: book positions reached at each ply",
            "ply",
            "positions (log)",
            log=True,
        )
        if cover.positions_by_ply
        else "<p>No book position is reached from the start position.</p>"
    )
    spread = sorted(facts.moves_per_position.items())
    shown = [(str(k), v) for k, v in spread if k < 10]
    rest = sum(v for k, v in spread if k >= 10)
    if rest:
        shown.append(("10+", rest))
    spread_chart = (
        bar_chart_svg(
            [k for k, _ in shown],
            [float(v) for _, v in shown],
            "Moves per position: how many positions have 1, 2, 3... entries",
            [f"{v:,}" for _, v in shown],
            color="#5a9a68",
        )
        if shown
        else "<p>The book has no entries.</p>"
    )
    coverage_rows = "".join(
        f"<tr><td>{ply}</td><td>{n:,}</td><td>{e:,}</td></tr>"
        for ply, (n, e) in enumerate(zip(cover.positions_by_ply, cover.entries_by_ply, strict=True))
    )
    note = (
        f"<p>The walk stopped at its limits ({max_plies} plies, {max_positions:,} positions).</p>"
        if cover.truncated
        else ""
    )
    title = f"Polyglot book report: {book_path.name}"
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>{_esc(title)}</h1>
<h2>The book</h2>
<table class="facts" id="facts">{_facts_rows(rows)}</table>
<h2>Charts</h2>
<div class="charts" id="charts">{first_chart}{depth_chart}{spread_chart}</div>
<h2>Opening tree from the start position</h2>
<p>Heaviest lines, {plies} plies deep; each percentage is the move's share of the weights of
its position (legal moves with weight above 0, as engines read the book).
Main line (the heaviest move at each ply): <b id="main-line">{_esc(_main_line(tree))}</b>.</p>
<div id="tree">{_tree_html(tree) if tree else "<p>No book moves at the start position.</p>"}</div>
<h2>Coverage by ply</h2>
<p>Book positions reached by following book moves from the start position (each counted once,
at the first ply it is reached; positions without a book move are left out), and the book
entries stored under them. Positions reached without a book move of their own
(leaves): <span id="book-leaves">{cover.leaves:,}</span>.</p>{note}
<table class="cov" id="coverage"><tr><th>ply</th><th>positions</th><th>entries</th></tr>
{coverage_rows}</table>
<footer>Written by chesspipe {__version__} at {generated}.</footer>
</body></html>
"""


def _main_line(tree: tuple[TreeNode, ...]) -> str:
    line: tuple[str, ...] = ()
    nodes = tree
    while nodes:
        line = nodes[0].line
        nodes = nodes[0].children
    return _moves_text(line) or "(none)"


def write_report(book_path: Path, out: Path, **options: Any) -> Path:
    """Write the HTML report of a book atomically; return its path."""
    page = render_report(book_path, **options)
    out = Path(out)
    if out.parent and not out.parent.exists():
        raise ChesspipeError(f"{out.parent}: no such directory")
    write_bytes_atomic(out, page.encode("utf-8"))
    return out
