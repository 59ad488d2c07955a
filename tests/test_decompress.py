"""Decompression's read-ahead: order kept, errors raised where they were, stops with its reader."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipelines.errors import CorruptInput


@pytest.mark.parametrize("depth", [3, 0])  # 0: no thread, each chunk made when asked for
def test_read_ahead_keeps_order_and_raises_where_the_error_was(depth: int) -> None:
    from pipelines.ingest.decompress import ReadAhead

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

    from pipelines.ingest.decompress import ReadAhead

    endless = iter(lambda: b"x" * 1000, None)
    reader = iter(ReadAhead(endless, depth=2))
    assert next(reader) == b"x" * 1000
    reader.close()  # joins the producer: it must notice and stop
    assert not any(t.name == "chesspipe-read-ahead" for t in threading.enumerate())
