"""Fuzzing the byte-level scanner: mangled, truncated, re-chunked and concatenated inputs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.decompress import decompressed_chunks
from pipelines.errors import CorruptInput
from pipelines.pgn_scan import GameFilter, ScanStats, filter_game, split_games
from schemas.move_stats import SPEEDS
from tests.conftest import ODD_CASES

ANY = GameFilter(0, frozenset(SPEEDS), allow_bots=True)


def real_games() -> list[bytes]:
    if not ODD_CASES.exists():
        pytest.skip(f"real games not found at {ODD_CASES}")
    text = ODD_CASES.read_bytes().strip(b"\n")
    return [g.strip(b"\n") + b"\n\n" for g in text.split(b"\n\n[Event ")]


def rechunk(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


def normalised(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n") if b"\r\n" in data[:65536] else data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, 94), min_size=0, max_size=12),
    cuts=st.lists(st.integers(0, 10**7), max_size=30),
)
def test_rechunked_games_come_out_whole_and_once(picks: list[int], cuts: list[int]) -> None:
    games = real_games()
    chosen = [games[i] if games[i].startswith(b"[") else b"[Event " + games[i] for i in picks]
    data = b"".join(chosen)
    stats = ScanStats()
    out = list(split_games(rechunk(data, cuts), stats, max_game_bytes=1 << 20))
    assert [b"[" + g.rstrip(b"\n") for g in out] == [g.rstrip(b"\n") for g in chosen]
    assert stats.pgn_bytes == len(data)


@settings(max_examples=400, deadline=None)
@given(
    data=st.binary(max_size=3000).map(lambda b: b.replace(b"\r", b"")),
    cuts=st.lists(st.integers(0, 5000), max_size=10),
    joins=st.integers(0, 8),
)
def test_arbitrary_bytes_lose_and_duplicate_nothing(
    data: bytes, cuts: list[int], joins: int
) -> None:
    """Whatever the bytes and chunking, the games are exactly the text between boundaries."""
    data = data + b"\n\n[" * (joins % 3) + data[: joins * 50]
    stats = ScanStats()
    pieces = list(split_games(rechunk(data, cuts), stats, max_game_bytes=1 << 20))
    text = data.lstrip(b"\n\r\t \xef\xbb\xbf")
    framed = (b"\n\n" if text.startswith(b"[") else b"\n\n[") + text if text else b""
    expected = [p for p in framed.split(b"\n\n[")[1:] if p and not p.isspace()]
    assert pieces == expected
    kept = sum(filter_game(piece, ANY, stats) is not None for piece in pieces)
    assert stats.games_read == len(pieces)
    assert stats.games_read == kept + sum(stats.dropped.values())


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.integers(0, 94), min_size=1, max_size=6),
    cut=st.floats(0.0, 1.0),
    flip=st.integers(0, 10**6),
    mode=st.sampled_from(["truncate", "flip", "concat"]),
)
def test_mangled_zstd_never_passes_silently(
    picks: list[int], cut: float, flip: int, mode: str
) -> None:
    games = real_games()
    data = b"".join(games[i] for i in picks)
    frame = zstandard.ZstdCompressor(level=1, write_checksum=True).compress(data)
    if mode == "concat":
        blob = frame + frame
        assert b"".join(decompressed_chunks(io.BytesIO(blob))) == data + data
        return
    if mode == "truncate":
        blob = frame[: int(len(frame) * cut)]
        if len(blob) in (0, len(frame)):
            return
    else:
        position = 4 + flip % (len(frame) - 4)
        blob = frame[:position] + bytes([frame[position] ^ 0x5A]) + frame[position + 1 :]
    try:
        out = b"".join(decompressed_chunks(io.BytesIO(blob)))
    except CorruptInput:
        return
    assert (
        mode == "flip" and out == data
    )  # a truncated frame must raise; a flip must raise or not matter


def test_real_file_through_many_chunk_sizes(games_2021: Path) -> None:
    reference = None
    for size in (1, 7, 4096, 1 << 20):
        stats = ScanStats()
        chunks = decompressed_chunks(io.BytesIO(games_2021.read_bytes()), read_size=max(size, 64))
        rechunked = (c[i : i + size] for c in chunks for i in range(0, len(c), size))
        games = list(split_games(rechunked, stats))
        if reference is None:
            reference = games
        assert games == reference
    assert reference is not None and len(reference) == 999
