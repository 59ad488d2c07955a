"""Every game kept: chesspipe ingest + book build side by side with `polyglot make-book`.

    python bench/every_game.py [--mb 200] [--plies 20,40,60] [--year-mb 20] [--out ...]

On the real Lichess samples and on a dump of --mb MB of PGN generated from them
(bench/make_dump.py), every game is kept (`--min-rating 0`, all speeds, bots too):
(p) `polyglot make-book -max-ply N` on the decompressed PGN (PolyGlot reads plain text; the
games it reads are the ones chesspipe keeps, picked beforehand by pgn-extract, unmeasured) and
(d) `chesspipe ingest --plies N` on the `.pgn.zst` + `chesspipe book build`, taking turns. The
two books are compared entry by entry, leaving out the positions where a move reached 16384
games, from which PolyGlot halves its counts (the design counts on).

A year: twelve generated months of --year-mb MB each, ingested, then `chesspipe book build` over
the twelve and `chesspipe sql` queries for single positions, on the warehouse as written and on
copies of it laid out otherwise (one row group per month; rows in no order; the year compacted
by `chesspipe warehouse compact`, its queries reading `move_stats_yearly`), to show what the
layout buys; the books of all layouts must be the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.run_benchmarks import (  # noqa: E402
    PY,
    WORK,
    measure,
    measure_once,
    pgn_size,
    real_input,
)

ALL_SPEEDS = "ultrabullet,bullet,blitz,rapid,classical,correspondence"

#: From this many games on a move, PolyGlot halves its counts (book.c): such positions differ.
POLYGLOT_HALVES_AT = 16384


def plain_pgn(path: Path) -> Path:
    """Decompress a source and keep the games chesspipe keeps at --min-rating 0 (a decided
    result, whatever the ratings), for PolyGlot (which counts a game with result * too)."""
    tags = WORK / "decided.txt"
    tags.write_text('Result "1-0"\nResult "0-1"\nResult "1/2-1/2"\n')
    out = path.with_suffix("").with_suffix(".kept.pgn")
    subprocess.run(
        f"zstd -dc '{path}' | pgn-extract -s -t '{tags}' 2>/dev/null > '{out}'",
        shell=True,
        check=True,
        env={**os.environ, "PATH": os.environ.get("PATH", "") + ":/usr/games"},
    )
    return out


def chesspipe(
    path: Path, warehouse: Path, plies: int, month: str = "2000-01", checkout: Path | None = None
) -> str:
    """Return the shell command: ingest every game of path, then build the month's book.

    With `checkout`, the chesspipe of that checkout runs (an earlier version, to compare).
    """
    py = PY
    if checkout is not None:  # python -m puts the working folder first on the path
        py = f"cd '{checkout}' && PYTHONPATH='{checkout}' {PY}"
    return (
        f"rm -rf '{warehouse}' && {py} -m pipelines ingest '{path}' --month {month} "
        f"--warehouse '{warehouse}' --quiet --min-rating 0 --speeds {ALL_SPEEDS} --allow-bots "
        f"--plies {plies} && {py} -m pipelines book build --warehouse '{warehouse}' "
        f"--months {month} --out '{warehouse}/book.bin'"
    )


def compare_books(ours: Path, theirs: Path, warehouse: Path) -> dict:
    """Compare two books entry by entry, leaving out positions past PolyGlot's halving."""
    import duckdb

    from schemas.polyglot import read_entries

    def entries(path: Path) -> set[tuple[int, int, int]]:
        table = read_entries(path)
        return set(zip(*(table[name].tolist() for name in ("key", "move", "weight")), strict=True))

    con = duckdb.connect()
    halved = {
        int(key)
        for (key,) in con.execute(
            "SELECT DISTINCT key FROM (SELECT key, move, sum(games) AS n FROM read_parquet(?) "
            "GROUP BY key, move) WHERE n >= ?",
            [str(warehouse / "move_stats" / "*" / "*.parquet"), POLYGLOT_HALVES_AT],
        ).fetchall()
    }
    mine = {e for e in entries(ours) if e[0] not in halved}
    peer = {e for e in entries(theirs) if e[0] not in halved}
    return {
        "entries": len(peer),
        "equal": mine == peer,
        "only_chesspipe": len(mine - peer),
        "only_polyglot": len(peer - mine),
        "positions_left_out": len(halved),
    }


