"""A Polyglot book as one self-contained HTML page: opening tree, coverage by ply, charts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chess

from pipelines.books.analysis import (
    BookFacts,
    Coverage,
    TreeNode,
    book_facts,
    coverage,
    opening_tree,
)
from pipelines.books.charts import bar_chart_svg, column_chart_svg, esc
from pipelines.books.manifest import BookManifest, read_manifest_beside
from pipelines.books.settings import ReportSettings
from pipelines.errors import ChesspipeError
from pipelines.files import write_bytes_atomic
from schemas.polyglot import BookMove, open_book
from schemas.version import __version__

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
            f'<li data-line="{esc(" ".join(node.line))}" data-uci="{node.uci}" '
            f'data-weight="{node.weight}" data-share="{node.share:.6f}">'
            f'<span class="num">{number}</span> <span class="san">{esc(node.san)}</span>'
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
        f'<tr><td>{esc(name)}</td><td class="n" id="{ident}">{esc(value)}</td></tr>'
        for name, ident, value in rows
    )


def _facts(
    book_path: Path,
    facts: BookFacts,
    cover: Coverage,
    start_moves: list[BookMove],
    manifest: BookManifest | None,
) -> list[tuple[str, str, str]]:
    """Return the rows of the facts table: (name, element id, value)."""
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
        settings = manifest.settings.record().items()
        rows += [
            ("months", "manifest-months", ", ".join(manifest.months)),
            (
                "build settings",
                "manifest-settings",
                ", ".join(f"{k} {v}" for k, v in settings if v is not None),
            ),
            ("game moves behind the entries", "manifest-games", f"{manifest.entry_games:,}"),
        ]
    return rows


def _charts(facts: BookFacts, cover: Coverage, start_moves: list[BookMove]) -> str:
    """Return the three charts (or a sentence where one has nothing to show)."""
    board = chess.Board()
    start_total = sum(m.weight for m in start_moves)
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
    return first_chart + depth_chart + spread_chart


def render_report(book_path: Path, settings: ReportSettings | None = None, **options: Any) -> str:
    """Return the HTML report of a Polyglot book (`options`: ReportSettings fields instead)."""
    settings = settings or ReportSettings(**options)
    plies, max_plies, max_positions = settings.plies, settings.max_plies, settings.max_positions
    book_path = Path(book_path)
    book = open_book(book_path)
    facts = book_facts(book, book_path)
    tree = opening_tree(book, plies=plies, width=settings.width)
    cover = coverage(book, max_plies, max_positions)
    start_moves = book.moves(chess.Board())
    rows = _facts(book_path, facts, cover, start_moves, read_manifest_beside(book_path))
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
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>{esc(title)}</h1>
<h2>The book</h2>
<table class="facts" id="facts">{_facts_rows(rows)}</table>
<h2>Charts</h2>
<div class="charts" id="charts">{_charts(facts, cover, start_moves)}</div>
<h2>Opening tree from the start position</h2>
<p>Heaviest lines, {plies} plies deep; each percentage is the move's share of the weights of
its position (legal moves with weight above 0, as engines read the book).
Main line (the heaviest move at each ply): <b id="main-line">{esc(_main_line(tree))}</b>.</p>
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


def write_report(
    book_path: Path, out: Path, settings: ReportSettings | None = None, **options: Any
) -> Path:
    """Write the HTML report of a book atomically; return its path."""
    page = render_report(book_path, settings, **options)
    out = Path(out)
    if out.parent and not out.parent.exists():
        raise ChesspipeError(f"{out.parent}: no such directory")
    write_bytes_atomic(out, page.encode("utf-8"))
    return out
