"""Polyglot books from the move statistics, aggregated by DuckDB."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_bytes_atomic, write_json_atomic
from pipelines.version import __version__
from pipelines.warehouse.layout import available_months, month_range
from pipelines.warehouse.sql import connect
from schemas.dimensions import SPEEDS

MAX_WEIGHT = 65535

#: A book file's bytes as hex: in book order (key, then weight descending, then move), each
#: entry's 16 bytes, big-endian: key u64, move u16, weight u16, learn u32 (0), as
#: schemas.polyglot.ENTRY_DTYPE lays them out.
ENTRIES_HEX = (
    "string_agg(printf('%016x%04x%04x00000000', key, move, weight), '' "
    "ORDER BY key, weight DESC, move)"
)


@dataclass(frozen=True)
class BookSettings:
    """Which moves enter a book: games, score, and optional filters on the stored dimensions.

    The one home of these defaults: the command line and the flows' parameters read them here.
    """

    min_games: int = 20
    min_score: float = 0.35
    speeds: tuple[str, ...] | None = None
    min_band: int | None = None

    def __post_init__(self) -> None:
        if self.min_games < 1:
            raise ChesspipeError("min_games must be at least 1")
        if not 0.0 <= self.min_score <= 1.0:
            raise ChesspipeError("min_score must be between 0 and 1")
        if self.speeds is not None:
            unknown = set(self.speeds) - set(SPEEDS)
            if unknown:
                raise ChesspipeError(f"unknown speed(s) {sorted(unknown)}")

    def record(self) -> dict[str, Any]:
        """Return the settings as plain JSON values, as manifests store them."""
        data = asdict(self)
        if self.speeds is not None:
            data["speeds"] = list(self.speeds)
        return data


def book_query(months: list[str], settings: BookSettings) -> tuple[str, list[Any]]:
    """Return the SQL (and parameters) that yields a book's (key, move, weight, games) rows."""
    where = ["month IN (SELECT unnest(?::VARCHAR[]))"]
    params: list[Any] = [months]
    if settings.speeds is not None:
        where.append("speed IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(settings.speeds))
    if settings.min_band is not None:
        where.append("rating_band >= ?")
        params.append(settings.min_band)
    # The score test is PolyGlot's, in doubles: (points / n) / 2 >= min score.
    sql = f"""
        WITH totals AS (
            SELECT key, move, sum(games)::UBIGINT AS n, sum(2 * wins + draws)::UBIGINT AS points
            FROM move_stats WHERE {" AND ".join(where)}
            GROUP BY key, move
        ), kept AS (
            SELECT key, move, n, points, max(points) OVER (PARTITION BY key) AS top
            FROM totals
            WHERE n >= ? AND points > 0 AND (points::DOUBLE / n::DOUBLE) / 2.0 >= ?
        )
        SELECT key, move,
            CASE WHEN top > {MAX_WEIGHT}
                 THEN greatest(1, (points::HUGEINT * {2 * MAX_WEIGHT} + top) // (2 * top::HUGEINT))
                 ELSE points END::USMALLINT AS weight,
            n AS games
        FROM kept
    """
    params += [settings.min_games, settings.min_score]
    return sql, params


def build_book(
    warehouse: Path, months: str | list[str], out: Path, settings: BookSettings | None = None
) -> dict[str, Any]:
    """Write a Polyglot book from the chosen months' statistics; return its manifest."""
    settings = settings or BookSettings()
    started = time.monotonic()
    wanted = month_range(months) if isinstance(months, str) else list(months)
    have = set(available_months(Path(warehouse)))
    missing = [m for m in wanted if m not in have]
    if missing:
        raise ChesspipeError(
            f"no move statistics for {', '.join(missing)} in {warehouse} (ingest them first)"
        )
    sql, params = book_query(wanted, settings)
    con = connect(Path(warehouse))
    try:
        hex_entries, entries, positions, games = con.execute(
            f"SELECT {ENTRIES_HEX}, count(*), count(DISTINCT key), coalesce(sum(games), 0) "
            f"FROM ({sql})",
            params,
        ).fetchone() or ("", 0, 0, 0)
    finally:
        con.close()
    out = Path(out)
    write_bytes_atomic(out, bytes.fromhex(hex_entries or ""), sync=True)
    manifest = {
        "chesspipe_version": __version__,
        "out": str(out),
        "months": wanted,
        "settings": settings.record(),
        "entries": int(entries),
        "positions": int(positions),
        "games": int(games),
        "size": out.stat().st_size,
        "sha256": file_sha256(out),
        "seconds": round(time.monotonic() - started, 3),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_json_atomic(book_manifest_path(out), manifest)
    return manifest


def book_manifest_path(book: Path) -> Path:
    """Return the manifest path beside a book: BOOK.json for BOOK.bin."""
    return Path(book).with_suffix(".json")
