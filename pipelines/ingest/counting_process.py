"""Counting kept games into run files of statistics: here, or in a second process.

The second process (CountingProcess) keeps the process that reads and scans the text light:
python-chess, NumPy and pyarrow are imported, and the kept games replayed, on another core
while it goes on scanning. It then merges the runs into the month's partition file.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

from pipelines.errors import ChesspipeError
from pipelines.ingest.game_filter import ScanStats
from pipelines.ingest.processes import (
    StartMethod,
    die_with_parent,
    forking_parent,
    process_context,
)
from pipelines.ingest.scan import kept_games_in_blocks

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from pipelines.ingest.counting import MoveCounter, OpeningTree
    from pipelines.ingest.game_filter import KeptGame
    from pipelines.ingest.settings import IngestSettings


#: Rows of (key, move, ...) held in memory before they are aggregated into a run file.
FLUSH_ROWS = 2_000_000

#: Runs with at most this many rows in all are merged in memory (about 40 bytes a row).
IN_MEMORY_ROWS = 4_000_000

#: Kept games sent to the counting process in one message.
BATCH_GAMES = 256


def count_kept(
    games: Iterable[KeptGame],
    settings: IngestSettings,
    stats: ScanStats,
    staging: Path,
    *,
    prefix: str = "run",
    flush_rows: int = FLUSH_ROWS,
    tree: OpeningTree | None = None,
) -> tuple[list[Path], OpeningTree | None]:
    """Count the first plies of games that passed the filter into run files under staging.

    Return the run files and the opening tree used (None if no game came and none was given).
    """
    counter: MoveCounter | None = None
    runs: list[Path] = []
    for kept in games:
        if counter is None:  # python-chess and NumPy are imported once a game is kept
            from pipelines.ingest.counting import MoveCounter

            chess960 = settings.rules.variant == "chess960"
            counter = MoveCounter(settings.plies, stats, tree, chess960)
        counter.add(kept)
        if len(counter.rows) >= flush_rows:
            runs.append(_write_counted(counter, staging / f"{prefix}-{len(runs):05d}.run"))
    if counter is not None:
        counter.flush()
        if len(counter.rows):
            runs.append(_write_counted(counter, staging / f"{prefix}-{len(runs):05d}.run"))
        tree = counter.tree
    return runs, tree


#: What counts kept games into run files: count_kept, or a stand-in with its signature.
CountKept = Callable[..., tuple[list[Path], "OpeningTree | None"]]


def _write_counted(counter: MoveCounter, path: Path) -> Path:
    """Write the rows counted so far as a run file, and start new rows; return its path."""
    from pipelines.ingest.runs import from_rows, write_run

    write_run(from_rows(counter.take_rows()), path)
    return path


class CountingProcess:
    """Counts kept games in a child process, which then merges them into a partition file.

    The child starts importing what counting needs at once, so that a caller can start it
    early and tell it what to count later (`begin`). Games sent count as kept in `stats` until
    the child reports what it counted (a game can still be dropped there, for an illegal move).
    """

    def __init__(
        self, *, start_method: StartMethod | None = None, count: CountKept = count_kept
    ) -> None:
        """Start the child, forked or from a fork server (see process_context).

        The child counts with `count` (count_kept's signature): a stand-in in tests.
        """
        self.stats: ScanStats | None = None
        self.sent = 0
        self._batch: list[KeptGame] = []
        context = process_context(start_method)
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve,
            args=(child, self._conn, forking_parent(context), count),
            name="chesspipe-counting",
            daemon=True,
        )
        self._process.start()
        child.close()

    def begin(
        self,
        stats: ScanStats,
        settings: IngestSettings,
        staging: Path,
        *,
        flush_rows: int = FLUSH_ROWS,
        in_memory_rows: int = IN_MEMORY_ROWS,
    ) -> None:
        """Say how to count and where to write run files; kept games then count in `stats`.

        `flush_rows` and `in_memory_rows` are as for count_kept and runs.merge_runs.
        """
        self.stats = stats
        self._send((settings, staging, flush_rows, in_memory_rows))

    def add(self, game: KeptGame) -> None:
        """Send a kept game to be counted (in a batch)."""
        self._begun().games_kept += 1
        self._batch.append(game)
        self.sent += 1
        if len(self._batch) >= BATCH_GAMES:
            batch, self._batch = self._batch, []
            self._send(batch)

    def finish(self) -> tuple[int, int]:
        """Count the games left; return the opening tree's hits and misses.

        `stats` then holds the counts of the games kept and dropped while counting.
        """
        stats = self._begun()
        try:
            self._send(self._batch)
            self._batch = []
            self._send(None)  # no more games
            counted, hits, misses = self._reply()
        except BaseException:
            self.close()  # so that nothing is written after the caller cleans up
            raise
        stats.games_kept -= self.sent
        stats.merge(counted)
        stats.rejected.extend(counted.rejected)  # the places of games sent, in order
        return hits, misses

    def write(self, target: Path) -> int:
        """Merge the counted runs into a partition file at target; return its row count."""
        try:
            self._send(target)
            (rows,) = self._reply()
        except BaseException:
            self.close()  # so that nothing is written after the caller cleans up
            raise
        self._process.join()
        return int(rows)

    def close(self) -> None:
        """Stop the child process if it still runs."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._conn.close()

    def __enter__(self) -> CountingProcess:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _begun(self) -> ScanStats:
        if self.stats is None:
            raise RuntimeError("CountingProcess.begin() must come first")
        return self.stats

    def _send(self, message: Any) -> None:
        try:
            self._conn.send(message)
        except OSError:  # the child stopped: it may have said why
            self._failed()

    def _reply(self) -> tuple[Any, ...]:
        """Return the child's next reply, raising the error it reports instead, if any."""
        try:
            reply = self._conn.recv()
        except (EOFError, OSError):
            self._failed()
        if reply[0] == "error":
            raise reply[1]
        return tuple(reply[1:])

    def _failed(self) -> NoReturn:
        """Raise the error the child reported, or say that it died."""
        reply: tuple[Any, ...] = ()
        try:
            if self._conn.poll(1):
                reply = self._conn.recv()
        except (EOFError, OSError):
            pass
        if reply and reply[0] == "error":
            raise reply[1]
        self._process.join(5)
        raise ChesspipeError(
            f"the process counting kept games stopped (exit code {self._process.exitcode})"
        )


def _serve(conn: Connection, parents_end: Connection, parent: int | None, count: CountKept) -> None:
    """Count the games received, then merge the runs into the target received; reply to each.

    `parents_end` is the other end of the pipe, closed here so that the parent's going away
    is seen as the end of input.
    """
    parents_end.close()
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    try:
        # Imported before anything is asked: this runs while the parent starts and scans.
        import pyarrow.parquet  # noqa: F401

        from pipelines.ingest.game_filter import ScanStats
        from pipelines.ingest.runs import merge_runs

        settings, staging, flush_rows, in_memory_rows = conn.recv()
        stats = ScanStats()
        runs, tree = count(_received(conn), settings, stats, staging, flush_rows=flush_rows)
        hits, misses = (tree.hits, tree.misses) if tree is not None else (0, 0)
        conn.send(("counted", stats, hits, misses))
        target = conn.recv()
        conn.send(("written", merge_runs(runs, target, in_memory_rows=in_memory_rows)))
    except (EOFError, BrokenPipeError):
        return  # the parent went away
    except BaseException as exc:  # noqa: BLE001 - every failure is reported to the parent
        with contextlib.suppress(OSError):  # unless the parent went away meanwhile
            conn.send(("error", _portable(exc)))


def _received(conn: Connection) -> Iterator[KeptGame]:
    """Yield the games of the batches received, up to the end marker (None)."""
    while (batch := conn.recv()) is not None:
        yield from batch


def _portable(exc: BaseException) -> BaseException:
    """Return the exception with the child's traceback as a note, in a form that pickles."""
    import pickle
    import traceback

    exc.add_note("in the counting process:\n" + "".join(traceback.format_exception(exc)))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any exception that does not round-trip
        return ChesspipeError(f"counting failed: {exc!r}")
    return exc


def count_games(
    blocks: Iterable[bytes],
    settings: IngestSettings,
    stats: ScanStats,
    staging: Path,
    *,
    prefix: str = "run",
    flush_rows: int = FLUSH_ROWS,
    tree: OpeningTree | None = None,
    keep: Callable[[bytes], object] | None = None,
) -> tuple[list[Path], OpeningTree | None]:
    """Count the first plies of the kept games into aggregated run files under staging.

    Return the run files and the opening tree used (None if no game was kept and none given).
    `keep` is called with the text of each game that passes the filter (see
    kept_games_in_blocks).
    """
    kept = kept_games_in_blocks(blocks, settings.rules, stats, keep=keep)
    return count_kept(
        kept, settings, stats, staging, prefix=prefix, flush_rows=flush_rows, tree=tree
    )
