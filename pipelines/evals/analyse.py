"""Evaluating positions with a UCI engine through python-chess, into the evaluation store.

One engine process per worker (`Threads 1`, a new game per position: at a node limit the same
position gets the same score every run), all driven from one asyncio loop. Results are saved
in batches (a part of the store each), so a kill loses at most a batch, and a rerun skips what
is stored at the same or a deeper limit: it resumes. An engine that dies or hangs is started
again and the position tried once more; a position that fails twice is counted, not stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import chess
import chess.engine

from pipelines.errors import ChesspipeError
from pipelines.evals.positions import fen_without_clocks, pv_text
from pipelines.evals.settings import AnalysisSettings
from pipelines.evals.store import (
    EngineLine,
    Evaluation,
    compact_if_many,
    read_evaluations,
    write_part,
)
from pipelines.progress import bar
from pipelines.warehouse.evals_files import evals_lock
from schemas.polyglot import encode_move, polyglot_key


class Failure(NamedTuple):
    """A position the engine failed on twice, and why the second time."""

    fen: str
    reason: str


@dataclass(frozen=True)
class AnalysisResult:
    """What a run did: positions asked, skipped (stored at this limit or deeper), evaluated by
    the rules (no legal move), analysed, failed; the engine; times.

    `search_seconds` is the time the workers waited for the engine's answers (summed over
    workers), `engine_seconds` the time the engine says it searched (its `info time`).
    """

    positions: int
    skipped: int
    rules: int
    analysed: int
    failed: tuple[Failure, ...]
    engine: str | None
    limit: str
    workers: int
    restarts: int
    parts: int
    seconds: float
    search_seconds: float
    engine_seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "positions": self.positions,
            "skipped": self.skipped,
            "rules": self.rules,
            "analysed": self.analysed,
            "failed": len(self.failed),
            "failures": [f._asdict() for f in self.failed[:20]],
            "engine": self.engine,
            "limit": self.limit,
            "workers": self.workers,
            "restarts": self.restarts,
            "parts": self.parts,
            "seconds": round(self.seconds, 3),
            "search_seconds": round(self.search_seconds, 3),
            "engine_seconds": round(self.engine_seconds, 3),
        }


class AnalysisProgress(NamedTuple):
    """A progress report: positions done (analysed or failed) of those to analyse."""

    done: int
    total: int
    failed: int
    skipped: int
    seconds: float
    finished: bool = False


def format_progress(report: AnalysisProgress) -> str:
    """One line: a bar, positions done of the total, rate, ETA, skipped and failed."""
    fraction = report.done / report.total if report.total else 1.0
    rate = report.done / report.seconds if report.seconds > 0 else 0.0
    parts = [f"{bar(fraction)} {fraction:6.1%}", f"{report.done:,}/{report.total:,} positions"]
    parts.append(f"{rate:,.1f}/s")
    if 0 < fraction < 1 and rate > 0:
        eta = (report.total - report.done) / rate
        parts.append(f"ETA {int(eta // 60)}:{int(eta % 60):02d}")
    parts.append(f"{report.skipped:,} skipped")
    if report.failed:
        parts.append(f"{report.failed:,} failed")
    return "  ".join(parts)


class EngineProblem(ChesspipeError):
    """The engine cannot be run or does not speak UCI."""


#: Where Debian and Ubuntu install engines (`stockfish`, `ethereal-chess`, ...), a folder
#: that is not on every PATH (not root's, not a service's).
GAMES_FOLDERS = ("/usr/games", "/usr/local/games")


def check_engine(engine: str | os.PathLike[str]) -> str:
    """Return the engine's program path (a path, or a name on PATH or in GAMES_FOLDERS), or
    raise EngineProblem."""
    name = os.fspath(engine)
    found = None
    if os.sep not in name:
        found = shutil.which(name) or shutil.which(name, path=os.pathsep.join(GAMES_FOLDERS))
    path = Path(found or name)
    if not path.exists():
        looked = "" if os.sep in name else f" on PATH nor in {', '.join(GAMES_FOLDERS)}"
        raise EngineProblem(f"engine {name}: no such program{looked}")
    if path.is_dir() or not os.access(path, os.X_OK):
        raise EngineProblem(f"engine {name}: not an executable program")
    return str(path)


class _Engine:
    """One engine process and its UCI protocol, started (and started again) by a worker."""

    def __init__(self, program: str, settings: AnalysisSettings) -> None:
        self.program = program
        self.settings = settings
        self.transport: asyncio.SubprocessTransport | None = None
        self.protocol: chess.engine.UciProtocol | None = None

    async def start(self) -> str:
        """Start the engine; return its name (`id name`)."""
        try:
            transport, protocol = await asyncio.wait_for(
                # Its own process group: a Ctrl-C is this command's to handle (it stops the
                # engines itself); an engine reads the end of its input if this one dies.
                chess.engine.popen_uci(self.program, setpgrp=True),
                self.settings.start_timeout,
            )
        except TimeoutError:
            raise EngineProblem(
                f"engine {self.program} did not answer uci with uciok within "
                f"{self.settings.start_timeout:g} s: not a UCI engine"
            ) from None
        except chess.engine.EngineError as exc:
            raise EngineProblem(f"engine {self.program} failed at start: {exc}") from None
        except OSError as exc:
            raise EngineProblem(f"engine {self.program}: {exc.strerror or exc}") from None
        self.transport, self.protocol = transport, protocol
        options: dict[str, int | bool] = {}
        if "Threads" in protocol.options:
            options["Threads"] = 1
        if "Hash" in protocol.options:
            options["Hash"] = self.settings.hash_mb
        if "UCI_ShowWDL" in protocol.options:  # the win/draw/loss model beside the score
            options["UCI_ShowWDL"] = True
        elif self.settings.wdl:
            name = protocol.id.get("name", Path(self.program).name)
            raise EngineProblem(
                f"engine {name} has no UCI_ShowWDL option: it gives no win/draw/loss model"
            )
        if options:
            await protocol.configure(options)
        return str(protocol.id.get("name", Path(self.program).name))

    async def analyse(self, board: chess.Board) -> list[chess.engine.InfoDict]:
        """The engine's answer about a board: one info per principal variation, in MultiPV order."""
        assert self.protocol is not None
        limit = self.settings.engine_limit()
        wait = self.settings.timeout + (limit.time or 0)
        # A new game for each position: nothing of the last search is carried over.
        multipv = self.settings.multipv if self.settings.multipv > 1 else None
        search = self.protocol.analyse(board, limit, game=object(), multipv=multipv)
        infos = await asyncio.wait_for(search, wait)
        return infos if isinstance(infos, list) else [infos]

    def kill(self) -> None:
        if self.transport is not None:
            with contextlib.suppress(ProcessLookupError):
                self.transport.kill()
            self.transport.close()
        self.transport = self.protocol = None

    async def quit(self) -> None:
        """Ask the engine to quit (kill it if it does not), and wait until it has exited, so
        that no exit is reported to a loop already closed."""
        protocol = self.protocol
        if protocol is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(protocol.quit(), 5)
        self.kill()
        if protocol is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(protocol.returncode), 5)


