"""Games counted by worker processes give exactly what counting in this process gives."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.errors import ChesspipeError
from pipelines.games.game_filter import GameFilter
from pipelines.games.plan import PARALLEL_MIN_BYTES
from pipelines.games.processes import StartMethod
from pipelines.games.workers import WorkerPool
from pipelines.ingest.options import Runtime, Tuning
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.progress import Progress
from pipelines.warehouse.layout import partition_file
from schemas.speed import Speed
from tests.recount import read_text

ANY = GameFilter(1500, frozenset(Speed), allow_bots=True)
EVERY = IngestSettings(ANY)
SAME = ("games_read", "games_kept", "games_dropped", "pgn_bytes", "rows", "source_sha256")


def game(moves: str, *tags: str) -> str:
    """A game both players rated 2500, blitz, with extra tags."""
    head = ['[Event "Rated Blitz game"]', '[Result "1-0"]', '[WhiteElo "2500"]']
    head += ['[BlackElo "2500"]', '[TimeControl "300+0"]', *tags]
    return "\n".join(head) + f"\n\n{moves} 1-0\n\n"


#: Games that only python-chess can decide: illegal moves.
ODD = game("1. e4 e5 2. Ke3 Nc6") + game("1. e4 e5 2. Qxf7") + game("1. e4 e5 2. Nf3 Nc6")


def table(warehouse: Path, month: str = "2020-01") -> list[dict]:
    return pq.read_table(partition_file(warehouse, month)).to_pylist()


def no_children_left() -> bool:
    return not multiprocessing.active_children()


@pytest.mark.parametrize("start", ["fork", "forkserver"])
def test_counting_in_workers_equals_counting_here(
    tmp_path: Path,
    games_2021: Path,
    odd_cases: Path,
    start: StartMethod,
) -> None:
    # Real games, and odd ones: illegal moves, FEN starts, games without moves.
    text = read_text(games_2021) + "\n\n" + odd_cases.read_text() + "\n\n" + ODD
    source = tmp_path / "games.pgn"
    source.write_text(text)
    here = ingest(str(source), "2020-01", tmp_path / "here", EVERY, runtime=Runtime(workers=1))
    there = ingest(
        str(source),
        "2020-01",
        tmp_path / "there",
        EVERY,
        runtime=Runtime(workers=2, start_method=start),
    )
    for key in SAME:
        assert getattr(here, key) == getattr(there, key), key
    assert here.games_dropped["illegal_move"] == 2 and here.games_kept > 600
    assert here.opening_tree.misses > 0
    assert table(tmp_path / "here") == table(tmp_path / "there")
    assert no_children_left()


@pytest.mark.slow
def test_chess960_games_are_counted_alike(tmp_path: Path) -> None:
    from tests.random_moves import chess960_games

    bad = game("1. e4", '[Variant "Chess960"]', '[SetUp "1"]', '[FEN "not a position"]')
    source = tmp_path / "c960.pgn"
    source.write_text(chess960_games(80, seed=7) + "\n\n" + bad)
    rules = IngestSettings(GameFilter(2200, frozenset(Speed), False, "chess960"))
    here = ingest(str(source), "2020-01", tmp_path / "here", rules, runtime=Runtime(workers=1))
    there = ingest(str(source), "2020-01", tmp_path / "there", rules, runtime=Runtime(workers=2))
    for key in SAME:
        assert getattr(here, key) == getattr(there, key), key
    assert here.games_kept == 80 and here.games_dropped == {"bad_fen": 1}
    assert table(tmp_path / "here") == table(tmp_path / "there")


def test_flushed_runs_are_merged_by_a_worker(tmp_path: Path, games_2021: Path) -> None:
    one = ingest(str(games_2021), "2020-01", tmp_path / "one", EVERY, runtime=Runtime(workers=1))
    runs = ingest(
        str(games_2021),
        "2020-01",
        tmp_path / "runs",
        EVERY,
        runtime=Runtime(workers=2),
        tuning=Tuning(flush_rows=500),
    )
    assert one.rows == runs.rows > 500
    assert table(tmp_path / "one") == table(tmp_path / "runs")


def test_a_pool_started_early_is_used_or_closed(tmp_path: Path, games_2021: Path) -> None:
    early = WorkerPool(2)
    got = ingest(
        str(games_2021),
        "2020-01",
        tmp_path / "early",
        EVERY,
        runtime=Runtime(workers=2, pool=early),
    )
    want = ingest(str(games_2021), "2020-01", tmp_path / "here", EVERY, runtime=Runtime(workers=1))
    assert got.rows == want.rows and table(tmp_path / "early") == table(tmp_path / "here")
    assert no_children_left()
    # One worker counts here: the pool handed over is closed, not left running.
    ingest(
        str(games_2021),
        "2020-01",
        tmp_path / "one",
        EVERY,
        runtime=Runtime(workers=1, pool=WorkerPool(2)),
    )
    assert no_children_left()
    # A bad argument fails before anything starts: the pool is closed too.
    with pytest.raises(ChesspipeError, match="month"):
        ingest(
            str(games_2021), "2020-13", tmp_path / "x", EVERY, runtime=Runtime(pool=WorkerPool(2))
        )
    assert no_children_left()
    with pytest.raises(ValueError, match="plies"):
        IngestSettings(ANY, plies=0)
    with pytest.raises(ValueError, match="at least one worker"):
        WorkerPool(0)


def test_progress_counts_kept_games_as_they_are_sent(tmp_path: Path, games_2021: Path) -> None:
    reports: list[Progress] = []
    manifest = ingest(
        str(games_2021),
        "2020-01",
        tmp_path,
        EVERY,
        runtime=Runtime(workers=2, progress=reports.append),
    )
    assert reports[-1].games_kept == manifest.games_kept
    assert reports[-1].games_read == manifest.games_read


def _fail_in_child(*args: object, **kwargs: object) -> None:
    raise ValueError("boom while counting")


def _die_in_child(*args: object, **kwargs: object) -> None:
    os._exit(3)


def _disk_full_in_child(*args: object, **kwargs: object) -> None:
    raise OSError(28, "No space left on device")


@pytest.mark.parametrize(
    ("replacement", "error", "message"),
    [
        (_fail_in_child, ValueError, "boom while counting"),
        (_die_in_child, ChesspipeError, r"games stopped \(exit code 3\)"),
        (_disk_full_in_child, OSError, "No space left on device"),
    ],
)
def test_a_failure_in_a_worker_publishes_nothing(
    tmp_path: Path,
    games_2021: Path,
    monkeypatch: pytest.MonkeyPatch,
    replacement: Callable[..., None],
    error: type[Exception],
    message: str,
) -> None:
    import pipelines.ingest.parallel

    # Forked after the patch: the workers count with the replacement.
    monkeypatch.setattr(pipelines.ingest.parallel, "count_games", replacement)
    pool = WorkerPool(2, start_method="fork")
    with pytest.raises(error, match=message) as raised:
        ingest(str(games_2021), "2020-01", tmp_path, EVERY, runtime=Runtime(workers=2, pool=pool))
    if error is not ChesspipeError:  # the worker's traceback comes along
        assert "in a worker process" in "".join(raised.value.__notes__)
    assert not partition_file(tmp_path, "2020-01").exists()
    assert not list(partition_file(tmp_path, "2020-01").parent.glob("*"))
    assert not list((tmp_path / ".staging").glob("*"))
    assert no_children_left()


def test_a_failure_while_scanning_stops_the_workers(tmp_path: Path) -> None:
    import zstandard

    text = (b'[Event "x"]\n[WhiteElo "2500"]\n[BlackElo "2500"]\n\n1. e4 e5 1-0\n\n') * 20_000
    source = tmp_path / "cut.pgn.zst"
    source.write_bytes(zstandard.ZstdCompressor().compress(text)[:-100])  # truncated
    with pytest.raises(ChesspipeError, match="truncated"):
        ingest(str(source), "2020-01", tmp_path / "wh", EVERY, runtime=Runtime(workers=2))
    assert not partition_file(tmp_path / "wh", "2020-01").exists()
    assert no_children_left()


def _ingest_rows(
    source: str, warehouse: Path, parallel_min_bytes: int, replies: multiprocessing.Queue[object]
) -> None:
    try:
        manifest = ingest(
            source,
            "2020-01",
            warehouse,
            EVERY,
            runtime=Runtime(workers=2),
            tuning=Tuning(parallel_min_bytes=parallel_min_bytes),
        )
        replies.put((manifest.rows, manifest.workers))
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        replies.put(repr(exc))


@pytest.mark.parametrize("framed", [False, True])
def test_a_daemonic_process_ingests_on_its_own(
    tmp_path: Path, games_2021: Path, framed: bool
) -> None:
    # A Dask worker's process is daemonic: it may start no worker processes (a file would
    # otherwise be split among them, by frames or by blocks).
    source = games_2021
    parallel_min_bytes = PARALLEL_MIN_BYTES
    if framed:
        from pipelines.games.frames import write_framed_zstd

        source = tmp_path / "framed.pgn.zst"
        write_framed_zstd(source, read_text(games_2021).encode(), frame_size=50_000, level=1)
        parallel_min_bytes = 0  # split whatever its size, but for the daemon
    context = multiprocessing.get_context("fork")
    replies = context.Queue()
    daemon = context.Process(
        target=_ingest_rows,
        args=(str(source), tmp_path / "d", parallel_min_bytes, replies),
        daemon=True,
    )
    daemon.start()
    got = replies.get(timeout=120)
    daemon.join()
    here = ingest(str(source), "2020-01", tmp_path / "here", EVERY, runtime=Runtime(workers=1))
    assert got == (here.rows, 1)
    assert table(tmp_path / "d") == table(tmp_path / "here")


BUSY_WORKERS = """
import os, time
from pipelines.games.workers import WorkerPool

