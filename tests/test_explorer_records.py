"""What the explorer's index keeps of a game and where: records read by the compiled tag reader
as the regular-expression reader reads them, and positions.parquet published only for months
whose moves are kept (a 50-ply month's positions live in its lookup file)."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from pipelines.explorer.game_record import GameRecord, read_record, read_records
from pipelines.explorer.index import index_month
from pipelines.explorer.layout import (
    explorer_manifest_path,
    lookup_file,
    positions_file,
)
from pipelines.explorer.manifest import ExplorerManifest
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter
from pipelines.warehouse.check import check_warehouse
from schemas.speed import Speed
from tests.recount import read_text

#: Headers a reader could take differently: escapes, bytes that are not UTF-8, a tag twice,
#: tags on one line, a value running into the next line, no header at all.
ODD_HEADERS = [
    b'[Event "a \\"b\\\\c"]\n[Site "x"]\n[White "\xe2\\"\x82\xac"]\n\n1. e4',
    b'[Event "Casual arena"]\n[Event "second"]\n[WhiteElo "99999"]\n[BlackElo "12a"]\n[Round ""]\n',
    b"",
    b'[White "x"] [Black "y"]',
    b'[White "unterminated\n[Black "ok"]\n\n[White "after the header"]',
    b'[Foo "x\\\n"]\n[White "a"]',
    b'Site "https://lichess.org/abcdefgh"]',
    b'[White"x"]\n[ White "y"]\n[WhiteTitle ""]\n',
    b'[Site "https://lichess.org/abcdefgh1"]\n[Date "2020.01.02"]\n[WhiteElo "'
    + "２０００".encode()
    + b'"]',
]


def sample_games(path: Path) -> list[bytes]:
    text = read_text(path)
    return [part.encode() for part in text.split("\n\n[Event ")]


def test_records_read_in_batches_equal_those_read_one_by_one(games_2021: Path) -> None:
    games = sample_games(games_2021)[:3000]
    rng = random.Random(7)
    mangled = []
    for _ in range(3000):
        game = bytearray(rng.choice(games)[:500])
        for _ in range(rng.randint(1, 6)):
            game[rng.randrange(len(game))] = rng.choice(b'"\\\n[] \xe2\x82\xac')
        mangled.append(bytes(game))
    texts = games + ODD_HEADERS + mangled
    columns = read_records(texts)
    assert [GameRecord(*row) for row in zip(*columns, strict=True)] == [
        read_record(text) for text in texts
    ]


def test_positions_are_published_only_for_months_whose_moves_are_kept(
    tmp_path: Path, games_2021: Path
) -> None:
    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    warehouse = tmp_path / "wh"
    whole = index_month(str(games_2021), "2021-10", warehouse, ExplorerSettings(rules, plies=None))
    assert whole.positions_published and whole.positions_bytes > 0
    assert pq.read_metadata(positions_file(warehouse, "2021-10")).num_rows == whole.positions
    # The same month indexed again at 50 plies: the earlier positions.parquet goes with it.
    fifty = index_month(str(games_2021), "2021-10", warehouse, ExplorerSettings(rules))
    assert not fifty.positions_published and fifty.positions_sha256 is None
    assert not positions_file(warehouse, "2021-10").exists()
    assert ExplorerManifest.read(explorer_manifest_path(warehouse, "2021-10")) == fifty
    con = duckdb.connect(str(lookup_file(warehouse, "2021-10")), read_only=True)
    assert con.sql("SELECT count(*) FROM positions").fetchall() == [(fifty.positions,)]
    con.close()
    assert check_warehouse(warehouse) == []
