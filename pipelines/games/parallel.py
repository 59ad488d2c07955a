"""The one parallel driver: units of games worked on by an executor, their results in order.

A unit is a range of a pzstd-style file's frames, which the process working on it reads
itself (open_unit), or blocks of whole games read in order by the caller (block_units). Each
unit is a call of a per-unit function; in_order submits the calls to any Executor (the
WorkerPool, a ProcessPoolExecutor, Dask's) with a bound on the units in flight, and yields their
results in the units' order, so that what the units make is used as a reading in order would
make it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from typing import TypeVar

from pipelines.games.frames import Frame, UnitText
from pipelines.games.scan import BOUNDARY, MAX_GAME_BYTES
from pipelines.sources.open import open_location

K = TypeVar("K")
T = TypeVar("T")


def in_order(
    executor: Executor,
    units: Iterable[tuple[K, Callable[[], T]]],
    *,
    in_flight: int,
    idle: Callable[[], bool] | None = None,
) -> Generator[tuple[K, T], None, None]:
    """Yield (key, result) of each unit's call, run on `executor`, in the units' order.

    `units` gives each unit's key (what the caller wants back with its result) and its call
    (a picklable callable without arguments, such as a functools.partial of a module's
    function). At most `in_flight` units are submitted and not yet yielded: units are taken
    from `units` only as there is room, so a lazy iterable is read as far as the work allows.
    While the next result is not ready, `idle` (if given) is called for other work here; it
    returns whether it has more (else this waits). A unit's exception is raised here, in order;
    on any exit the units not begun are cancelled (those running are left to the executor).
    """
    if in_flight < 1:
        raise ValueError(f"at least one unit in flight, not {in_flight}")
    source = iter(units)
    pending: deque[tuple[K, Future[T]]] = deque()

    def top_up() -> None:
        while len(pending) < in_flight:
            unit = next(source, None)
            if unit is None:
                return
            key, call = unit
            pending.append((key, executor.submit(call)))

    try:
        top_up()
        while pending:
            key, future = pending[0]
            while idle is not None and not future.done():
                if not idle():
                    idle = None
            result = future.result()
            pending.popleft()
            top_up()
            yield key, result
    finally:
        for _, future in pending:
            future.cancel()


@contextmanager
def open_unit(location: str, frames: list[Frame], unit: range) -> Iterator[UnitText]:
    """Open a pzstd-style source (a path or URL) and return the text of the games a unit of
    its frames owns (frames.UnitText: iterate once; then `own_length` is its own text's length).
    """
    with open_location(location, frames[-1].offset + frames[-1].size) as handle:
        # Pieces about the size a stream decompresses to: the scanner's work stays in the
        # caches.
        yield UnitText(handle, frames, unit, MAX_GAME_BYTES)


def block_units(blocks: Iterable[bytes], unit_bytes: int) -> Iterator[list[bytes]]:
    """Group blocks of whole games (from scan.game_blocks) into units of at most `unit_bytes`.

    A block is cut at its games' boundaries where a unit fills up (every boundary in a block is
    a game's: those in comments were taken out); a game longer than a unit is a unit alone.
    """
    unit: list[bytes] = []
    size = 0
    for block in blocks:
        start = 0
        while size + len(block) - start > unit_bytes:
            room = unit_bytes - size  # (a unit holding a game longer than itself has none)
            cut = block.rfind(BOUNDARY, start + 1, start + room + len(BOUNDARY)) if room > 0 else -1
            if cut < 0 and not unit:  # a game longer than a unit
                cut = block.find(BOUNDARY, start + 1)
                if cut < 0:
                    break
            if cut >= 0:
                unit.append(block[start:cut])
                start = cut
            yield unit
            unit, size = [], 0
        if start < len(block):
            unit.append(block[start:] if start else block)
            size += len(block) - start
    if unit:
        yield unit
