"""`/lichess?variant=chess960` answers from the Chess960 months only, and the standard
explorer from the standard months only, as lila keeps its variants apart."""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
import zstandard

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.speed import Speed
from tests.random_moves import chess960_games
from tests.serving import served_in_thread

START = chess.STARTING_FEN
CHESS960_MONTH = "2024-02"


def _answer(warehouse: Path, query: str) -> dict[str, Any]:
    from pipelines.serve.app import ServeSettings, open_app

    with served_in_thread(open_app(ServeSettings(str(warehouse), []))) as url:
        return _get(f"{url}/lichess?{query}")


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def _totals(answer: dict[str, Any]) -> tuple[int, int, int]:
    return answer["white"], answer["draws"], answer["black"]


@pytest.fixture(scope="module")
def pgn960(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chess960") / "games.pgn.zst"
    path.write_bytes(zstandard.ZstdCompressor().compress(chess960_games(300, seed=7).encode()))
    return path


@pytest.mark.slow
def test_each_variant_answers_from_its_own_months(
    sample_warehouse: Path, tmp_path: Path, pgn960: Path
) -> None:
    fen = START.replace(" ", "_")
    standard_only = _answer(sample_warehouse, f"variant=standard&fen={fen}")
    assert sum(_totals(standard_only)) > 0
    # Only standard months: a Chess960 request finds no game (it counted 12,550 here before).
    nothing = _answer(sample_warehouse, f"variant=chess960&fen={fen}")
    assert _totals(nothing) == (0, 0, 0) and nothing["moves"] == []
    both = tmp_path / "wh"
    shutil.copytree(sample_warehouse, both)
    rules = GameFilter(0, frozenset(Speed), allow_bots=True, variant="chess960")
    ingest(str(pgn960), CHESS960_MONTH, both, IngestSettings(rules))
    # The standard explorer is what it was without the Chess960 month.
    assert _answer(both, f"variant=standard&fen={fen}") == standard_only
    # Chess960 at position 518 (the standard start): the Chess960 games from it, recounted.
    results = {"1-0": 0, "1/2-1/2": 0, "0-1": 0}
    firsts: dict[str, int] = {}
    with zstandard.open(pgn960, "rt") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            if game.headers.get("FEN", START) != START or game.next() is None:
                continue
            results[game.headers["Result"]] += 1
            first = game.next()
            assert first is not None and first.move is not None
            uci = game.board().uci(first.move)
            firsts[uci] = firsts.get(uci, 0) + 1
    chess960 = _answer(both, f"variant=chess960&fen={fen}")
    assert _totals(chess960) == (results["1-0"], results["1/2-1/2"], results["0-1"])
    assert sum(results.values()) > 0
    found = {m["uci"]: m["white"] + m["draws"] + m["black"] for m in chess960["moves"]}
    assert found == firsts
