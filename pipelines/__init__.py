"""chesspipe from Python: the handful of things a notebook needs, in one place.

    from pipelines import GameFilter, IngestSettings, ingest_month, open_warehouse, build_book

    ingest_month("lichess_2024-01.pgn.zst", "2024-01", "wh", IngestSettings(GameFilter(2000)))
    con = open_warehouse("wh")              # DuckDB, read-only: move_stats, games, evals, ...
    con.sql("SELECT sum(games) FROM move_stats").fetchall()
    build_book("wh", "2024-01", "book.bin", BookSettings(min_games=10))
    book = open_book("book.bin")            # its entries, and the moves of a position
    explore("wh", play=["e2e4"])            # what `chesspipe serve` answers for a position
    build_suite("wh", "all", "suite.epd", SuiteSettings(min_games=20))
    search_games("wh", parse_query('{"material": "KRPvKR"}'))  # games reaching a position

Each name is imported when first used, so `import pipelines` stays light (the command line
imports only what its command needs). The rest of the package is the work, room by room
(docs/architecture.md); these names are the ones kept stable for Python users. (No public name
is the name of a sub-package: `pipelines.ingest` stays the room.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipelines.books.build import build_book
    from pipelines.books.settings import BookSettings
    from pipelines.evals.store import read_evaluations
    from pipelines.games.game_filter import GameFilter
    from pipelines.ingest.run import ingest as ingest_month
    from pipelines.ingest.settings import IngestSettings
    from pipelines.search.games import SearchSettings, search_games
    from pipelines.search.query import parse_query
    from pipelines.search.sql import open_warehouse
    from pipelines.serve.position import ExplorerPosition, explore
    from pipelines.suites.build import build_suite
    from pipelines.suites.check import check_suite
    from pipelines.suites.settings import SuiteSettings
    from schemas.polyglot import open_book

#: Each public name and where it lives.
_FACE = {
    "BookSettings": "pipelines.books.settings",
    "ExplorerPosition": "pipelines.serve.position",
    "GameFilter": "pipelines.games.game_filter",
    "IngestSettings": "pipelines.ingest.settings",
    "SuiteSettings": "pipelines.suites.settings",
    "build_book": "pipelines.books.build",
    "build_suite": "pipelines.suites.build",
    "check_suite": "pipelines.suites.check",
    "explore": "pipelines.serve.position",
    "ingest_month": "pipelines.ingest.run",
    "open_book": "schemas.polyglot",
    "open_warehouse": "pipelines.search.sql",
    "search_games": "pipelines.search.games",
    "SearchSettings": "pipelines.search.games",
    "parse_query": "pipelines.search.query",
    "read_evaluations": "pipelines.evals.store",
}
#: A public name whose name in its module differs.
_AS = {"ingest_month": "ingest"}

__all__ = [
    "BookSettings", "ExplorerPosition", "GameFilter", "IngestSettings", "SearchSettings",
    "SuiteSettings", "build_book", "build_suite", "check_suite", "explore", "ingest_month",
    "open_book", "open_warehouse", "parse_query", "read_evaluations", "search_games",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _FACE.get(name)
    if module is None:
        raise AttributeError(f"module 'pipelines' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _AS.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