def warehouse_bytes(warehouse: Path) -> int:
    return sum(p.stat().st_size for p in (warehouse / "move_stats").rglob("*.parquet"))


def run_input(
    path: Path, label: str, plies_list: list[int], repeat: int, before: Path | None
) -> dict:
    """Measure (p) and (d) on one input at each depth; return the figures.

    With `before`, also (d0): the chesspipe of that checkout, at the first depth.
    """
    plain = plain_pgn(path)
    result: dict = {"label": label, "pgn_bytes": pgn_size(path), "by_plies": {}}
    for plies in plies_list:
        warehouse = WORK / f"every-{label}-{plies}"
        peer = WORK / f"every-{label}-{plies}-polyglot.bin"
        commands = {
            "p": f"polyglot make-book -pgn '{plain}' -bin '{peer}' -max-ply {plies} "
            "-min-game 20 -min-score 35 > /dev/null",
            "d": chesspipe(path, warehouse, plies),
        }
        if before is not None and plies == plies_list[0]:
            old = WORK / f"every-{label}-{plies}-before"
            commands["d0"] = chesspipe(path, old, plies, checkout=before)
        runs = measure(commands, repeat)
        manifest = json.loads((warehouse / "move_stats" / "month=2000-01.json").read_text())
        result["by_plies"][plies] = {
            "runs": runs,
            "games_read": manifest["games_read"],
            "games_kept": manifest["games_kept"],
            "rows": manifest["rows"],
            "warehouse_bytes": warehouse_bytes(warehouse),
            "book": compare_books(warehouse / "book.bin", peer, warehouse),
        }
    plain.unlink()
    return result


def layout_copies(warehouse: Path) -> dict[str, Path]:
    """Copies of a warehouse's months: one row group per month, and rows in no order."""
    import numpy as np
    import pyarrow.parquet as pq

    copies = {"as written": warehouse}
    for name, shuffle, row_group in (("one row group", False, None), ("unsorted", True, 1 << 17)):
        target = warehouse.with_name(warehouse.name + "-" + name.replace(" ", "-"))
        for path in (warehouse / "move_stats").rglob("*.parquet"):
            table = pq.read_table(path)
            if shuffle:
                table = table.take(np.random.default_rng(1).permutation(table.num_rows))
            out = target / path.relative_to(warehouse)
            out.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(
                table, out, compression="zstd", row_group_size=row_group or table.num_rows
            )
        copies[name] = target
    return copies


