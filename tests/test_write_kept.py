"""`ingest --write-kept`: the games kept, as the source has them, against python-chess's reading."""

from __future__ import annotations

import io
import json
from pathlib import Path

import chess
import chess.pgn
import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.games.frames import write_framed_zstd
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import RunPolicy, Runtime, Tuning
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import partition_file
from schemas.speed import Speed
from tests.conftest import GAMES_2021, need, run_cli
from tests.recount import keeps, read_text

RULES = GameFilter(1800, frozenset({Speed.BLITZ, Speed.RAPID, Speed.CLASSICAL}))
SETTINGS = IngestSettings(RULES, plies=12)

#: Games the header filter keeps that counting must drop, or keep (an illegal move late).
ODD_GAMES = """[Event "Illegal early"]
[WhiteElo "2500"]
[BlackElo "2500"]
[TimeControl "300+0"]
[Result "1-0"]

1. e4 e5 2. Ke3 Nc6 1-0

[Event "No moves"]
[WhiteElo "2500"]
[BlackElo "2500"]
[TimeControl "300+0"]
[Result "0-1"]

0-1

[Event "Illegal after the plies counted"]
[WhiteElo "2500"]
[BlackElo "2500"]
[TimeControl "300+0"]
[Result "1/2-1/2"]

1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 5. Nf3 Nf6 6. Ng1 Ng8 7. Ke3 1/2-1/2
"""


def games_as_text(text: str) -> list[tuple[str, chess.pgn.Headers]]:
    """Return each game's text, from python-chess's own game starts, with its headers."""
    stream = io.StringIO(text)
    starts: list[int] = []
    headers: list[chess.pgn.Headers] = []
    while True:
        start = stream.tell()
        found = chess.pgn.read_headers(stream)
        if found is None:
            break
        starts.append(start)
        headers.append(found)
    starts.append(len(text))
    return [(text[a:b].strip(), h) for a, b, h in zip(starts, starts[1:], headers, strict=False)]


def expected_kept(text: str, plies: int) -> list[str]:
    """The games a python-chess reader keeps: the filter (tests/recount.py), then moves.

    A game counts when it has a move and its first `plies` plies are legal.
    """
    speeds = {speed.value for speed in RULES.speeds}
    kept = []
    for game_text, headers in games_as_text(text):
        if not keeps(headers, RULES.min_rating, speeds, RULES.allow_bots):
            continue
        game = chess.pgn.read_game(io.StringIO(game_text))
        assert game is not None
        moves = list(game.mainline_moves())
        if moves and (not game.errors or len(moves) >= plies):
            kept.append(game_text)
    return kept


@pytest.fixture(scope="module")
def source() -> tuple[str, list[str]]:
    """The 2021 sample with odd games in its middle, and the games python-chess keeps of it."""
    sample = read_text(need(GAMES_2021, "real Lichess games (2021-10 sample)"))
    # In the middle: the units of frames split around them.
    middle = sample.index("\n\n[Event", len(sample) // 2) + 2
    text = sample[:middle] + ODD_GAMES + "\n" + sample[middle:]
    return text, expected_kept(text, SETTINGS.plies)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["in process", "blocks", "units"])
def test_written_games_are_the_games_kept(
    tmp_path: Path, source: tuple[str, list[str]], strategy: str
) -> None:
    source_text, expected = source
    if strategy == "units":
        path = tmp_path / "source.pgn.zst"
        write_framed_zstd(path, source_text.encode(), frame_size=40_000, level=1)
    else:
        path = tmp_path / "source.pgn"
        path.write_bytes(source_text.encode())
    workers = 1 if strategy == "in process" else 2
    kept_file = tmp_path / "kept.pgn.zst"
    manifest = ingest(
        str(path),
        "2021-10",
        tmp_path / "wh",
        SETTINGS,
        policy=RunPolicy(write_kept=kept_file),
        runtime=Runtime(workers=workers),
        tuning=Tuning(parallel_min_bytes=0),
    )
    assert manifest.workers == (1 if strategy == "in process" else 2)
    assert {"illegal_move", "no_moves"} <= set(manifest.games_dropped)

    assert manifest.games_kept == len(expected) > 100
    # Byte for byte: each game as python-chess found it, then one blank line.
    assert read_text(kept_file) == "".join(game + "\n\n" for game in expected)

    # The file ingested again with the same filter keeps every game, with the same statistics.
    again = ingest(
        str(kept_file), "2021-10", tmp_path / "again", SETTINGS, runtime=Runtime(workers=1)
    )
    assert again.games_read == again.games_kept == manifest.games_kept
    tables = [pq.read_table(partition_file(tmp_path / name, "2021-10")) for name in ("wh", "again")]
    counts = [t.drop_columns(["first_play"]).to_pylist() for t in tables]
    assert counts[0] == counts[1]
    # The first-play ranks are places in the source, where games the filter passed but ingest
    # dropped (an illegal move, no moves) took places too: the same order, other numbers.
    ranks = [t.column("first_play").to_pylist() for t in tables]
    keys = tables[0].column("key").to_pylist()
    for key in set(keys):
        rows = [i for i, k in enumerate(keys) if k == key]
        assert sorted(rows, key=lambda i: ranks[0][i]) == sorted(rows, key=lambda i: ranks[1][i])


def test_crlf_games_are_written_with_crlf(tmp_path: Path, source: tuple[str, list[str]]) -> None:
    source_text, expected = source
    path = tmp_path / "crlf.pgn"
    path.write_bytes(source_text.replace("\n", "\r\n").encode())
    kept_file = tmp_path / "kept.pgn"  # not .zst: plain text
    manifest = ingest(
        str(path),
        "2021-10",
        tmp_path / "wh",
        SETTINGS,
        policy=RunPolicy(write_kept=kept_file),
        runtime=Runtime(workers=1),
    )
    assert manifest.games_kept == len(expected)
    assert (
        kept_file.read_bytes()
        == "".join(g + "\n\n" for g in expected).replace("\n", "\r\n").encode()
    )


@pytest.mark.slow
def test_cli_writes_kept_games_only_when_the_month_is_published(
    tmp_path: Path, games_2021: Path
) -> None:
    kept_file = tmp_path / "out" / "kept.pgn.zst"
    args = ["ingest", str(games_2021), "--month", "2021-10", "--warehouse", str(tmp_path / "wh")]
    summary = json.loads(run_cli(*args, "--write-kept", str(kept_file), "--quiet").stdout)
    text = zstandard.ZstdDecompressor().stream_reader(kept_file.open("rb")).read().decode()
    assert len(games_as_text(text)) == summary["games_kept"] > 0
    # A run refused (it would shrink the month) leaves no kept games file behind.
    empty = tmp_path / "empty.pgn"
    empty.write_text("")
    refused = tmp_path / "refused.pgn.zst"
    proc = run_cli(
        "ingest", str(empty), "--month", "2021-10", "--warehouse", str(tmp_path / "wh"),
        "--write-kept", str(refused), check=False,
    )  # fmt: skip
    assert proc.returncode != 0 and not refused.exists()
    assert list(tmp_path.glob("**/.*.tmp")) == []
    # The source is never its own kept games file.
    source = tmp_path / "source.pgn.zst"
    source.write_bytes(games_2021.read_bytes())
    args = ["ingest", str(source), "--month", "2021-11", "--warehouse", str(tmp_path / "wh")]
    same = run_cli(*args, "--write-kept", str(source), check=False)
    assert same.returncode == 1 and "an output never replaces what the command reads" in (
        same.stderr
    )
    assert source.read_bytes() == games_2021.read_bytes()
