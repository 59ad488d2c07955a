"""The frame layout of the Lichess dumps: zstd frames, each announced by a skippable frame.

`pzstd` writes a skippable frame (magic 0x184D2A50, payload size 4) whose payload is the
compressed size of the data frame that follows. A frame index therefore costs a few reads.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

from pipelines.decompress import SKIPPABLE_MAGIC_LOW
from pipelines.errors import CorruptInput


@dataclass(frozen=True)
class Frame:
    """A zstd data frame in a file: where it starts and how many compressed bytes it has."""

    offset: int
    size: int


def write_framed_zstd(path: Path, data: bytes, frame_size: int = 1 << 20, level: int = 19) -> None:
    """Write data as independent zstd frames, each announced by a skippable size frame."""
    cctx = zstandard.ZstdCompressor(level=level)
    tmp = Path(path).with_name(f".{Path(path).name}.tmp")
    with open(tmp, "wb") as handle:
        for start in range(0, len(data), frame_size):
            frame = cctx.compress(data[start : start + frame_size])
            handle.write(struct.pack("<III", SKIPPABLE_MAGIC_LOW, 4, len(frame)))
            handle.write(frame)
    os.replace(tmp, path)


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