def year(mb: int, repeat: int, lichess: Path) -> dict:
    """Twelve generated months: book over the year, position queries, by layout."""
    import pyarrow.parquet as pq

    warehouse = WORK / "year"
    months = [f"2000-{m:02d}" for m in range(1, 13)]
    rows = 0
    if not all((warehouse / "move_stats" / f"month={m}.json").exists() for m in months):
        for index, month in enumerate(months):
            dump = WORK / f"year-{index}.pgn.zst"
            subprocess.run(
                [PY, str(HERE / "make_dump.py"), str(dump), "--mb", str(mb), "--seed",
                 str(100 + index), "--lichess", str(lichess)],
                check=True, capture_output=True,
            )  # fmt: skip
            subprocess.run(
                [PY, "-m", "pipelines", "ingest", str(dump), "--month", month, "--warehouse",
                 str(warehouse), "--quiet", "--min-rating", "0", "--speeds", ALL_SPEEDS,
                 "--allow-bots", "--force"],
                check=True, capture_output=True, cwd=ROOT,
            )  # fmt: skip
            dump.unlink()
    for month in months:
        rows += json.loads((warehouse / "move_stats" / f"month={month}.json").read_text())["rows"]
    import chess
    import chess.polyglot

    def key_after(sans: str) -> int:
        board = chess.Board()
        for san in sans.split():
            board.push_san(san)
        return chess.polyglot.zobrist_hash(board)

    # the position after a common first move, a common opening line, and a rare line; and the
    # floor: a query that reads nothing (start-up, DuckDB and the view).
    queries = {
        f"after {line}": f"key = {key_after(line)}"
        for line in ("e4", "e4 c5 Nf3 d6", "a3 a6 h3 h6")
    }
    queries["SELECT 1 (floor)"] = None
    result: dict = {"months": len(months), "rows": rows, "mb_per_month": mb, "layouts": {}}
    copies = layout_copies(warehouse)
    compacted = warehouse.with_name(warehouse.name + "-compacted-year")
    subprocess.run(["rm", "-rf", str(compacted)], check=True)
    subprocess.run(["cp", "-al", str(warehouse), str(compacted)], check=True)  # months linked
    compaction = measure_once(
        f"{PY} -m pipelines warehouse compact '{compacted}' --year {months[0][:4]} > /dev/null"
    )
    yearly = json.loads(
        (compacted / "move_stats_yearly" / f"year={months[0][:4]}.json").read_text()
    )
    result["compaction"] = {
        "wall": compaction["wall"],
        "cpu": compaction["cpu"],
        "peak_total_rss_mb": compaction["peak_total_rss_mb"],
        "rows": yearly["rows"],
        "month_rows": yearly["month_rows"],
        "bytes": yearly["output_size"],
    }
    copies = {"as written": copies.pop("as written"), "compacted year": compacted, **copies}
    for name, copy in copies.items():
        table = "move_stats_yearly" if name == "compacted year" else "move_stats"
        commands = {
            "book": f"{PY} -m pipelines book build --warehouse '{copy}' --months "
            f"{months[0]}..{months[-1]} --out '{copy}/year.bin' > /dev/null",
        }
        for label, where in queries.items():
            sql = (
                "SELECT uci(move) AS move, sum(games) AS games, sum(wins) AS wins "
                f"FROM {table} WHERE {where} GROUP BY move ORDER BY games DESC"
                if where is not None
                else "SELECT 1"
            )
            commands[label] = (
                f'{PY} -m pipelines sql --warehouse "{copy}" "{sql}" --format csv > /dev/null'
            )
        runs = measure(commands, repeat)
        folder = copy / ("move_stats_yearly" if name == "compacted year" else "move_stats")
        result["layouts"][name] = {
            "runs": runs,
            "bytes": sum(p.stat().st_size for p in folder.rglob("*.parquet")),
            "row_groups": sum(
                pq.ParquetFile(p).metadata.num_row_groups for p in folder.rglob("*.parquet")
            ),
        }
    books = {name: (copy / "year.bin").read_bytes() for name, copy in copies.items()}
    result["same_book"] = all(book == books["as written"] for book in books.values())
    result["book_entries"] = len(books["as written"]) // 16
    return result