def _line(board: chess.Board, info: chess.engine.InfoDict) -> EngineLine | None:
    """A principal variation of a search of several, or None where it has no legal first
    move or no score."""
    pv: list[chess.Move] = list(info.get("pv") or [])
    if not pv or "score" not in info or not board.is_legal(pv[0]):
        return None
    score = info["score"].pov(board.turn)
    cp, mate = (None, score.mate()) if score.is_mate() else (score.score(), None)
    return EngineLine(encode_move(board, pv[0]), cp, mate, pv_text(pv))


def evaluation_from(
    board: chess.Board,
    infos: chess.engine.InfoDict | Sequence[chess.engine.InfoDict],
    *,
    engine: str,
    limit: str,
    when: datetime,
) -> Evaluation:
    """A store row from an engine's answer about a board (its score from the side to move):
    one info, or one per principal variation, in MultiPV order (then kept as the row's `lines`)."""
    answers = [infos] if isinstance(infos, dict) else list(infos)
    info = answers[0]
    score = info["score"].pov(board.turn)
    pv: list[chess.Move] = list(info.get("pv") or [])
    best = encode_move(board, pv[0]) if pv and board.is_legal(pv[0]) else None
    lines = None
    if len(answers) > 1:
        found = [_line(board, answer) for answer in answers]
        lines = tuple(line for line in found if line is not None) or None
    model = info["wdl"].pov(board.turn) if "wdl" in info else None
    return Evaluation(
        key=polyglot_key(board),
        fen=fen_without_clocks(board),
        cp=score.score() if not score.is_mate() else None,
        mate=score.mate() if score.is_mate() else None,
        best=best,
        pv=pv_text(pv),
        depth=info.get("depth"),
        nodes=info.get("nodes"),
        limit=limit,
        engine=engine,
        source="analyse",
        analysed_at=when,
        lines=lines,
        wdl=None if model is None else (model.wins, model.draws, model.losses),
        halfmove=board.halfmove_clock,
    )


