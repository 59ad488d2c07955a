"""The worker processes that work on units of games, started before they are needed.

A WorkerPool is started first thing by the command, so that its first process imports what the
work needs (the modules its caller names: python-chess, NumPy and pyarrow for ingest) on
another core while this process starts up and opens the source (the others import once it is
ready). The parallel driver (games.parallel) then hands it units of work: for ingest, frames of
a pzstd-style file, blocks of whole games read here in order or the games kept from blocks
scanned here, and the merge of their runs; for the training and endgame exports, units of
frames.

Each worker talks to this process over its own pipe, and nothing else holds the pipe's other
end: when this process dies, however it dies, a waiting worker reads the end of its input and
exits, and a busy one cannot send its reply and exits too (forked workers are also killed by
the kernel at once). No named semaphores are made, so none can be left behind.
"""

from __future__ import annotations

import contextlib
import importlib
import queue
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TypeVar

from pipelines.errors import ChesspipeError
from pipelines.games.processes import (
    StartMethod,
    forking_parent,
    process_context,
)
from pipelines.lifetime import die_with_parent

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

P = ParamSpec("P")
T = TypeVar("T")


class WorkerDied(ChesspipeError):
    """A worker process stopped while it had work (killed, or out of memory)."""


class WorkerPool(Executor):
    """Worker processes that end with this one; each imports what the work needs at start.

    An Executor: tasks go to whichever worker is free, one at a time each. A thread of this
    process stands for each worker, sending it tasks and setting their futures from its
    replies. An exception raised by a task comes back with the worker's traceback as a note.

    The first worker imports at once; the others once it is ready. On two cores, a second
    import at the same time would slow this process's start, and the first worker's, for work
    a small source may never have for them.
    """

    def __init__(
        self,
        workers: int,
        *,
        preload: Sequence[str] = (),
        start_method: StartMethod | None = None,
    ) -> None:
        """Start `workers` processes, forked or from a fork server (see process_context).

        `preload` names the modules each worker imports before it takes tasks (what the work
        will need), so the imports run while this process starts and reads.
        """
        if workers < 1:
            raise ValueError(f"a worker pool needs at least one worker, not {workers}")
        self.workers = workers
        context = process_context(start_method)
        parent = forking_parent(context)
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._first_ready = threading.Event()
        self._closed = False
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        for number in range(workers):  # all forked before the first thread starts
            conn, child = context.Pipe()
            later = number > 0
            process = context.Process(
                target=_serve,
                args=(child, conn, parent, later, tuple(preload)),
                name="chesspipe-worker",
                daemon=True,
            )
            process.start()
            child.close()
            self._workers.append(_Worker(process, conn, later, threading.Event()))
        self._threads = [
            threading.Thread(
                target=_stand_for,
                args=(worker, self._tasks, self._first_ready),
                daemon=True,
                name=f"chesspipe-worker-{worker.process.pid}",
            )
            for worker in self._workers
        ]
        for thread in self._threads:
            thread.start()

    @property
    def ready(self) -> bool:
        """Whether a worker has done its imports and takes tasks (until then, tasks wait)."""
        return self._first_ready.is_set()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Have a worker call fn(*args, **kwargs); fn and its arguments must pickle."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker pool is closed")
            self._tasks.put(_Task(future, (fn, args, kwargs)))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the workers once the tasks given are done (those not begun are cancelled with
        `cancel_futures`); with `wait`, return when they have stopped.

        With `cancel_futures`, workers still importing (they have taken no task) are stopped at
        once.
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                if cancel_futures:
                    with contextlib.suppress(queue.Empty):
                        while (task := self._tasks.get_nowait()) is not None:
                            task.future.cancel()
                    for worker in self._workers:
                        if not worker.ready.is_set():  # (it has no task, and will get none)
                            worker.process.terminate()
                self._first_ready.set()  # (no worker waits for the first any longer)
                for _ in self._threads:
                    self._tasks.put(None)
        if wait:
            for thread in self._threads:
                thread.join()
            for worker in self._workers:
                worker.process.join()

    def close(self) -> None:
        """Stop the workers: tasks not begun are cancelled, those running are waited for."""
        self.shutdown(wait=True, cancel_futures=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _Worker(NamedTuple):
    """A worker process, this process's end of its pipe, and how it starts."""

    process: BaseProcess
    conn: Connection
    #: It imports once the first worker is ready (it waits for a word on its pipe).
    later: bool
    #: Set once it has imported and takes tasks.
    ready: threading.Event


class _Task(NamedTuple):
    """A call for a worker, and the future of its result."""

    future: Future[Any]
    call: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


def _stand_for(
    worker: _Worker, tasks: queue.SimpleQueue[_Task | None], first_ready: threading.Event
) -> None:
    """Give one worker the tasks it takes, one at a time, and set their futures; then stop it.

    A worker that starts later is told to start once `first_ready` is set; tasks are taken once
    it says it is ready (`first_ready` is then set, if it was not). Once the worker has died,
    the tasks it takes fail with WorkerDied.
    """
    process, conn = worker.process, worker.conn
    dead: WorkerDied | None = None
    try:
        if worker.later:
            first_ready.wait()
            conn.send("start")
        conn.recv()  # ready
        worker.ready.set()
    except (EOFError, ConnectionError):
        dead = _died(process)
    first_ready.set()  # (a first worker that died leaves the work to the others)
    while (task := tasks.get()) is not None:
        if not task.future.set_running_or_notify_cancel():
            continue
        if dead is not None:
            task.future.set_exception(dead)
            continue
        try:
            conn.send(task.call)
            done, value = conn.recv()
        except (EOFError, ConnectionError):
            dead = _died(process)
            task.future.set_exception(dead)
            continue
        except BaseException as exc:  # noqa: BLE001 - a call that does not pickle, say
            task.future.set_exception(exc)
            continue
        if done:
            task.future.set_result(value)
        else:
            task.future.set_exception(value)
    with contextlib.suppress(OSError):
        conn.send(None)  # no more tasks
    conn.close()


def _died(process: BaseProcess) -> WorkerDied:
    """Return the error for the tasks of a worker that died (once it is reaped)."""
    process.join(1)
    return WorkerDied(
        f"a worker process scanning and counting games stopped (exit code {process.exitcode})"
    )


def _serve(
    conn: Connection,
    parents_end: Connection,
    parent: int | None,
    later: bool,
    preload: tuple[str, ...],
) -> None:
    """A worker: import `preload` (`later`: once told to), say so, then do the tasks
    received until there are none.

    `parents_end` is the other end of the pipe, closed here so that the parent's going away
    is seen as the end of input.
    """
    parents_end.close()
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    if later:
        try:
            conn.recv()
        except (EOFError, OSError):
            return  # the parent went away, or closed the pool first
    from pipelines.games.allocator import reuse_large_buffers

    reuse_large_buffers()
    # Imported before anything is asked: this runs while the parent starts and reads.
    for module in preload:
        importlib.import_module(module)

    try:
        conn.send("ready")
        while (task := conn.recv()) is not None:
            fn, args, kwargs = task
            try:
                reply = (True, fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
                reply = (False, _portable(exc))
            conn.send(reply)
    except (EOFError, BrokenPipeError):
        return  # the parent went away


def _portable(exc: BaseException) -> BaseException:
    """Return the exception with the worker's traceback as a note, in a form that pickles."""
    import pickle
    import traceback

    exc.add_note("in a worker process:\n" + "".join(traceback.format_exception(exc)))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any exception that does not round-trip
        return ChesspipeError(f"a worker process failed: {exc!r}")
    return exc