def report(inputs: list[dict], year_result: dict | None, ran_at: str) -> str:
    lines = [
        "# Every game kept",
        "",
        f"Run by `python bench/every_game.py` on {ran_at} UTC, {os.cpu_count()} cores shared "
        "with other work (ratios of programs taking turns are what to read). Times in seconds, "
        "medians; all processes MB is the peak of their summed RSS.",
        "",
    ]
    before: list[str] = []
    for result in inputs:
        lines += [
            f"## {result['label']}: {result['pgn_bytes'] / 1e6:.0f} MB of PGN",
            "",
            "| plies | games kept | (p) polyglot wall (CPU) | (d) chesspipe wall (CPU) | (d)/(p) | "
            "(d) all processes MB | (d) games/s | warehouse bytes/game | same book |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for plies, figures in result["by_plies"].items():
            p, d = figures["runs"]["p"], figures["runs"]["d"]
            book = figures["book"]
            same = (
                f"yes, {book['entries']:,} entries ({book['positions_left_out']} positions "
                "past 16384 games left out)"
                if book["equal"]
                else f"no: {book['only_chesspipe']} only ours, {book['only_polyglot']} only "
                "PolyGlot's"
            )
            lines.append(
                f"| {plies} | {figures['games_kept']:,} | {p['wall']:.2f} ({p['cpu']:.2f}) | "
                f"{d['wall']:.2f} ({d['cpu']:.2f}) | {d['wall'] / p['wall']:.2f} | "
                f"{d['peak_total_rss_mb']:.0f} | {figures['games_kept'] / d['wall']:,.0f} | "
                f"{figures['warehouse_bytes'] / max(1, figures['games_kept']):.1f} | {same} |"
            )
            if "d0" in figures["runs"]:
                d0 = figures["runs"]["d0"]
                before.append(
                    f"- {result['label']}, {plies} plies: before this round {d0['wall']:.2f} s "
                    f"wall ({d0['cpu']:.2f} s CPU, {d0['wall'] / p['wall']:.2f}x PolyGlot), "
                    f"now {d['wall']:.2f} s ({d['cpu']:.2f} s CPU, "
                    f"{d['wall'] / p['wall']:.2f}x)."
                )
        lines.append("")
    if before:
        lines += ["## Before and after (the same run)", "", *before, ""]
    if year_result is not None:
        lines += [
            f"## A year: {year_result['months']} months of {year_result['mb_per_month']} MB of "
            f"PGN each, {year_result['rows']:,} rows",
            "",
            "| layout | row groups | MB | book over the year | "
            + " | ".join(
                f"query {q}"
                for q in next(iter(year_result["layouts"].values()))["runs"]
                if q != "book"
            )  # fmt: skip
            + " |",
            "|---|---|---|---|" + "---|" * 4,
        ]
        for name, layout in year_result["layouts"].items():
            runs = layout["runs"]
            lines.append(
                f"| {name} | {layout['row_groups']} | {layout['bytes'] / 1e6:.0f} | "
                + " | ".join(f"{run['wall']:.2f}" for run in runs.values())
                + " |"
            )
        compaction = year_result.get("compaction")
        if compaction is not None:
            lines += [
                "",
                f"The compacted year (`chesspipe warehouse compact`, run once beforehand: "
                f"{compaction['wall']:.1f} s wall, {compaction['cpu']:.1f} s CPU, "
                f"{compaction['peak_total_rss_mb']:.0f} MB) holds {compaction['rows']:,} rows "
                f"for the months' {compaction['month_rows']:,} "
                f"({compaction['rows'] / max(1, compaction['month_rows']):.2f}), "
                f"{compaction['bytes'] / 1e6:.0f} MB; its queries read `move_stats_yearly`. "
                f"The book over the year is the same file in every layout: "
                f"{'yes' if year_result['same_book'] else 'NO'} "
                f"({year_result['book_entries']:,} entries).",
            ]
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=200, help="generated dump, MB of PGN (0: none)")
    parser.add_argument("--plies", default="20,40,60")
    parser.add_argument("--year-mb", type=int, default=50, help="MB of PGN per generated month")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-year", action="store_true")
    parser.add_argument("--no-real", action="store_true", help="leave out the real samples")
    parser.add_argument(
        "--one-frame",
        action="store_true",
        help="also the generated dump as one zstd frame (as plain zstd writes it): read in order",
    )
    parser.add_argument(
        "--before", type=Path, help="another checkout of chesspipe, measured beside (d)"
    )
    parser.add_argument("--out", type=Path, default=HERE / "EVERY_GAME.md")
    shared = Path(os.environ.get("CHESSPIPE_SHARED_DATA", ROOT.parent / "shared" / "data"))
    parser.add_argument("--lichess", type=Path, default=shared / "lichess")
    args = parser.parse_args()
    plies = [int(p) for p in args.plies.split(",")]
    WORK.mkdir(exist_ok=True)
    inputs = []
    if not args.no_real:
        inputs.append(run_input(real_input(args.lichess), "real", plies, args.repeat, args.before))
    if args.mb:
        dump = WORK / f"dump-{args.mb}.pgn.zst"
        if not dump.exists():
            subprocess.run(
                [PY, str(HERE / "make_dump.py"), str(dump), "--mb", str(args.mb), "--lichess",
                 str(args.lichess)],
                check=True,
            )  # fmt: skip
        inputs.append(run_input(dump, f"dump-{args.mb}", plies, args.repeat, args.before))
        if args.one_frame:
            one_frame = WORK / f"dump-{args.mb}-one-frame.pgn.zst"
            if not one_frame.exists():
                subprocess.run(
                    f"zstd -dc '{dump}' | zstd -q -3 --single-thread -o '{one_frame}'",
                    shell=True, check=True,
                )  # fmt: skip
            label = f"dump-{args.mb}-one-frame"
            inputs.append(run_input(one_frame, label, plies, args.repeat, args.before))
    year_result = None if args.no_year else year(args.year_mb, args.repeat, args.lichess)
    ran_at = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
    text = report(inputs, year_result, ran_at)
    args.out.write_text(text + "\n")
    (WORK / "every_game.json").write_text(
        json.dumps({"inputs": inputs, "year": year_result, "ran_at": ran_at}, indent=1)
    )
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
