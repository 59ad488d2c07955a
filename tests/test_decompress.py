"""Decompression's read-ahead: order kept, errors raised where they were, stops with its reader."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipelines.errors import CorruptInput


@pytest.mark.parametrize("depth", [3, 0])  # 0: no thread, each chunk made when asked for
def test_read_ahead_keeps_order_and_raises_where_the_error_was(depth: int) -> None:
    from pipelines.games.decompress import ReadAhead

    made = 0

    def chunks() -> Iterator[bytes]:
        nonlocal made
        for index in range(100):
            made = index + 1
            yield str(index).encode()
        raise CorruptInput("broken after 100 chunks")

    ahead = ReadAhead(chunks(), depth=depth, mark=lambda: made)
    got = []
    with pytest.raises(CorruptInput, match="after 100"):
        for chunk in ahead:
            got.append(chunk)
            assert ahead.mark == int(chunk) + 1  # the mark of this chunk, not of later ones
    assert got == [str(index).encode() for index in range(100)]


def test_read_ahead_stops_its_thread_when_the_reader_stops() -> None:
    import threading

    from pipelines.games.decompress import ReadAhead

    endless = iter(lambda: b"x" * 1000, None)
    reader = iter(ReadAhead(endless, depth=2))
    assert next(reader) == b"x" * 1000
    reader.close()  # joins the producer: it must notice and stop
    assert not any(t.name == "chesspipe-read-ahead" for t in threading.enumerate())


@pytest.mark.parametrize("read_size", [7, 1000, 1 << 20])
@pytest.mark.parametrize("checksum", [True, False])
def test_decompressor_is_fed_a_bounded_number_of_blocks(read_size: int, checksum: bool) -> None:
    """Each call makes at most BLOCKS_PER_FEED blocks of text (128 KB each), whatever the ratio."""
    import io

    import zstandard

    from pipelines.games.decompress import BLOCKS_PER_FEED, feeds, zstd_chunks

    text = b"\x00" * (20 << 20) + bytes(range(256)) * 5000 + b"\n" * (9 << 20)
    cctx = zstandard.ZstdCompressor(level=3, write_checksum=checksum, write_content_size=checksum)
    # Two frames and a skippable one between them, as pzstd writes.
    skippable = (0x184D2A50).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"abcd"
    data = cctx.compress(text) + skippable + cctx.compress(text[:300_000])
    assert b"".join(feeds(io.BytesIO(data), read_size)) == data
    chunks = list(zstd_chunks(io.BytesIO(data), read_size))
    assert b"".join(chunks) == text + text[:300_000]
    assert max(map(len, chunks)) <= BLOCKS_PER_FEED * (128 << 10)
