"""Ingest on several cores gives exactly the single-process result."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import zstandard
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipelines.errors import CorruptInput
from pipelines.games.frames import Frame, UnitText, frame_index, plan_units, write_framed_zstd
from pipelines.games.game_filter import GameFilter, ScanStats
from pipelines.games.plan import Strategy, plan_read
from pipelines.games.processes import StartMethod
from pipelines.games.scan import game_blocks, split_games
from pipelines.games.workers import WorkerPool
from pipelines.ingest.options import RunPolicy, Runtime, Tuning
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.sources.open import open_source
from pipelines.warehouse.layout import partition_file
from schemas.speed import Speed
from tests.recount import read_text

ANY = GameFilter(1500, frozenset(Speed), allow_bots=True)
EVERY = IngestSettings(ANY)


def framed(tmp_path: Path, text: bytes, frame_size: int) -> Path:
    path = tmp_path / f"framed-{frame_size}.pgn.zst"
    write_framed_zstd(path, text, frame_size=frame_size, level=1)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fork", "forkserver"])
def test_parallel_equals_sequential(
    tmp_path: Path,
    games_2013: Path,
    games_2021: Path,
    start: StartMethod,
) -> None:
    text = (read_text(games_2021) + "\n" + read_text(games_2013)).encode()
    # Small frames so that games straddle frame and unit boundaries everywhere.
    path = framed(tmp_path, text, frame_size=50_000)
    one = ingest(str(path), "2020-01", tmp_path / "one", EVERY, runtime=Runtime(workers=1))
    # Small files are split too.
    two = ingest(
        str(path),
        "2020-01",
        tmp_path / "two",
        EVERY,
        runtime=Runtime(workers=2, start_method=start),
        tuning=Tuning(parallel_min_bytes=0),
    )
    assert one.workers == 1 and two.workers == 2
    for key in ("games_read", "games_kept", "games_dropped", "pgn_bytes", "rows", "source_sha256"):
        assert getattr(one, key) == getattr(two, key), key
    assert one.games_read == 999 + 25611
    tables = [pq.read_table(partition_file(tmp_path / name, "2020-01")) for name in ("one", "two")]
    assert tables[0].to_pylist() == tables[1].to_pylist()  # the first-play ranks too


def test_workers_are_forked_only_from_a_single_thread() -> None:
    import threading

    from pipelines.games.processes import start_method

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert start_method() == "forkserver"
    finally:
        stop.set()
        thread.join()


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@example(frame_size=269, workers=2, huge=0, unit_frames=1, piece_size=1)  # a boundary across parts
@given(
    frame_size=st.integers(200, 20_000),
    workers=st.integers(2, 7),
    huge=st.integers(0, 3),
    unit_frames=st.integers(1, 5),
    piece_size=st.integers(1, 5000),
)
def test_units_own_every_game_once(
    frame_size: int, workers: int, huge: int, unit_frames: int, piece_size: int
) -> None:
    games = [
        f'[Event "g{i}"]\n[Site "{i}"]\n\n1. e4 {{ {"x" * (i * 37 % 900)} }} e5 1-0\n\n'.encode()
        for i in range(60)
    ]
    if huge:
        games.insert(7 * huge, b'[Event "huge"]\n\n1. e4 { ' + b"y" * 30_000 + b" } 1-0\n\n")
    text = b"".join(games)
    cctx = zstandard.ZstdCompressor(level=1)
    blob = io.BytesIO()
    frames: list[Frame] = []
    for start in range(0, len(text), frame_size):
        frame = cctx.compress(text[start : start + frame_size])
        frames.append(Frame(blob.tell(), len(frame)))
        blob.write(frame)
    expected = list(split_games([text], ScanStats(), max_game_bytes=10_000))
    got: list[bytes] = []
    stats = ScanStats()
    own_total = 0
    for unit in plan_units(frames, workers, max_unit_bytes=frame_size * unit_frames // 3):
        default = UnitText(blob, frames, unit, max_game_bytes=10_000)
        owned = b"".join(default)
        pieces = list(UnitText(blob, frames, unit, 10_000, piece_size=piece_size))
        assert b"".join(pieces) == owned
        assert all(0 < len(piece) <= piece_size for piece in pieces)
        own_total += default.own_length
        got.extend(split_games(pieces, stats, max_game_bytes=10_000))
    assert own_total == len(text)
    assert got == expected
    assert stats.dropped["oversized"] == (1 if huge else 0)


def test_frame_index_of_truncated_file(tmp_path: Path, games_2021: Path) -> None:
    path = framed(tmp_path, read_text(games_2021).encode(), frame_size=100_000)
    with open(path, "rb") as handle:
        frames = frame_index(handle, path.stat().st_size)
    assert frames is not None and len(frames) > 5
    cut = tmp_path / "cut.pgn.zst"
    cut.write_bytes(path.read_bytes()[:-1000])
    with pytest.raises(CorruptInput, match="truncated"):
        ingest(
            str(cut),
            "2021-10",
            tmp_path / "wh",
            EVERY,
            runtime=Runtime(workers=2),
            tuning=Tuning(parallel_min_bytes=0),
        )
    assert not partition_file(tmp_path / "wh", "2021-10").exists()


def test_pzstd_output_is_indexed(tmp_path: Path, games_2021: Path) -> None:
    """Files written by the real pzstd are read frame by frame."""
    import shutil
    import subprocess

    from tests.conftest import need_program

    pzstd = need_program("pzstd")
    plain = tmp_path / "g.pgn"
    plain.write_text(read_text(games_2021) * 3)
    subprocess.run(
        [pzstd, "-q", "-p", "2", "-3", str(plain), "-o", str(tmp_path / "g.pgn.zst")], check=True
    )
    with open(tmp_path / "g.pgn.zst", "rb") as handle:
        frames = frame_index(handle, (tmp_path / "g.pgn.zst").stat().st_size)
    assert frames is not None
    one = ingest(
        str(tmp_path / "g.pgn.zst"), "2021-10", tmp_path / "a", EVERY, runtime=Runtime(workers=1)
    )
    two = ingest(
        str(tmp_path / "g.pgn.zst"), "2021-10", tmp_path / "b", EVERY, runtime=Runtime(workers=2)
    )
    assert one.games_read == two.games_read == 3 * 999
    assert one.rows == two.rows
    assert shutil.which("zstd") is not None


def test_crlf_files_are_read_in_order(tmp_path: Path, games_2021: Path) -> None:
    text = read_text(games_2021).replace("\n", "\r\n").encode()
    path = framed(tmp_path, text, frame_size=100_000)
    with open_source(str(path), "standard") as opened:
        plan = plan_read(opened, workers=2, executor=None, keep_partial=False, parallel_min_bytes=0)
    assert plan.strategy is Strategy.BLOCKS  # read in order here, counted by the workers
    crlf = ingest(
        str(path),
        "2021-10",
        tmp_path / "crlf",
        EVERY,
        runtime=Runtime(workers=2),
        tuning=Tuning(parallel_min_bytes=0),
    )
    plain = ingest(
        str(games_2021), "2021-10", tmp_path / "plain", EVERY, runtime=Runtime(workers=1)
    )
    assert crlf.games_read == plain.games_read == 999
    assert crlf.rows == plain.rows


@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=40),
    chunk=st.integers(1, 4000),
    unit_bytes=st.integers(1, 5000),
    comment=st.booleans(),
)
def test_units_of_blocks_hold_every_game_once_whole(
    sizes: list[int], chunk: int, unit_bytes: int, comment: bool
) -> None:
    from pipelines.games.parallel import block_units

    # Games of many lengths, some with a blank line before "[" inside a comment (not a game).
    inside = "\n\n[not a game]" if comment else ""
    text = "".join(
        f'[Event "g{i}"]\n\n1. e4 {{ {"x" * size}{inside} }} e5 1-0\n\n'
        for i, size in enumerate(sizes)
    ).encode()
    chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    blocks = list(game_blocks(iter(chunks), ScanStats(), max_game_bytes=1 << 20))
    units = list(block_units(iter(blocks), unit_bytes))
    pieces = [piece for unit in units for piece in unit]
    assert b"".join(pieces) == b"".join(blocks)  # nothing lost, nothing twice, in order
    assert all(piece.startswith(b"\n\n[") for piece in pieces)  # each starts a game
    want = list(split_games(chunks, ScanStats(), max_game_bytes=1 << 20))
    got = [game for unit in units for game in split_games(unit, ScanStats())]
    assert got == want and len(got) == len(sizes)
    for unit in units:
        size = sum(map(len, unit))
        # A unit is over the size only when it holds one game, longer than a unit.
        assert size <= unit_bytes or len(b"".join(unit).split(b"\n\n[")) == 2


def test_blocks_read_here_are_counted_alike_by_workers(
    tmp_path: Path, games_2013: Path, odd_cases: Path
) -> None:
    # One zstd frame: read in order here; its blocks of games go to the workers in many units.
    illegal = (
        '[Event "x"]\n[Result "1-0"]\n[WhiteElo "2500"]\n[BlackElo "2500"]\n'
        '[TimeControl "300+0"]\n\n'
        "1. e4 e5 2. Ke3 Nc6 1-0\n\n"
    )
    text = (read_text(games_2013) + "\n\n" + illegal + odd_cases.read_text() + illegal).encode()
    path = tmp_path / "one-frame.pgn.zst"
    path.write_bytes(zstandard.ZstdCompressor(level=1).compress(text))
    with open_source(str(path), "standard") as opened:
        plan = plan_read(opened, workers=2, executor=None, keep_partial=False)
    assert plan.strategy is Strategy.BLOCKS and len(text) > 16 * plan.unit_bytes
    one = ingest(str(path), "2020-01", tmp_path / "one", EVERY, runtime=Runtime(workers=1))
    two = ingest(str(path), "2020-01", tmp_path / "two", EVERY, runtime=Runtime(workers=2))
    assert one.workers == 1 and two.workers == 2
    for key in ("games_read", "games_kept", "games_dropped", "pgn_bytes", "rows", "source_sha256"):
        assert getattr(one, key) == getattr(two, key), key
    assert one.games_read == 25611 + 95 + 2 and one.games_dropped["illegal_move"] == 2
    files = [partition_file(tmp_path / name, "2020-01").read_bytes() for name in ("one", "two")]
    assert files[0] == files[1]


def test_units_of_blocks_are_sized_for_balance_and_bounded_memory() -> None:
    from pipelines.games.plan import (
        BLOCK_UNITS_PER_WORKER,
        MAX_BLOCK_UNIT_BYTES,
        MAX_BLOCKS_IN_FLIGHT_BYTES,
        MIN_BLOCK_UNIT_BYTES,
        block_unit_bytes,
    )

    for workers in (2, 3, 8, 64, 1000):
        for size in (None, 0, 1, 10_000, 5 << 20, 300 << 20, 30 << 30):
            unit = block_unit_bytes(size, workers)
            assert MIN_BLOCK_UNIT_BYTES <= unit <= MAX_BLOCK_UNIT_BYTES
            in_flight = unit * workers * BLOCK_UNITS_PER_WORKER
            assert in_flight <= MAX_BLOCKS_IN_FLIGHT_BYTES or unit == MIN_BLOCK_UNIT_BYTES
    # The real samples (5 MB compressed, 22 MB of text) make dozens of units for two workers.
    assert 22e6 / block_unit_bytes(5 << 20, 2) > 16
    assert block_unit_bytes(30 << 30, 2) == MAX_BLOCK_UNIT_BYTES  # a month
    assert block_unit_bytes(None, 16) == MAX_BLOCKS_IN_FLIGHT_BYTES // 32  # stdin, many cores


class _Starting(WorkerPool):
    """A pool whose workers seem to start late: never ready, or ready every other time asked."""

    def __init__(self, when: str) -> None:
        super().__init__(2)
        self.when = when
        self.asked = 0

    @property
    def ready(self) -> bool:
        self.asked += 1
        return self.when == "always" or (self.when == "every other time" and self.asked % 2 == 0)


@pytest.mark.slow
@pytest.mark.parametrize("when", ["never", "every other time", "always"])
def test_games_scanned_here_while_workers_start_are_counted_alike(
    tmp_path: Path, games_2021: Path, odd_cases: Path, when: str
) -> None:
    # Units scanned here (the workers not ready) send their kept games; the others their text.
    illegal = (
        '[Event "x"]\n[Result "1-0"]\n[WhiteElo "2500"]\n[BlackElo "2500"]\n'
        '[TimeControl "300+0"]\n\n1. e4 e5 2. Ke3 Nc6 1-0\n\n'
    )
    text = read_text(games_2021) + "\n\n" + illegal + odd_cases.read_text() + illegal
    path = tmp_path / "one-frame.pgn.zst"
    path.write_bytes(zstandard.ZstdCompressor(level=1).compress(text.encode()))
    want = ingest(
        str(path),
        "2020-01",
        tmp_path / "one",
        EVERY,
        policy=RunPolicy(write_kept=tmp_path / "one.pgn"),
        runtime=Runtime(workers=1),
    )
    pool = _Starting(when)
    got = ingest(
        str(path),
        "2020-01",
        tmp_path / "two",
        EVERY,
        policy=RunPolicy(write_kept=tmp_path / "two.pgn"),
        runtime=Runtime(workers=2, pool=pool),
    )
    assert pool.asked > 8  # (many units)
    for key in ("games_read", "games_kept", "games_dropped", "pgn_bytes", "rows", "source_sha256"):
        assert getattr(want, key) == getattr(got, key), key
    assert want.games_dropped["illegal_move"] == 2
    files = [partition_file(tmp_path / name, "2020-01").read_bytes() for name in ("one", "two")]
    assert files[0] == files[1]
    assert (tmp_path / "one.pgn").read_bytes() == (tmp_path / "two.pgn").read_bytes()
