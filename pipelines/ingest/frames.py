"""The frame layout of the Lichess dumps: zstd frames, each announced by a skippable frame.

`pzstd` writes a skippable frame (magic 0x184D2A50, payload size 4) whose payload is the
compressed size of the data frame that follows. A frame index therefore costs a few reads.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

from pipelines.errors import CorruptInput
from pipelines.ingest.decompress import SKIPPABLE_MAGIC_LOW
from schemas.atomic_files import atomic_path


@dataclass(frozen=True)
class Frame:
    """A zstd data frame in a file: where it starts and how many compressed bytes it has."""

    offset: int
    size: int


def write_framed_zstd(path: Path, data: bytes, frame_size: int = 1 << 20, level: int = 19) -> None:
    """Write data as independent zstd frames, each announced by a skippable size frame."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        writer = FramedWriter(handle, frame_size=frame_size, level=level)
        writer.write(data)
        writer.flush()


class FramedWriter:
    """Writes text to a binary file as pzstd-style frames of `frame_size` bytes of text.

    What is written is held until a frame is full; `flush` writes the rest as a last frame.
    """

    def __init__(self, handle: BinaryIO, *, frame_size: int = 1 << 20, level: int = 19) -> None:
        self._handle = handle
        self._frame_size = frame_size
        self._cctx = zstandard.ZstdCompressor(level=level)
        self._pending = bytearray()

    def write(self, data: bytes) -> None:
        """Add text; write each frame it fills."""
        self._pending += data
        if len(self._pending) >= self._frame_size:
            whole = len(self._pending) - len(self._pending) % self._frame_size
            view = memoryview(self._pending)
            for start in range(0, whole, self._frame_size):
                self._frame(view[start : start + self._frame_size])
            view.release()
            del self._pending[:whole]

    def flush(self) -> None:
        """Write the text held as a last (shorter) frame."""
        if self._pending:
            self._frame(memoryview(self._pending))
            self._pending = bytearray()

    def _frame(self, text: memoryview) -> None:
        frame = self._cctx.compress(text)
        self._handle.write(struct.pack("<III", SKIPPABLE_MAGIC_LOW, 4, len(frame)))
        self._handle.write(frame)


def frame_index(handle: BinaryIO, size: int) -> list[Frame] | None:
    """Return the data frames of a pzstd-style file, or None if frames are not announced."""
    frames: list[Frame] = []
    position = 0
    while position < size:
        handle.seek(position)
        head = handle.read(12)
        if len(head) < 12:
            raise CorruptInput(f"truncated zstd stream: {len(head)} stray bytes at byte {position}")
        magic, length, frame_size = struct.unpack("<III", head)
        if magic & 0xFFFFFFF0 != SKIPPABLE_MAGIC_LOW or length != 4:
            return None  # not announced frame by frame: read it as one stream
        start = position + 12
        if start + frame_size > size:
            raise CorruptInput(
                f"truncated zstd stream: the frame at byte {start} needs {frame_size} bytes, "
                f"the file has {size - start}"
            )
        frames.append(Frame(start, frame_size))
        position = start + frame_size
    return frames


def frame_pieces(handle: BinaryIO, frame: Frame, read_size: int = 1 << 14) -> Iterator[bytes]:
    """Yield a data frame's decompressed bytes as they come, failing if cut short or corrupt."""
    handle.seek(frame.offset)
    decompressor = zstandard.ZstdDecompressor().decompressobj()
    left = frame.size
    while left > 0:
        data = handle.read(min(left, read_size))
        if not data:
            raise CorruptInput(
                f"truncated zstd stream: the frame at byte {frame.offset} is cut short"
            )
        left -= len(data)
        try:
            out = decompressor.decompress(data)
        except zstandard.ZstdError as exc:
            raise CorruptInput(f"corrupt zstd frame at byte {frame.offset}: {exc}") from None
        if out:
            yield out
    if not decompressor.eof or decompressor.unused_data:
        raise CorruptInput(
            f"corrupt zstd frame at byte {frame.offset}: size does not match its index"
        )