def busy():
    print(os.getpid(), flush=True)
    while True:  # deaf to everything: only the kernel can tell it that its parent died
        pass

pool = WorkerPool(2, start_method="fork")
pool.submit(busy)
pool.submit(busy)
time.sleep(60)
"""

IDLE_WORKERS = """
import os, time
from pipelines.games.workers import WorkerPool

pool = WorkerPool(2, start_method="forkserver")
pids = set()
while len(pids) < 2:  # (either worker may take both tasks)
    pids |= {pool.submit(os.getpid).result(), pool.submit(os.getpid).result()}
print(*pids, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(BUSY_WORKERS, id="forked-and-busy"),
        # Their parent is the fork server, which the kernel does not kill with the command:
        # they end because the command held the only other end of their pipes.
        pytest.param(IDLE_WORKERS, id="from-a-fork-server-and-idle"),
    ],
)
def test_the_workers_end_with_a_killed_command(script: str) -> None:
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parent.parent
    command = subprocess.Popen(
        [sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE, text=True
    )
    assert command.stdout is not None
    workers: list[int] = []
    while len(workers) < 2:  # (busy workers print a line each)
        workers += [int(pid) for pid in command.stdout.readline().split()]
    assert len(set(workers)) == 2
    command.kill()  # SIGKILL: the command cleans nothing up
    command.wait()
    deadline = time.monotonic() + 10
    try:
        for worker in workers:
            while _state(worker) not in ("gone", "Z"):
                assert time.monotonic() < deadline, "a worker outlived the command"
                time.sleep(0.01)
    finally:
        for worker in workers:
            if _state(worker) not in ("gone", "Z"):
                os.kill(worker, 9)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_a_later_worker_is_told_to_start_once_the_first_is_ready() -> None:
    import queue
    import threading
    from multiprocessing import Pipe

    from pipelines.games.workers import _stand_for, _Task, _Worker

    class Process:  # stands for the worker process: this test answers on its pipe
        pid = 0
        exitcode = None

        def join(self, timeout: float | None = None) -> None:
            pass

    ours, theirs = Pipe()
    worker = _Worker(Process(), ours, True, threading.Event())  # type: ignore[arg-type]
    tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
    first_ready = threading.Event()
    thread = threading.Thread(target=_stand_for, args=(worker, tasks, first_ready), daemon=True)
    thread.start()
    assert not theirs.poll(0.3)  # not before the first worker is ready
    first_ready.set()
    assert theirs.poll(5) and theirs.recv() == "start"
    assert not worker.ready.is_set()
    theirs.send("ready")
    assert worker.ready.wait(5)
    from concurrent.futures import Future

    future: Future[int] = Future()
    tasks.put(_Task(future, (len, ("abc",), {})))
    call = theirs.recv()
    assert call[0] is len
    theirs.send((True, 3))
    assert future.result(5) == 3
    tasks.put(None)
    assert theirs.recv() is None  # no more tasks
    thread.join(5)
    assert not thread.is_alive()
