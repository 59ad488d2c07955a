"""Decompressed chunks of a PGN stream: plain text or zstd (any number of frames)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

import zstandard

from pipelines.errors import CorruptInput
from pipelines.sources.open import Readable

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: Skippable frames use magic numbers 0x184D2A50..0x184D2A5F (little-endian on disk).
SKIPPABLE_MAGIC_LOW = 0x184D2A50

_FEED = 1 << 16


def is_zstd(head: bytes) -> bool:
    """Tell whether bytes start a zstd stream (a data frame or a skippable frame)."""
    if head[:4] == ZSTD_MAGIC:
        return True
    return (
        len(head) >= 4 and (int.from_bytes(head[:4], "little") & 0xFFFFFFF0) == SKIPPABLE_MAGIC_LOW
    )


def zstd_chunks(stream: Readable, read_size: int = 1 << 20) -> Iterator[bytes]:
    """Yield the decompressed bytes of a zstd stream, failing on a truncated or corrupt one.

    Frames are walked here, one decompressobj each, rather than with zstandard's
    `read_across_frames=True`: across frames, zstandard (0.25) never reports where a frame
    ends (`decompressobj().eof` stays False) and `stream_reader` ends quietly in the middle of
    a cut frame, so a truncated dump would pass as a shorter complete one.
    """
    dctx = zstandard.ZstdDecompressor()
    frame = dctx.decompressobj()
    frame_started = False
    offset = 0
    while block := stream.read(read_size):
        view = memoryview(block)
        while view:
            piece = view[:_FEED]
            view = view[_FEED:]
            while piece:
                try:
                    out = frame.decompress(piece)
                except zstandard.ZstdError as exc:
                    raise CorruptInput(
                        f"corrupt zstd data near compressed byte {offset}: {exc}"
                    ) from None
                frame_started = True
                if out:
                    yield out
                if frame.eof:
                    rest = frame.unused_data
                    frame = dctx.decompressobj()
                    frame_started = False
                    consumed = len(piece) - len(rest)
                    offset += consumed
                    piece = memoryview(rest) if rest else memoryview(b"")
                else:
                    offset += len(piece)
                    piece = memoryview(b"")
    if frame_started:
        raise CorruptInput(f"truncated zstd stream: the last frame ends early at byte {offset}")


def decompressed_chunks(stream: Readable, read_size: int = 1 << 20) -> Iterator[bytes]:
    """Yield the PGN bytes of a stream, decompressing zstd when the stream starts with it."""
    head = stream.read(4)
    if not head:
        return
    rest = _Prepend(head, stream)
    if len(head) < 4 and (ZSTD_MAGIC.startswith(head) or (len(head) >= 2 and head[1:2] == b"\x2a")):
        raise CorruptInput(f"truncated zstd stream: only {len(head)} bytes")
    if is_zstd(head):
        yield from zstd_chunks(rest, read_size)
    else:
        while block := rest.read(read_size):
            yield block


class _Prepend:
    """A reader that returns some bytes already read, then the rest of a stream."""

    def __init__(self, head: bytes, stream: Readable) -> None:
        self._head = head
        self._stream = stream

    def read(self, size: int = -1) -> bytes:
        if self._head:
            head, self._head = self._head, b""
            if size < 0:
                return head + self._stream.read()
            return head + self._stream.read(max(0, size - len(head)))
        return self._stream.read(size)


class ReadAhead:
    """Chunks made by a background thread, at most `depth` ahead of the consumer.

    zstd decompression releases the GIL, so it runs on another core while the consumer scans.
    An error in the thread is raised to the consumer after the chunks that came before it.
    With `depth` 0 there is no thread: each chunk is made when the consumer asks for it.
    `mark` (if given) is sampled as each chunk is made: `self.mark` is its value for the chunk
    the consumer got last, such as how far the source had been read by then.
    """

    def __init__(
        self, chunks: Iterator[bytes], depth: int = 16, mark: Callable[[], int] | None = None
    ) -> None:
        self.chunks = chunks
        self.depth = depth
        self.sample = mark
        self.mark = 0

    def __iter__(self) -> Iterator[bytes]:
        if self.depth == 0:
            for chunk in self.chunks:
                self.mark = self.sample() if self.sample is not None else 0
                yield chunk
            return
        ready: queue.Queue[tuple[bytes, int] | BaseException | None] = queue.Queue(self.depth)
        stop = threading.Event()
        sample = self.sample

        def offer(item: tuple[bytes, int] | BaseException | None) -> bool:
            """Queue an item unless the consumer has gone; return whether it was queued."""
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def produce() -> None:
            try:
                for chunk in self.chunks:
                    if not offer((chunk, sample() if sample is not None else 0)):
                        return
            except BaseException as exc:  # handed to the consumer
                offer(exc)
                return
            offer(None)

        producer = threading.Thread(target=produce, name="chesspipe-read-ahead", daemon=True)
        producer.start()
        try:
            while (item := ready.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                chunk, self.mark = item
                yield chunk
        finally:
            stop.set()
            producer.join()
