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

from pipelines.errors import UsageError
from pipelines.search.games import GameMatch, SearchSettings, condition_json, search_games
from pipelines.search.query import parse_query, query_from_json
from pipelines.serve.params import BadRequest, flag, number

#: The parameters a request may give.
KNOWN = frozenset({"fen", "subfen", "material", "imbalance", "result", "stm", "query",
                   "months", "speeds", "min_rating", "player", "limit", "pgn"})  # fmt: skip


def search_answers(warehouse: Path, params: QueryParams) -> Iterator[dict[str, object]]:
    """Each match's line of the answer, lazily: `search --format json`'s, and its PGN when
    `pgn=true`; ChesspipeError or BadRequest (a 400) for a bad parameter, once the first is
    asked for."""
    with_pgn = flag(params.get("pgn"), "pgn")
    for match in search_request(warehouse, params):
        line = match.to_json()
        if with_pgn:
            line["pgn"] = match.pgn()
        yield line


def search_request(warehouse: Path, params: QueryParams) -> Iterator[GameMatch]:
    """The matches a request asks for, lazily; ChesspipeError or BadRequest (a 400) for a bad
    parameter."""
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
    limit = params.get("limit")
    if limit is not None:
        if number(limit, "limit") < 1:
            raise BadRequest(f"limit must be at least 1, not {limit!r}")
        query = query.limited(int(limit))
    speeds = params.get("speeds")
    settings = SearchSettings(
        months=params.get("months") or "all",
        speeds=None if speeds is None else frozenset(s for s in speeds.split(",") if s),
        min_rating=number(params.get("min_rating") or "0", "min_rating"),
        player=params.get("player"),
    )
    return search_games(warehouse, query, settings)
