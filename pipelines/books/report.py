"""A Polyglot book as one self-contained HTML page: opening tree, coverage by ply, charts."""

from __future__ import annotations

from collections.abc import Mapping
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
from pipelines.books.outcomes import BookStatistics, Outcomes
from pipelines.books.settings import ReportSettings
from pipelines.errors import ChesspipeError
from pipelines.evals.after_move import MoveEvaluation, evaluations_after, has_evaluations
from pipelines.files import write_bytes_atomic
from pipelines.warehouse.openings import names_by_key
from schemas.polyglot import BookMove, open_book, polyglot_key
from schemas.version import __version__

_STYLE = """
body { font-family: sans-serif; color: #222; background: #fff; margin: 24px; }
h1 { font-size: 24px; } h2 { font-size: 19px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table.facts td { padding: 2px 14px 2px 0; } table.facts td.n { text-align: right; }
ul.tree, ul.tree ul { list-style: none; padding-left: 22px; margin: 0; }
ul.tree { padding-left: 0; } ul.tree li { margin: 2px 0; }
.san { font-weight: bold; display: inline-block; min-width: 56px; }
.pct { display: inline-block; min-width: 64px; text-align: right; }
.w { color: #666; font-size: 13px; margin-left: 8px; }
.meter { display: inline-block; height: 9px; background: #3b6ea8; margin-left: 8px; }
.charts { display: flex; flex-wrap: wrap; gap: 14px 40px; align-items: flex-start; }
.charts svg { display: block; margin: 14px 0; }
#tree > ul.tree { columns: 620px; column-gap: 40px; }
#tree > ul.tree > li { break-inside: avoid; }
.games { color: #444; font-size: 13px; margin-left: 8px; }
.opening { color: #7a4b00; font-size: 13px; margin-left: 8px; }
.eval { color: #1d5e2c; font-size: 13px; margin-left: 8px; }
.boards { display: flex; flex-wrap: wrap; gap: 18px 28px; }
.boards figure { margin: 0; width: 260px; }
.boards figcaption { font-size: 13px; margin-top: 4px; }
.boards figcaption span { margin-left: 0; }
table.cov td, table.cov th { padding: 1px 10px; text-align: right; }
footer { margin-top: 30px; color: #777; font-size: 12px; }
"""


def _moves_text(line: tuple[str, ...]) -> str:
    """Return SAN moves from the start position with move numbers: 1. e4 e5 2. Nf3."""
    out = []
    for i, san in enumerate(line):
        out.append(f"{i // 2 + 1}. {san}" if i % 2 == 0 else san)
    return " ".join(out)


def _tree_html(nodes: tuple[TreeNode, ...], extras: _Extras, css_class: str = "tree") -> str:
    items = []
    for node in nodes:
        number = f"{(len(node.line) + 1) // 2}." + ("" if len(node.line) % 2 else "..")
        attrs, html = extras.of(node.line)
        items.append(
            f'<li data-line="{esc(" ".join(node.line))}" data-uci="{node.uci}" '
            f'data-weight="{node.weight}" data-share="{node.share:.6f}"{attrs}>'
            f'<span class="num">{number}</span> <span class="san">{esc(node.san)}</span>'
            f'<span class="pct">{node.share:.1%}</span>'
            f'<span class="meter" style="width:{max(1, round(120 * node.share))}px"></span>'
            f'<span class="w">weight {node.weight:,}</span>{html}'
            + (_tree_html(node.children, extras, "") if node.children else "")
            + "</li>"
        )
    attr = f' class="{css_class}"' if css_class else ""
    return f"<ul{attr}>{''.join(items)}</ul>"


def _board_after(line: tuple[str, ...]) -> chess.Board:
    board = chess.Board()
    for san in line:
        board.push_san(san)
    return board


class _Extras:
    """What the page adds to a line's last move: its games and results, its evaluation, its
    opening's name."""

    def __init__(
        self,
        lines: list[tuple[str, ...]],
        statistics: BookStatistics | None,
        names: Mapping[int, tuple[str, str]],
        evals: Path | None = None,
    ) -> None:
        self.names = names
        self.outcomes: dict[str, dict[chess.Move, Outcomes]] = {}
        if statistics is not None and lines:
            self.outcomes = statistics.outcomes([_board_after(line[:-1]) for line in lines])
        #: The stored evaluation after each line's last move (None: no store to read).
        self.evaluations: dict[tuple[str, ...], MoveEvaluation] | None = None
        if evals is not None:
            places = {}
            for line in lines:
                board = _board_after(line[:-1])
                places[line] = (board, board.parse_san(line[-1]))
            found = evaluations_after(evals, places.values())
            self.evaluations = {
                line: found[(board.fen(), move)]
                for line, (board, move) in places.items()
                if (board.fen(), move) in found
            }

    def move_outcomes(self, line: tuple[str, ...]) -> Outcomes | None:
        """The games and results of a line's last move, when the statistics are at hand."""
        if not self.outcomes:
            return None
        board = _board_after(line[:-1])
        found = self.outcomes.get(board.fen(), {})
        return found.get(board.parse_san(line[-1]), Outcomes(0, 0, 0, 0))

    def opening(self, line: tuple[str, ...]) -> tuple[str, str] | None:
        """The name of the position a line reaches, if it is a named opening."""
        return self.names.get(polyglot_key(_board_after(line)))

    def of(self, line: tuple[str, ...]) -> tuple[str, str]:
        """Return the attributes and the HTML a tree item of this line gets."""
        attrs = html = ""
        outcomes = self.move_outcomes(line)
        if outcomes is not None:
            attrs += "".join(f' data-{k}="{v}"' for k, v in outcomes._asdict().items())
            html += f'<span class="games">{esc(outcomes.describe())}</span>'
        if self.evaluations is not None:
            judged = self.evaluations.get(line)
            if judged is not None:
                attrs += f' data-eval="{judged.score}"'
            shown = judged.describe() if judged is not None else "-"
            html += f'<span class="eval">eval {esc(shown)}</span>'
        opening = self.opening(line)
        if opening is not None:
            attrs += f' data-eco="{esc(opening[0])}" data-opening="{esc(opening[1])}"'
            html += f'<span class="opening">{esc(opening[0])} {esc(opening[1])}</span>'
        return attrs, html


