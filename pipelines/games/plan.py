"""How an open source of games is read: one of three strategies, decided once.

- UNITS: a pzstd-style file (or URL, on an executor) is split into units of zstd frames that
  worker processes (or the executor) scan and work on at once.
- BLOCKS: any other source is read in order here and split into blocks of whole games, which
  worker processes scan and work on, when there are cores to spare.
- IN_PROCESS: read, scanned and worked on here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pipelines.games.frames import Frame
from pipelines.sources.open import OpenSource

if TYPE_CHECKING:
    from concurrent.futures import Executor

#: Smallest compressed file read by several processes; below it, starting them costs more.
PARALLEL_MIN_BYTES = 16 << 20

#: Text in a unit of blocks: at least (the work of sending one), at most (memory: the units in
#: flight are held here and in the workers).
MIN_BLOCK_UNIT_BYTES = 256 << 10
MAX_BLOCK_UNIT_BYTES = 32 << 20

#: Units of blocks in flight (waiting for a worker or counted by one), per worker.
BLOCK_UNITS_PER_WORKER = 2

#: Most text in units of blocks in flight at once, however many workers there are.
MAX_BLOCKS_IN_FLIGHT_BYTES = 128 << 20

#: About how much text a compressed byte of PGN holds (Lichess's dumps: 4.5 to 7).
TEXT_PER_COMPRESSED_BYTE = 5


class Strategy(enum.Enum):
    """How a source is read and its kept games counted."""

    UNITS = "units"
    BLOCKS = "blocks"
    IN_PROCESS = "in process"


@dataclass(frozen=True)
class ReadPlan:
    """The strategy chosen for a source, with the frames and units it is split into (UNITS),
    or the size of its units of text and how many may be in flight (BLOCKS)."""

    strategy: Strategy
    frames: list[Frame] = field(default_factory=list)
    units: list[range] = field(default_factory=list)
    unit_bytes: int = 0
    #: BLOCKS: the most units read ahead of the workers (waiting for one, or being counted).
    in_flight: int = 0


def plan_read(
    opened: OpenSource,
    *,
    workers: int,
    executor: Executor | None,
    keep_partial: bool,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> ReadPlan:
    """Return how to read an open source with `workers` processes (or on an executor).

    A local file is split for worker processes when it is at least `parallel_min_bytes`; with
    an executor (such as a Dask client's) a file or an http(s) URL is split whatever its size.
    Keeping what was read of a damaged stream (`keep_partial`) needs it read in order.
    """
    if not keep_partial:
        split = _units(opened, workers, executor, parallel_min_bytes)
        if split is not None:
            return ReadPlan(Strategy.UNITS, *split)
    if workers > 1 and executor is None:
        unit_bytes = block_unit_bytes(opened.size, workers)
        return ReadPlan(
            Strategy.BLOCKS, unit_bytes=unit_bytes, in_flight=BLOCK_UNITS_PER_WORKER * workers
        )
    return ReadPlan(Strategy.IN_PROCESS)


def frames_for_workers(
    opened: OpenSource, *, workers: int, parallel_min_bytes: int = PARALLEL_MIN_BYTES
) -> list[Frame] | None:
    """Return the frames of a source that `workers` processes read by units of frames (the
    UNITS strategy: a pzstd-style file of at least `parallel_min_bytes`), or None: read it in
    order. For the exports from games (training, endgames), which read nothing else in
    parallel."""
    if workers < 2:
        return None
    plan = plan_read(
        opened,
        workers=workers,
        executor=None,
        keep_partial=False,
        parallel_min_bytes=parallel_min_bytes,
    )
    return plan.frames if plan.strategy is Strategy.UNITS else None


def block_unit_bytes(size: int | None, workers: int) -> int:
    """Return the text in a unit of blocks for a source of `size` compressed bytes (None:
    unknown): about sixteen units a worker, within MIN_ and MAX_BLOCK_UNIT_BYTES, and small
    enough that the units in flight hold at most MAX_BLOCKS_IN_FLIGHT_BYTES."""
    share = size * TEXT_PER_COMPRESSED_BYTE // (workers * 16) if size else MAX_BLOCK_UNIT_BYTES
    in_flight = MAX_BLOCKS_IN_FLIGHT_BYTES // (workers * BLOCK_UNITS_PER_WORKER)
    return max(MIN_BLOCK_UNIT_BYTES, min(MAX_BLOCK_UNIT_BYTES, share, in_flight))


def _units(
    opened: OpenSource, workers: int, executor: Executor | None, parallel_min_bytes: int
) -> tuple[list[Frame], list[range]] | None:
    """Return the frames and units of parallel work for a pzstd-style source, or None."""
    from pipelines.games.frames import frame_index, frame_pieces, plan_units

    if not opened.size or (executor is None and (workers < 2 or opened.size < parallel_min_bytes)):
        return None
    if opened.kind == "file":
        handle: Any = opened.reader.stream
    elif opened.kind == "url" and executor is not None:
        from pipelines.sources.ranges import RangeFile

        handle = RangeFile(opened.name, opened.size)
    else:
        return None
    frames = frame_index(handle, opened.size)
    # CRLF text moves the blank lines between games: such files are read in order.
    crlf = frames is not None and b"\r\n" in next(frame_pieces(handle, frames[0]), b"")[:65536]
    if opened.kind == "file":
        handle.seek(0)
    if frames is None or len(frames) < 2 or crlf:
        return None
    units = plan_units(frames, workers if executor is None else max(workers, 8))
    return (frames, units) if len(units) > 1 or executor is not None else None
