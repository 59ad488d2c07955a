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
from pipelines.games.decompress import SKIPPABLE_MAGIC_LOW, BlockCuts
from pipelines.games.scan import BOUNDARY
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
    cuts = BlockCuts()  # a bomb's few bytes make at most a few MB at a time
    left = frame.size
    while left > 0:
        data = handle.read(min(left, read_size))
        if not data:
            raise CorruptInput(
                f"truncated zstd stream: the frame at byte {frame.offset} is cut short"
            )
        left -= len(data)
        for piece in cuts.pieces(memoryview(data)):
            try:
                out = decompressor.decompress(piece)
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


def unit_name(index: int) -> str:
    """Return the stem of the files of unit `index` (run files, kept text, a worker's results):
    its place in source order, as unit-0000042."""
    return f"unit-{index:07d}"


class UnitText:
    """The text of the games a unit owns, read a piece at a time: iterate once.

    A game belongs to the unit holding the first byte of the blank line before it (the first game
    of the file to the first unit). The owner reads on into the next frames to finish its last game,
    at most `max_game_bytes` past its end. The text comes in pieces of at most `piece_size` bytes
    and is never held whole: memory stays bounded whatever a frame decompresses to. Once
    iterated, `own_length` is the length of the unit's own frames' text.
    """

    def __init__(
        self,
        handle: BinaryIO,
        frames: list[Frame],
        unit: range,
        max_game_bytes: int,
        *,
        piece_size: int = 256 << 10,
    ) -> None:
        self.handle = handle
        self.frames = frames
        self.unit = unit
        self.max_game_bytes = max_game_bytes
        self.piece_size = piece_size
        self.own_length = 0

    def __iter__(self) -> Iterator[bytes]:
        start = 0 if self.unit.start == 0 else -1  # where the unit's first game starts
        position = 0  # the text's offset of the part at hand
        carry = b""  # the text's last two bytes before that part
        size = self.piece_size
        for part in self._own_parts():
            base, position = position, position + len(part)
            if start < 0:
                start = _find_in(carry, part, base, 0)
                if 0 <= start < base:  # the boundary began in the carry
                    yield from _slices(carry, base - len(carry), start, base, size)
            if start >= 0:
                yield from _slices(part, base, start, position, size)
            carry = (carry + part[-2:])[-2:]  # not carry + part: that copies the whole part
        own = self.own_length = position
        # Read on only as far as the next game that starts in the following unit (a boundary
        # whose first byte is this unit's starts its game): at most max_game_bytes, held here.
        text = [carry] if carry else []  # from offset own - len(carry)
        window = carry
        for part in _pieces_after(self.handle, self.frames, self.unit.stop):
            base, position = position, position + len(part)
            text.append(part)
            if _find_in(window, part, base, own) >= 0 or position - own > self.max_game_bytes + 3:
                break
            window = (window + part[-2:])[-2:]
        first = own - len(carry)
        if start < 0:
            found = _find(text, 0)
            if found < 0 or first + found >= own:
                return
            start = first + found
        else:
            start = own  # (the text before was given)
        found = _find(text, len(carry))
        end = first + found if found >= 0 else position
        offset = first
        for part in text:
            yield from _slices(part, offset, start, min(end, offset + len(part)), size)
            offset += len(part)

    def _own_parts(self) -> Iterator[bytes]:
        # Decompressed a little at a time: each part is a fresh piece of about `piece_size`, never
        # a whole frame joined and cut again (that copying cost more than the decompression).
        feed = max(1, self.piece_size // 4)  # PGN compresses about fourfold
        for index in self.unit:
            yield from frame_pieces(self.handle, self.frames[index], feed)


def _find_in(carry: bytes, part: bytes, base: int, low: int) -> int:
    """Return the text offset of the first game boundary at or after `low`, or -1.

    `part` is the text from offset `base`, `carry` the bytes just before it.
    """
    first = base - len(carry)
    window = carry + part[:2]
    found = window.find(BOUNDARY, max(0, low - first))
    if 0 <= found < len(carry):
        return first + found
    found = part.find(BOUNDARY, max(0, low - base))
    return base + found if found >= 0 else -1


def _slices(part: bytes, base: int, start: int, stop: int, size: int) -> Iterator[bytes]:
    """Yield the text of `part` (from offset `base`) from `start` to `stop`, `size` at a time."""
    for cut in range(max(0, start - base), max(0, stop - base), size):
        yield part[cut : min(stop - base, cut + size)]


def _find(parts: list[bytes], start_at: int) -> int:
    """Return the offset of the first game boundary at or after `start_at` in the parts' text."""
    offset = 0
    carry = b""  # the last bytes before this part, for a boundary across parts
    for part in parts:
        found = _find_in(carry, part, offset, start_at)
        if found >= 0:
            return found
        carry = (carry + part[-2:])[-2:]
        offset += len(part)
    return -1


def _pieces_after(handle: BinaryIO, frames: list[Frame], first: int) -> Iterator[bytes]:
    """Yield the decompressed text from frame `first` on, a little at a time."""
    for frame in frames[first:]:
        yield from frame_pieces(handle, frame)