def _tree_lines(nodes: tuple[TreeNode, ...]) -> list[tuple[str, ...]]:
    """Every line of the tree (each node's)."""
    return [line for node in nodes for line in (node.line, *_tree_lines(node.children))]


#: Board diagrams: their size in pixels.
DIAGRAM_SIZE = 260


def _top_lines(tree: tuple[TreeNode, ...]) -> list[tuple[str, ...]]:
    """The report's top positions: from each first move of the tree, its heaviest line."""
    lines = []
    for node in tree:
        while node.children:
            node = node.children[0]
        lines.append(node.line)
    return lines


def _diagrams_html(tree: tuple[TreeNode, ...], extras: _Extras) -> str:
    """Return a board diagram (SVG from chess.svg) of each top position, with its line."""
    import chess.svg

    figures = []
    for line in _top_lines(tree):
        board = _board_after(line)
        diagram = chess.svg.board(board, lastmove=board.peek(), size=DIAGRAM_SIZE)
        caption = f"<b>{esc(_moves_text(line))}</b>"
        named = next(
            (found for n in range(len(line), 0, -1) if (found := extras.opening(line[:n]))),
            None,
        )
        if named is not None:
            caption += f'<br><span class="opening">{esc(named[0])} {esc(named[1])}</span>'
        outcomes = extras.move_outcomes(line)
        if outcomes is not None:
            caption += f'<br><span class="games">{esc(outcomes.describe())}</span>'
        figures.append(
            f'<figure class="diagram" data-line="{esc(" ".join(line))}" '
            f'data-fen="{esc(board.fen())}">{diagram}<figcaption>{caption}</figcaption></figure>'
        )
    return f'<div class="boards" id="diagrams">{"".join(figures)}</div>'


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


def render_report(
    book_path: Path,
    settings: ReportSettings | None = None,
    *,
    statistics: BookStatistics | None = None,
    names: Mapping[int, tuple[str, str]] | None = None,
    evals: Path | None = None,
    **options: Any,
) -> str:
    """Return the HTML report of a Polyglot book (`options`: ReportSettings fields instead).

    With `statistics` (those the book was built from), each tree move shows its games and
    White/draw/Black shares; with `evals` (a warehouse holding an evaluation store), the stored
    evaluation after it, from the mover's view; opening names come from `names` (default:
    names_by_key()).
    """
    settings = settings or ReportSettings(**options)
    plies, max_plies, max_positions = settings.plies, settings.max_plies, settings.max_positions
    book_path = Path(book_path)
    book = open_book(book_path)
    facts = book_facts(book, book_path)
    tree = opening_tree(book, plies=plies, width=settings.width)
    cover = coverage(book, max_plies, max_positions)
    start_moves = book.moves(chess.Board())
    if evals is not None and not has_evaluations(evals):
        evals = None
    extras = _Extras(
        _tree_lines(tree), statistics, names_by_key() if names is None else names, evals
    )
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
    tree_html = _tree_html(tree, extras) if tree else "<p>No book moves at the start position.</p>"
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
<h2>Top positions</h2>
<p>Where the heaviest line from each first move of the tree leads.</p>
{_diagrams_html(tree, extras) if tree else "<p>No book moves at the start position.</p>"}
<h2>Opening tree from the start position</h2>
<p>Heaviest lines, {plies} plies deep; each percentage is the move's share of the weights of
its position (legal moves with weight above 0, as engines read the book).
Main line (the heaviest move at each ply): <b id="main-line">{esc(_main_line(tree))}</b>.</p>
{_statistics_note(statistics)}{_evals_note(evals)}
<div id="tree">{tree_html}</div>
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


def _statistics_note(statistics: BookStatistics | None) -> str:
    if statistics is None:
        return (
            "<p>The statistics the book was built from are not at hand: no games or results "
            "per move.</p>"
        )
    months = statistics.manifest.months
    span = months[0] if len(months) == 1 else f"{months[0]} to {months[-1]}"
    return (
        f"<p>Games and results (White wins, draws, Black wins) per move: the statistics of "
        f"{esc(span)} in {esc(statistics.warehouse)}, with the book's settings.</p>"
    )


def _evals_note(evals: Path | None) -> str:
    if evals is None:
        return ""
    return (
        f"<p>Evaluations (after each move, from the side that moved, with the search's depth "
        f"or nodes): the evaluation store of {esc(evals)} (chesspipe evals).</p>"
    )


def _main_line(tree: tuple[TreeNode, ...]) -> str:
    line: tuple[str, ...] = ()
    nodes = tree
    while nodes:
        line = nodes[0].line
        nodes = nodes[0].children
    return _moves_text(line) or "(none)"


def write_report(
    book_path: Path,
    out: Path,
    settings: ReportSettings | None = None,
    *,
    statistics: BookStatistics | None = None,
    evals: Path | None = None,
    **options: Any,
) -> Path:
    """Write the HTML report of a book atomically; return its path."""
    page = render_report(book_path, settings, statistics=statistics, evals=evals, **options)
    out = Path(out)
    if out.parent and not out.parent.exists():
        raise ChesspipeError(f"{out.parent}: no such directory")
    write_bytes_atomic(out, page.encode("utf-8"))
    return out
