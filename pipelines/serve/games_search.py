"""`/games/search`: the games whose positions match, streamed as NDJSON (a line a game, as
`chesspipe search --format json` writes them).

The parameters are the command's: `fen`, `subfen`, `material`, `imbalance`, `result` (each
may be given again: any of them), `stm`, or `query` (Scoutfish's JSON) alone; `months`,
`speeds` (comma-separated), `min_rating`, `player`, `limit`; `pgn=true` adds each game's PGN
(the page opens a game from it). A bad one is a 400 naming it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from starlette.datastructures import QueryParams

from pipelines.errors import ChesspipeError, UsageError
from pipelines.search.games import GameMatch, SearchSettings, condition_json, search_games
from pipelines.search.query import parse_query, query_from_json

#: The parameters a request may give.
KNOWN = frozenset({"fen", "subfen", "material", "imbalance", "result", "stm", "query",
                   "months", "speeds", "min_rating", "player", "limit", "pgn"})  # fmt: skip


def search_answers(warehouse: Path, params: QueryParams) -> Iterator[dict[str, object]]:
    """Each match's line of the answer, lazily: `search --format json`'s, and its PGN when
    `pgn=true`; ChesspipeError (a 400) for a bad parameter, once the first is asked for."""
    with_pgn = params.get("pgn", "false")
    if with_pgn not in ("true", "false"):
        raise UsageError(f"pgn is true or false, not {with_pgn!r}")
    for match in search_request(warehouse, params):
        line = match.to_json()
        if with_pgn == "true":
            line["pgn"] = match.pgn()
        yield line


def search_request(warehouse: Path, params: QueryParams) -> Iterator[GameMatch]:
    """The matches a request asks for, lazily; ChesspipeError (a 400) for a bad parameter."""
    unknown = sorted(set(params) - KNOWN)
    if unknown:
        raise UsageError(f"unknown parameter {unknown[0]!r} (known: {', '.join(sorted(KNOWN))})")
    flags = condition_json(
        fen=params.getlist("fen"),
        sub_fen=params.getlist("subfen"),
        material=params.getlist("material"),
        imbalance=params.getlist("imbalance"),
        stm=params.get("stm"),
        result=params.getlist("result"),
    )
    text = params.get("query")
    if text is not None and flags:
        raise UsageError("query goes alone: give its rules inside the JSON")
    if text is None and not flags:
        raise UsageError("say what to find: fen, subfen, material, imbalance, stm, result or query")
    query = parse_query(text) if text is not None else query_from_json(flags)
    limit = _number(params.get("limit"), "limit", 1)
    if limit is not None:
        query = query.limited(limit)
    speeds = params.get("speeds")
    settings = SearchSettings(
        months=params.get("months") or "all",
        speeds=None if speeds is None else frozenset(s for s in speeds.split(",") if s),
        min_rating=_number(params.get("min_rating"), "min_rating", 0) or 0,
        player=params.get("player"),
    )
    return search_games(warehouse, query, settings)


def _number(text: str | None, name: str, least: int) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or int(text) < least:
        raise ChesspipeError(f"{name} must be a whole number of at least {least}, not {text!r}")
    return int(text)
