"""The explorer's lookup file: a month's explorer data as the server reads it, from disk.

`lookup.duckdb` beside a month's `games.parquet` and `positions.parquet`, made from them when
the month is indexed and published with them. A DuckDB database (its blocks checksummed, so a
damaged block fails a read and never answers a wrong count), every table sorted by what the
server looks it up by, so that one request reads a few blocks of it and the server's memory
does not grow with the games:

- `counts.bin` (a block file beside it, pipelines.explorer.blocks: a read by key costs a
  tenth of a DuckDB query): per (key, move, month, speed, lila's rating bound, tournament
  flag) the results for the mover, the movers' rating sum and the `games` (seq) of the group's
  most recent KEPT_PER_GROUP games, lila-openingexplorer's `MAX_LICHESS_GAMES`: what
  `/lichess` sums and picks topGames and recentGames from. Sorted by key.
- `positions`: each position once per game (key, month, seq, move), sorted by key, and
  `players`: each game twice, under each player's name in lower case with the side they
  played, their result and their opponent's rating, sorted by name: what `/player` joins.

What an answer shows of a game is in the month's records file (pipelines.explorer.records).
Months are numbered `year * 12 + month - 1` (MONTH_NUMBER), so that files of several months
merge without renumbering.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.explorer.blocks import BlockWriter
from pipelines.warehouse.resources import QueryResources
from schemas.dimensions import RATING_GROUPS
from schemas.speed import Speed

if TYPE_CHECKING:
    import duckdb

#: The lookup file's name in a month's folder, and the counts file's.
LOOKUP_FILE, COUNTS_FILE = "lookup.duckdb", "counts.bin"
#: The order of a counts file's rows, and its rows a block (about 30 KB before compression).
COUNTS_ORDER = "key, move, month, speed, bound, tournament"
COUNTS_BLOCK = 1024
#: What DuckDB may hold while it writes a month's lookup files (it spills the rest). At 1.6M
#: games: 426 MB peak and 42 s at this limit, 1.19 GB and 34 s at 1 GiB; the same bytes.
LOOKUP_RESOURCES = QueryResources(memory_limit=256 << 20)
#: The lookup file's layout; a file of another is refused.
LOOKUP_VERSION = 1
#: Games kept per position, move, month, speed, rating bound and flag (lila's
#: MAX_LICHESS_GAMES).
KEPT_PER_GROUP = 8
#: lila-openingexplorer's group of an average of 2800 or more (`Group3200`): its lower bound
#: orders top games; a filter reads it as 2500.
TOP_BOUND = 3200
#: Speed names in index order (the numbers of the `speed` columns; 255: none of them).
SPEED_NAMES = tuple(speed.value for speed in Speed)


def month_number(month: str) -> int:
    """A month's number in the lookup files ("2021-10" -> 2021 * 12 + 9)."""
    return int(month[:4]) * 12 + int(month[5:7]) - 1


def month_name(number: int) -> str:
    """The month of a number of month_number()."""
    year, month = divmod(number, 12)
    return f"{year:04d}-{month + 1:02d}"


def _bound_sql(average: str) -> str:
    """SQL of lila's rating bound of an average rating (RatingGroup::select_avg)."""
    steps = " ".join(
        f"WHEN {average} >= {bound} THEN {bound}" for bound in reversed(RATING_GROUPS[1:])
    )
    return f"CASE WHEN {average} >= 2800 THEN {TOP_BOUND} {steps} ELSE 0 END"


def write_lookup(
    games_path: Path,
    positions_path: Path,
    out: Path,
    counts_out: Path,
    month: str,
    *,
    resources: QueryResources = LOOKUP_RESOURCES,
) -> None:
    """Write a month's lookup file at `out` and its counts file at `counts_out` (new files)
    from its two Parquet files (DuckDB sorts them in at most `resources`' memory, spilling
    the rest: the index's memory does not grow with the month). A disk that fills raises
    OSError (ENOSPC) naming `out` (database_written)."""
    with database_written(out):
        _write_lookup(games_path, positions_path, out, counts_out, month, resources)