def rules_evaluation(board: chess.Board, when: datetime) -> Evaluation:
    """A position with no legal move, evaluated by the rules: mated (mate 0) or stalemate."""
    mated = board.is_check()
    return Evaluation(
        polyglot_key(board), fen_without_clocks(board), None if mated else 0,
        0 if mated else None, None, None, 0, 0, None, "python-chess " + chess.__version__,
        "rules", when,
    )  # fmt: skip


@dataclass
class _Run:
    """What the workers share while they run."""

    todo: list[chess.Board]
    settings: AnalysisSettings
    save: Callable[[Evaluation], None]
    report: Callable[[], None]
    next: int = 0
    done: int = 0
    failures: list[Failure] = field(default_factory=list)
    in_a_row: int = 0
    restarts: int = 0
    search_seconds: float = 0.0
    engine_seconds: float = 0.0
    engine: str | None = None


async def _work(run: _Run, program: str) -> None:
    """One worker: its engine analyses positions from the shared list until none is left."""
    engine = _Engine(program, run.settings)
    run.engine = await engine.start()
    limit = run.settings.limit_text()
    try:
        while run.next < len(run.todo):
            board = run.todo[run.next]
            run.next += 1
            reason = ""
            for attempt in range(2):
                if engine.protocol is None:
                    run.restarts += 1
                    await engine.start()
                started = time.monotonic()
                try:
                    infos = await engine.analyse(board)
                except TimeoutError:
                    reason = f"no answer within {run.settings.timeout:g} s (hung)"
                except chess.engine.EngineTerminatedError:
                    reason = "the engine died during the search"
                except chess.engine.EngineError as exc:
                    reason = f"engine error: {exc}"
                else:
                    run.search_seconds += time.monotonic() - started
                    run.engine_seconds += float(infos[0].get("time") or 0.0)
                    if "score" not in infos[0]:
                        reason = "the engine gave no score"
                    else:
                        when = datetime.now(UTC).replace(microsecond=0)
                        run.save(evaluation_from(board, infos, engine=run.engine, limit=limit,
                                                 when=when))  # fmt: skip
                        run.in_a_row = 0
                        break
                engine.kill()  # dead, hung or wrong: a fresh one for the next try
                if attempt == 1:
                    run.failures.append(Failure(board.fen(), reason))
                    run.in_a_row += 1
            run.done += 1
            run.report()
            if run.in_a_row >= run.settings.give_up_after:
                raise EngineProblem(
                    f"engine {program} failed on {run.in_a_row} positions in a row, each "
                    f"tried twice (last: {reason}); stopped, the evaluations made are stored"
                )
    finally:
        await engine.quit()


def _quiet_late_replies(loop: asyncio.AbstractEventLoop, context: Mapping[str, object]) -> None:
    """The loop's exception handler: an engine's reply to a search already cancelled (a
    `readyok` after a Ctrl-C, which python-chess hands to a future that is done: an
    InvalidStateError in its callback) is the stop, not a fault to show; the rest as asyncio
    shows it."""
    if isinstance(context.get("exception"), asyncio.InvalidStateError):
        return
    loop.default_exception_handler(dict(context))