def plan_units(frames: list[Frame], workers: int, max_unit_bytes: int = 8 << 20) -> list[range]:
    """Split frames into contiguous ranges of similar compressed size: units of parallel work."""
    if not frames:
        return []
    total = sum(frame.size for frame in frames)
    target = max(1, min(max_unit_bytes, total // (workers * 16) or 1))
    units: list[range] = []
    start = 0
    size = 0
    for index, frame in enumerate(frames):
        size += frame.size
        if size >= target:
            units.append(range(start, index + 1))
            start, size = index + 1, 0
    if start < len(frames):
        units.append(range(start, len(frames)))
    return units


BOUNDARY = b"\n\n["


def unit_pieces(
    handle: BinaryIO,
    frames: list[Frame],
    unit: range,
    max_game_bytes: int,
    piece_size: int = 256 << 10,
) -> tuple[list[bytes], int]:
    """Return the text of the games a unit owns in pieces, and the length of its own text.

    A game belongs to the unit holding the first byte of the blank line before it (the first game
    of the file to the first unit). The owner reads on into the next frames to finish its last game,
    at most `max_game_bytes` past its end. The text is cut into pieces of about `piece_size`
    bytes without ever being joined whole.
    """
    # Decompressed a little at a time: each part is a fresh piece of about `piece_size`, never
    # a whole frame joined and cut again (that copying cost more than the decompression).
    feed = max(1, piece_size // 4)  # PGN compresses about fourfold
    parts = [part for i in unit for part in frame_pieces(handle, frames[i], feed)]
    own_length = sum(map(len, parts))
    # Read on only as far as the next game that starts in the following unit.
    read_on = 0
    window = _tail(parts)
    for piece in _pieces_after(handle, frames, unit.stop):
        joined = window + piece
        window_start = own_length + read_on - len(window)
        found = joined.find(BOUNDARY, own_length - window_start)
        parts.append(piece)
        read_on += len(piece)
        if found >= 0 or read_on > max_game_bytes + 3:
            break
        window = joined[-2:]
    total = own_length + read_on
    end = _find(parts, own_length)
    if end < 0:
        end = total
    start = 0 if unit.start == 0 else _find(parts, 0)
    if start < 0 or start >= own_length:
        return [], own_length
    pieces: list[bytes] = []
    offset = 0
    for part in parts:
        low, high = max(start, offset), min(end, offset + len(part))
        for cut in range(low, high, piece_size):
            pieces.append(part[cut - offset : min(high, cut + piece_size) - offset])
        offset += len(part)
    return pieces, own_length


def _tail(parts: list[bytes]) -> bytes:
    """Return the last two bytes of the parts' text."""
    tail = b""
    for part in reversed(parts):
        tail = part[-2:] + tail
        if len(tail) >= 2:
            return tail[-2:]
    return tail


def _find(parts: list[bytes], start_at: int) -> int:
    """Return the offset of the first game boundary at or after `start_at` in the parts' text."""
    offset = 0
    carry = b""  # the last bytes before this part, for a boundary across parts
    for part in parts:
        if carry:
            window = carry + part[:2]
            found = window.find(BOUNDARY, max(0, start_at - (offset - len(carry))))
            if 0 <= found < len(carry):
                return offset - len(carry) + found
        found = part.find(BOUNDARY, max(0, start_at - offset))
        if found >= 0:
            return offset + found
        carry = (carry + part[-2:])[-2:]  # not carry + part: that copies the whole part
        offset += len(part)
    return -1


def _pieces_after(handle: BinaryIO, frames: list[Frame], first: int) -> Iterator[bytes]:
    """Yield the decompressed text from frame `first` on, a little at a time."""
    for frame in frames[first:]:
        yield from frame_pieces(handle, frame)