@contextmanager
def database_written(out: Path) -> Iterator[None]:
    """While DuckDB writes a database file at `out` (a staged path): a disk that fills raises
    OSError (ENOSPC) naming `out`, as a file written by Python would (an output set then names
    its target), and a failure leaves no write-ahead log of it."""
    import duckdb

    try:
        yield
    except duckdb.Error as exc:
        Path(f"{out}.wal").unlink(missing_ok=True)
        if "No space left on device" in str(exc):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out)) from None
        raise


def _write_lookup(
    games_path: Path,
    positions_path: Path,
    out: Path,
    counts_out: Path,
    month: str,
    resources: QueryResources,
) -> None:
    con = resources.connect(str(out))
    try:
        con.execute(f"CREATE TABLE meta AS SELECT {LOOKUP_VERSION} AS version, $month AS month",
                    {"month": month})  # fmt: skip
        con.execute(
            """
            CREATE TEMP TABLE games AS
            SELECT $number::USMALLINT AS month, seq, white, black, white_elo, black_elo, result,
                coalesce(list_position($speeds, speed) - 1, 255)::UTINYINT AS speed,
                rated, tournament
            FROM read_parquet($games) ORDER BY seq
            """,
            {"number": month_number(month), "speeds": list(SPEED_NAMES),
             "games": str(games_path)},
        )  # fmt: skip
        con.execute(
            """
            CREATE TABLE players AS
            SELECT * FROM (
                SELECT lower(white) AS name, true AS white, month, seq, result,
                    black_elo AS opponent, speed, rated FROM games
                UNION ALL
                SELECT lower(black), false, month, seq, result, white_elo, speed, rated
                FROM games
            ) ORDER BY name, white, month, seq
            """
        )
        con.execute(
            """
            CREATE TABLE positions AS
            SELECT key, $number::USMALLINT AS month, seq, move
            FROM read_parquet($positions) ORDER BY key, seq
            """,
            {"number": month_number(month), "positions": str(positions_path)},
        )
        average = "(coalesce(g.white_elo, 0) + coalesce(g.black_elo, 0)) // 2"
        con.execute(
            f"""
            CREATE TEMP TABLE counts AS
            WITH rows AS (
                SELECT p.key, p.move, p.seq, g.month, g.speed, g.tournament,
                    ({_bound_sql(average)})::USMALLINT AS bound,
                    CASE WHEN p.ply % 2 = 0 THEN g.result ELSE 2 - g.result END AS points,
                    coalesce(CASE WHEN p.ply % 2 = 0 THEN g.white_elo ELSE g.black_elo END, 0)
                        AS rating
                FROM read_parquet($positions) p JOIN games g USING (seq)
            ),
            -- The latest games of each group by a window, not max(seq, N): that aggregate's
            -- state does not spill (1 GB ran out at 100k games; this takes 300 MB, and 240
            -- at a 128 MB limit).
            ranked AS (
                SELECT *, row_number() OVER (
                    PARTITION BY {COUNTS_ORDER} ORDER BY seq DESC) AS latest
                FROM rows
            )
            SELECT key, move, month, speed, bound, tournament,
                count(*) FILTER (WHERE points = 2)::UINTEGER AS wins,
                count(*) FILTER (WHERE points = 1)::UINTEGER AS draws,
                count(*) FILTER (WHERE points = 0)::UINTEGER AS losses,
                sum(rating)::UBIGINT AS rating_sum,
                list(seq ORDER BY seq) FILTER (WHERE latest <= {KEPT_PER_GROUP}) AS games
            FROM ranked GROUP BY ALL
            """,
            {"positions": str(positions_path)},
        )
        write_counts(con, "SELECT * FROM counts", counts_out)
        con.execute("DROP TABLE counts")
        con.execute("CHECKPOINT")
    finally:
        con.close()


def write_counts(con: duckdb.DuckDBPyConnection, select: str, out: Path) -> int:
    """Write the rows of `select` (a counts table's columns, sorted by COUNTS_ORDER) as a
    counts file; return its rows."""
    writer = BlockWriter(out, "key", block_rows=COUNTS_BLOCK)
    try:
        writer.write(con.sql(f"{select} ORDER BY {COUNTS_ORDER}").to_arrow_reader(64 * 1024))
    finally:
        rows = writer.close()
    return rows