async def _run_workers(run: _Run, program: str) -> None:
    asyncio.get_running_loop().set_exception_handler(_quiet_late_replies)
    tasks = [asyncio.create_task(_work(run, program)) for _ in range(run.settings.workers)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@contextlib.contextmanager
def _asyncio_quiet() -> Iterator[None]:
    """Keep asyncio's warnings off the terminal meanwhile, and after a stop: stopped by
    Ctrl-C, its child watcher thread reports engines that exit after the loop closed ("Loop
    ... that handles pid ... is closed"), which is the engines stopping, not a fault to show.
    After a run that ends by itself, asyncio's logging is as it was."""
    import logging

    logger = logging.getLogger("asyncio")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield  # (not restored after an exception: the watcher may report once the run ended)
    logger.setLevel(level)


def _import_writers() -> None:
    """Import what saving a batch needs (DuckDB, pyarrow's Parquet writer and, where it is
    installed, pandas, which pyarrow imports on making its first array from a list: 1.5-2 s
    cold) while the engines start and search, so the first save does not hold them up."""
    import importlib

    for name in ("duckdb", "pyarrow.parquet", "pandas"):
        with contextlib.suppress(ImportError):  # (the save itself says what is missing)
            importlib.import_module(name)


def analyse_positions(
    warehouse: Path,
    boards: Sequence[chess.Board],
    engine: str | os.PathLike[str],
    settings: AnalysisSettings | None = None,
    *,
    progress: Callable[[AnalysisProgress], None] | None = None,
) -> AnalysisResult:
    """Evaluate `boards` with a UCI engine into the warehouse's evaluation store; return what
    was done. Positions stored at the same or a deeper limit are skipped; those with no legal
    move are evaluated by the rules. Batches of `settings.batch` evaluations are saved as they
    come; an EngineProblem (the engine cannot start, or fails on position after position)
    leaves every batch made before it stored."""
    settings = settings or AnalysisSettings()
    program = check_engine(engine)
    started = time.monotonic()
    unique = list({polyglot_key(b): b for b in boards}.items())
    with evals_lock(Path(warehouse)):
        stored = read_evaluations(Path(warehouse), [key for key, _ in unique])
        todo, skipped, rules = [], 0, []
        now = datetime.now(UTC).replace(microsecond=0)
        for key, board in unique:
            legal = board.legal_moves.count()
            if key in stored and settings.satisfied_by(stored[key], legal_moves=legal):
                skipped += 1
            elif not legal:
                rules.append(rules_evaluation(board, now))
            else:
                todo.append(board)
        pending: list[Evaluation] = list(rules)
        parts = 0
        # Parts of half a batch, each written by a thread while the engines go on searching:
        # a kill loses at most the half being written and the half being gathered.
        half = max(1, settings.batch // 2)
        writer = ThreadPoolExecutor(1, thread_name_prefix="evals-writer")
        writing: Future[Path | None] | None = None

        def flush(*, wait: bool = True) -> None:
            nonlocal parts, writing
            if writing is not None:
                writing.result()  # (the last part is whole, or its error is raised here)
                writing = None
            if pending:
                writing = writer.submit(write_part, Path(warehouse), list(pending))
                parts += 1
                pending.clear()
            if wait and writing is not None:
                writing.result()
                writing = None

        def save(evaluation: Evaluation) -> None:
            pending.append(evaluation)
            if len(pending) >= half:
                flush(wait=False)

        def report(finished: bool = False) -> None:
            if progress is not None:
                seconds = time.monotonic() - started
                progress(AnalysisProgress(run.done, len(todo), len(run.failures), skipped,
                                          seconds, finished))  # fmt: skip

        run = _Run(todo, settings, save, report)
        try:
            if todo:
                threading.Thread(target=_import_writers, daemon=True).start()
                with _asyncio_quiet():
                    asyncio.run(_run_workers(run, program))
        finally:
            try:
                flush()
            finally:
                writer.shutdown()
            compact_if_many(Path(warehouse))
        report(True)
    analysed = run.done - len(run.failures)
    return AnalysisResult(
        positions=len(unique), skipped=skipped, rules=len(rules), analysed=analysed,
        failed=tuple(run.failures), engine=run.engine, limit=settings.limit_text(),
        workers=settings.workers, restarts=run.restarts, parts=parts,
        seconds=time.monotonic() - started, search_seconds=run.search_seconds,
        engine_seconds=run.engine_seconds,
    )  # fmt: skip
