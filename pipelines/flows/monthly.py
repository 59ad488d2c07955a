"""The monthly flow: one month's dump to a published book, each step a Prefect task."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, ParamSpec, TypeVar

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from pipelines.errors import ChesspipeError, Stopped
from pipelines.flows.options import BuildOptions
from pipelines.monthly.build import StepRunner, build_month, run_directly
from pipelines.monthly.manifest import MonthManifest, summary_markdown
from pipelines.monthly.schedule import month_to_build
from pipelines.progress import Progress, ProgressCallback, format_progress, stream_handlers

T = TypeVar("T")
P = ParamSpec("P")


class LoggedProgress:
    """A progress callback that logs a line every few seconds and can also draw a bar.

    The last report of a run (its manifest's numbers) is always logged.
    """

    def __init__(
        self, logger: Any, every: float, also: ProgressCallback | None = None, label: str = ""
    ) -> None:
        self.logger = logger
        self.every = every
        self.also = also
        self.label = label
        self._last = -every

    def __call__(self, report: Progress) -> None:
        if self.also is not None:
            self.also(report)
        if report.done or report.seconds - self._last >= self.every:
            self._last = report.seconds
            self.logger.info("%s%s", self.label, format_progress(report))


#: The task and flow runs (their ids) that failed with an error the command reports itself.
_FAILED_AS_REPORTED: set[str] = set()

#: Failures the command reports in one line (pipelines/cli.py): the user's to act on
#: (ChesspipeError) and what the OS says of a path (a full disk, a file where a folder is
#: expected, a folder that cannot be written).
USER_ERRORS = (ChesspipeError, OSError)


def _run_id(record: logging.LogRecord) -> str | None:
    """Return the id of the task run, else the flow run, a Prefect log record is about."""
    run: str | None = getattr(record, "task_run_id", None) or getattr(record, "flow_run_id", None)
    return run


class QuietUserErrors(logging.Filter):
    """Drops the traceback from Prefect's log of a failure the user can act on (USER_ERRORS).

    The run that failed so is remembered: what it logs next (Prefect's `Finished in state
    Failed(...)`, logged once the failure is handled) is kept from the terminal too.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], USER_ERRORS):
            record.exc_info = None
            record.exc_text = None
            if (run := _run_id(record)) is not None:
                _FAILED_AS_REPORTED.add(run)
        return True


class ReportedByTheCommand(logging.Filter):
    """Keeps from the terminal the log records of what the command reports itself in one line.

    That is, the failure of a run with an error the command reports (USER_ERRORS), what is
    logged while a ChesspipeError or an interruption (Ctrl-C, SIGTERM) is raised or unwinds,
    and what a run that failed with one of USER_ERRORS logs afterwards (its final state). The
    flow and task runs' logs and states on the Prefect server keep them. (What is logged while
    some OSError is handled is kept: a library may handle one and go on.)
    """

    def filter(self, record: logging.LogRecord) -> bool:
        from prefect.exceptions import TerminationSignal

        unwinding = (ChesspipeError, KeyboardInterrupt, Stopped, TerminationSignal)
        raised = record.exc_info[1] if record.exc_info else None
        if isinstance(raised, (*USER_ERRORS, *unwinding)) or isinstance(sys.exception(), unwinding):
            return False
        return _run_id(record) not in _FAILED_AS_REPORTED


def quiet_user_errors() -> None:
    """Log the USER_ERRORS failures of task and flow runs without a traceback.

    On the terminal, what the command reports itself is not logged (ReportedByTheCommand).
    """
    for handler in stream_handlers():
        if not any(isinstance(f, ReportedByTheCommand) for f in handler.filters):
            handler.addFilter(ReportedByTheCommand())
    for name in (
        "prefect.task_runs",
        "prefect.flow_runs",
        "prefect.task_engine",
        "prefect.flow_engine",
    ):
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietUserErrors) for f in logger.filters):
            logger.addFilter(QuietUserErrors())


#: What a flow run imports on first use (Prefect's parameter encoding and task graph, the
#: build's DuckDB, NumPy and python-chess): imported by `preload` while a local server boots.
FLOW_RUN_MODULES = (
    "fastapi.encoders",
    "prefect.utilities.visualization",
    "duckdb",
    "chess.polyglot",
    "schemas.polyglot",
)


def preload() -> None:
    """Import what a flow run would import on first use, so that it does not wait for it."""
    import importlib

    for name in FLOW_RUN_MODULES:
        importlib.import_module(name)


def run_as_task(name: str, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run one step of a build as a Prefect task run (a StepRunner)."""
    return task(name=name, cache_policy=NO_CACHE)(function)(*args, **kwargs)


def build_logged(
    options: BuildOptions,
    source: str,
    month: str,
    warehouse: str,
    books: str,
    *,
    force: bool,
    logger: Any,
    also: ProgressCallback | None = None,
    label: str = "",
    run_step: StepRunner = run_directly,
    executor: Executor | None = None,
) -> MonthManifest:
    """Build a month (`build_month`) with the flows' `options`, its progress logged by `logger`
    every `options.log_every` seconds (each line after `label`) and reported to `also` too;
    `executor`: where its source is read by units of frames (the month split)."""
    return build_month(
        source,
        month,
        warehouse,
        books,
        options.settings,
        options.download,
        force=force,
        progress=LoggedProgress(logger, options.log_every, also, label=label),
        run_step=run_step,
        executor=executor,
    )


def scheduled_month() -> str:
    """Return the month the current flow run builds when none is given: the previous month."""
    from prefect.runtime import flow_run

    return month_to_build(flow_run.scheduled_start_time)


def publish_artifact(manifest: MonthManifest) -> None:
    """Leave a Markdown summary of the build on the flow run."""
    create_markdown_artifact(
        markdown=summary_markdown(manifest),
        key=f"book-{manifest.month}",
        description=f"lichess {manifest.month} book ({manifest.status})",
    )


@flow(name="build-month", log_prints=False)
def build_month_flow(
    source: str,
    warehouse: str,
    books: str,
    month: str | None = None,
    options: BuildOptions | None = None,
    force: bool = False,
    progress: Any = None,
) -> dict[str, Any]:
    """Ingest a month, build its book and publish it with a manifest; skip when up to date.

    `source` may hold `{month}` (e.g. `lichess:{month}`); without `month`, the month is the one
    before the run's scheduled time. `progress` is an extra in-process callback (the CLI's bar).
    Returns the run manifest as its JSON object, as Prefect stores flow results.
    """
    options = options or BuildOptions()
    logger = get_run_logger()
    month = month or scheduled_month()
    source = source.format(month=month)
    logger.info("building lichess %s from %s", month, source)
    manifest = build_logged(
        options,
        source,
        month,
        warehouse,
        books,
        force=force,
        logger=logger,
        also=progress,
        run_step=run_as_task,
    )
    if manifest.status == "up-to-date":
        logger.info("%s is up to date: nothing changed", manifest.book_file)
    else:
        logger.info(
            "published %s: %s games read, %s kept, %s entries",
            manifest.book_file,
            manifest.ingest.games_read,
            manifest.ingest.games_kept,
            manifest.book.entries,
        )
    publish_artifact(manifest)
    return manifest.to_json()
