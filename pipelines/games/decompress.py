"""Decompressed chunks of a PGN stream: plain text or zstd (any number of frames)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

import zstandard

from pipelines.errors import CorruptInput
from pipelines.sources.open import FileSequence, Readable

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"

#: Skippable frames use magic numbers 0x184D2A50..0x184D2A5F (little-endian on disk).
SKIPPABLE_MAGIC_LOW = 0x184D2A50

_FEED = 1 << 16

#: Most zstd blocks fed to a decompressor in one call. A block decompresses to at most 128 KB
#: however few bytes it takes (a bomb's blocks take 4), so one call makes at most about 4 MB.
BLOCKS_PER_FEED = 32

#: Frame_Content_Size field lengths by its flag (single segment frames: 1 for flag 0).
_FCS_LENGTH = (0, 2, 4, 8)
_DICT_ID_LENGTH = (0, 1, 2, 4)


def is_zstd(head: bytes) -> bool:
    """Tell whether bytes start a zstd stream (a data frame or a skippable frame)."""
    if head[:4] == ZSTD_MAGIC:
        return True
    return (
        len(head) >= 4 and (int.from_bytes(head[:4], "little") & 0xFFFFFFF0) == SKIPPABLE_MAGIC_LOW
    )


class BlockCuts:
    """Cuts a zstd stream into pieces that start at most BLOCKS_PER_FEED blocks each.

    A decompressor fed one piece at a time then makes a bounded amount of text per call,
    whatever the compression ratio (zstandard's decompressobj has no output limit). The frame
    and block headers are read here as the bytes go by; text that is not zstd is left to the
    decompressor to refuse (pieces are then cut at nothing but the input's own size).
    """

    def __init__(self, blocks_per_feed: int = BLOCKS_PER_FEED) -> None:
        self.blocks_per_feed = blocks_per_feed
        self._seen = 0  # stream offset of the next byte to come
        self._next = 0  # stream offset of the next header
        self._head = bytearray()  # that header's bytes so far
        self._state = "frame"  # "frame", "block" or "lost"
        self._checksum = False  # the current frame ends with a 4-byte checksum
        self._blocks = 0  # block headers in the piece being cut

    def pieces(self, data: memoryview) -> Iterator[memoryview]:
        """Yield `data`, the stream's next bytes, in pieces."""
        start = self._seen
        end = start + len(data)
        cut = start
        while self._state != "lost" and self._next < end:
            offset = self._next + len(self._head)
            needed = self._needed()
            take = min(needed - len(self._head), end - offset)
            self._head += data[offset - start : offset - start + take]
            if len(self._head) < needed:
                break  # the header goes on in the next bytes
            if self._needed() > needed:
                continue  # its first bytes tell that it is longer
            header_start = self._next
            if self._state == "block" and self._blocks >= self.blocks_per_feed:
                if header_start > cut:
                    yield data[cut - start : header_start - start]
                    cut = header_start
                self._blocks = 0
            self._parse(header_start)
        self._seen = end
        if cut < end:
            yield data[cut - start :]

    def _needed(self) -> int:
        """Return how many bytes the header at self._next takes (as far as known)."""
        head = self._head
        if self._state == "block":
            return 3
        if len(head) < 4:
            return 4
        if head[:4] == ZSTD_MAGIC:
            if len(head) < 5:
                return 5
            descriptor = head[4]
            single = (descriptor >> 5) & 1
            fcs = _FCS_LENGTH[descriptor >> 6] or single
            return 5 + (1 - single) + _DICT_ID_LENGTH[descriptor & 3] + fcs
        return 8  # a skippable frame: magic and payload size

    def _parse(self, header_start: int) -> None:
        """Read the complete header in self._head; set where the next one starts."""
        head = bytes(self._head)
        self._head.clear()
        if self._state == "block":
            value = int.from_bytes(head, "little")
            kind, size = (value >> 1) & 3, value >> 3
            if kind == 3:  # reserved: the decompressor says what is wrong
                self._state = "lost"
                return
            self._blocks += 1
            self._next = header_start + 3 + (1 if kind == 1 else size)
            if value & 1:  # the frame's last block
                self._next += 4 if self._checksum else 0
                self._state = "frame"
        elif head[:4] == ZSTD_MAGIC:
            self._checksum = bool(head[4] & 4)
            self._next = header_start + len(head)
            self._state = "block"
        elif is_zstd(head):
            self._next = header_start + 8 + int.from_bytes(head[4:8], "little")
        else:
            self._state = "lost"


def feeds(stream: Readable, read_size: int = 1 << 20) -> Iterator[memoryview]:
    """Yield a zstd stream's bytes in pieces to feed a decompressor: each makes at most ~4 MB."""
    cuts = BlockCuts()
    while block := stream.read(read_size):
        for view in cuts.pieces(memoryview(block)):
            for start in range(0, len(view), _FEED):
                yield view[start : start + _FEED]


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
    for piece in feeds(stream, read_size):
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
    """Yield the PGN bytes of a stream, decompressing zstd, gzip, bzip2 or zip when the stream
    starts with it (pipelines.games.containers). A source of many files (a folder, a glob)
    yields each file's text in turn, each as a part of the source (containers.part_text)."""
    files = getattr(stream, "stream", None)
    if isinstance(files, FileSequence):
        from pipelines.games.containers import part_text

        while files.next_file():
            try:
                yield from part_text(_one_stream(stream, read_size))
            except CorruptInput as exc:
                raise CorruptInput(f"{files.name}: {exc}") from None
        return
    yield from _one_stream(stream, read_size)


def _one_stream(stream: Readable, read_size: int) -> Iterator[bytes]:
    """decompressed_chunks of a stream of one file."""
    head = stream.read(4)
    if not head:
        return
    rest = _Prepend(head, stream)
    if len(head) < 4 and (ZSTD_MAGIC.startswith(head) or (len(head) >= 2 and head[1:2] == b"\x2a")):
        raise CorruptInput(f"truncated zstd stream: only {len(head)} bytes")
    if is_zstd(head):
        yield from zstd_chunks(rest, read_size)
        return
    from pipelines.games.containers import container_chunks, container_of

    kind = container_of(head)
    if kind is not None:
        yield from container_chunks(kind, rest, stream, read_size)
        return
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
