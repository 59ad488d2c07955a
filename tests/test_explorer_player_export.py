"""`/player` from a PGN a player brings: their export (lichess.org's, chess.com's), indexed by
each game's date (`explorer index --month-by date`) and served, answers as the games say,
checked against a python-chess reading of the same games (tests/explorer_recount.py)."""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import chess
import pytest

from pipelines.explorer.layout import explorer_manifest_path
from pipelines.serve.app import ServeSettings, open_app
from tests.conftest import GAMES_2021, need, run_cli
from tests.explorer_recount import Game, read_games
from tests.recount import read_text
from tests.serving import served_in_thread
from tests.test_explorer_games import player_counts

NAME = "Tester"
ALL_SPEEDS = {"ultrabullet", "bullet", "blitz", "rapid", "classical", "correspondence", "otb"}
FIELDS = ("white", "draws", "black", "averageOpponentRating", "performance")


def _retagged(game: str, number: int) -> tuple[str, str]:
    """A real game made one of the player's: their name on one side (in varying case), a date in
    one of twelve months, every fifth as chess.com exports it. Returns (its month, its text)."""
    month = f"2021-{number % 12 + 1:02d}"
    name = (NAME, NAME.lower(), NAME.upper())[number % 3]
    side = "White" if number % 2 == 0 else "Black"
    game = re.sub(rf'\[{side} "[^"]*"\]', f'[{side} "{name}"]', game, count=1)
    date = f"{month.replace('-', '.')}.{number % 28 + 1:02d}"
    game = re.sub(r'\[(UTC)?Date "[^"]*"\]', lambda m: f'[{m[1] or ""}Date "{date}"]', game)
    if number % 5 == 0:
        game = re.sub(r'\[Site "[^"]*"\]', '[Site "Chess.com"]', game, count=1)
        game = re.sub(r'\[Event "[^"]*"\]', '[Event "Live Chess"]', game, count=1)
        game = re.sub(r'\[TimeControl "[^"]*"\]', '[TimeControl "180"]', game, count=1)
        game = game.replace('[Site "Chess.com"]', '[Site "Chess.com"]\n[Link '
                            f'"https://www.chess.com/game/live/{1000 + number}"]')  # fmt: skip
    return month, game


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Game]]:
    """The player's export (one file, their games in the order played) indexed by date, and
    the same games read by python-chess month by month."""
    text = read_text(need(GAMES_2021, "real Lichess games (2021-10 sample)"))
    games = ["[Event " + g.strip() for g in text.split("[Event ")[1:]][:240]
    folder = tmp_path_factory.mktemp("export")
    by_month: dict[str, list[str]] = {}
    retagged = []
    for number, game in enumerate(games):
        month, changed = _retagged(game, number)
        by_month.setdefault(month, []).append(changed)
        retagged.append((month, changed))
    # The export is in date order, as lichess.org and chess.com write one (oldest first).
    retagged.sort(key=lambda pair: pair[0])
    path = folder / "tester.pgn"
    path.write_text("\n\n".join(g for _, g in retagged) + "\n")
    months = {}
    for month in sorted(by_month):
        months[month] = folder / f"{month}.pgn"
        months[month].write_text("\n\n".join(by_month[month]) + "\n")
    warehouse = folder / "warehouse"
    proc = run_cli("explorer", "index", str(path), "--month-by", "date", "--warehouse",
                   str(warehouse), "--min-rating", "0", "--speeds", "all", "--allow-bots",
                   "--quiet")  # fmt: skip
    summary = json.loads(proc.stdout)
    assert [m["month"] for m in summary["months"]] == sorted(months)
    truth = read_games(months, 0, ALL_SPEEDS)
    assert summary["games_kept"] == len(truth) > 200
    return path, warehouse, truth


def player(base: str, **query: str) -> dict[str, Any]:
    url = f"{base}/player?{urllib.parse.urlencode(query)}"
    with urllib.request.urlopen(url) as response:
        lines = response.read().decode().splitlines()
    assert len(lines) == 1
    answer: dict[str, Any] = json.loads(lines[0])
    return answer


@pytest.mark.slow
def test_a_players_own_export_answers_player_by_month(
    export: tuple[Path, Path, list[Game]],
) -> None:
    _, warehouse, truth = export
    for month in {g.month for g in truth}:
        assert explorer_manifest_path(warehouse, month).exists()
    with served_in_thread(open_app(ServeSettings(str(warehouse)))) as base:
        for color in ("white", "black"):
            for since, until in ((None, None), ("2021-03", "2021-08"), ("2021-11", None)):
                chosen = [
                    g for g in truth
                    if (since is None or g.month >= since) and (until is None or g.month <= until)
                ]  # fmt: skip
                mine = [g for g in chosen if getattr(g, color).lower() == NAME.lower()]
                assert mine
                for play in ("", "e2e4"):
                    board = chess.Board()
                    if play:
                        board.push_uci(play)
                    query = {"player": NAME.swapcase(), "color": color, "play": play}
                    query.update({k: v for k, v in (("since", since), ("until", until)) if v})
                    answer = player(base, **query)
                    want = player_counts(chosen, NAME, color, board)
                    got = {m["uci"]: {k: m[k] for k in FIELDS} for m in answer["moves"]}
                    assert got == want, (color, since, until, play)
                whole = player(base, player=NAME, color=color,
                               **({"since": since} if since else {}),
                               **({"until": until} if until else {}))  # fmt: skip
                assert whole["white"] + whole["draws"] + whole["black"] == len(mine)
                # The most recent games are the latest of the export (months, then order).
                recent = sorted(mine, key=lambda g: -g.number)[:8]
                assert [(g["white"]["name"], g["black"]["name"], g["month"])
                        for g in whole["recentGames"]] == [
                    (g.white, g.black, g.month) for g in recent
                ]  # fmt: skip
                # Lichess's games keep their ids; chess.com's get one from their text.
                for shown, game in zip(whole["recentGames"], recent, strict=True):
                    assert shown["id"] == game.id if game.id else len(shown["id"]) == 8


def test_a_failure_before_the_end_publishes_no_month(
    export: tuple[Path, Path, list[Game]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pipelines.explorer.index as index
    from pipelines.explorer.settings import ExplorerSettings
    from pipelines.games.game_filter import GameFilter
    from schemas.speed import Speed

    path, _, _ = export
    replayed = index._replayed
    calls = []

    def fails_on_the_third_month(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return replayed(*args, **kwargs)

    monkeypatch.setattr(index, "_replayed", fails_on_the_third_month)
    settings = ExplorerSettings(GameFilter(0, frozenset(Speed), allow_bots=True))
    with pytest.raises(OSError, match="No space"):
        index.index_by_date(str(path), tmp_path / "w", settings)
    assert len(calls) == 3
    left = [p for p in (tmp_path / "w").rglob("*") if p.is_file() and ".locks" not in p.parts]
    assert left == []
