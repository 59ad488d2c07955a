"""The backfill flow: many months built in parallel through a Prefect task runner (e.g. Dask)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from pipelines.books.build import build_book
from pipelines.errors import ChesspipeError
from pipelines.flows.cluster import cluster_executor, cluster_of_this_task
from pipelines.flows.monthly import build_logged, publish_artifact
from pipelines.flows.options import BuildOptions
from pipelines.monthly.manifest import MonthManifest
from pipelines.monthly.publish import publish_range_book, range_book_url
from pipelines.progress import MonthsProgress
from pipelines.sources.object_store import is_remote
from pipelines.warehouse.months import select_months


class MonthsFailed(ChesspipeError):
    """Months of a backfill failed (the others were built); each month's error is kept."""

    def __init__(self, total: int, failures: list[tuple[str, BaseException]]) -> None:
        self.total = total
        self.failures = failures
        super().__init__(self.said(str))

    def said(self, say: Callable[[BaseException], str]) -> str:
        """The message, each month's error said by `say` (a command's words for it)."""
        each = "; ".join(f"{month} ({say(error)})" for month, error in self.failures)
        return f"backfill: {len(self.failures)} of {self.total} months failed: {each}"

    def __reduce__(self) -> tuple[Any, ...]:
        return MonthsFailed, (self.total, self.failures)


@task(name="build-month", cache_policy=NO_CACHE)
def build_month_task(
    source: str,
    month: str,
    warehouse: str,
    books: str,
    options: BuildOptions,
    force: bool,
    progress: MonthsProgress | None = None,
    split: bool = False,
) -> MonthManifest:
    """Build one month's book wherever the task runner puts this task; `progress` (in this
    process only: the CLI's bar over the months) hears of it too. With `split` (on a Dask
    worker), the month's source is read by units of frames on every worker of its cluster."""
    logger = get_run_logger()
    also = progress.month(month) if progress is not None else None
    with ExitStack() as stack:
        executor = stack.enter_context(cluster_of_this_task()) if split else None
        manifest = build_logged(
            options,
            source.format(month=month),
            month,
            warehouse,
            books,
            force=force,
            logger=logger,
            also=also,
            label=f"{month}: ",
            executor=executor,
        )
    if progress is not None:
        progress.finished(month)
    logger.info("%s: %s", month, manifest.status)
    return manifest


@flow(name="backfill")
def backfill_flow(
    months: str,
    source: str,
    warehouse: str,
    books: str,
    options: BuildOptions | None = None,
    force: bool = False,
    book: str | None = None,
    progress: Any = None,
    dask_address: str | None = None,
    split: bool = False,
) -> list[dict[str, Any]]:
    """Build the book of every month of `months` (a list or ranges); `source` holds `{month}`.

    `progress` is a MonthsProgress of this process (the CLI's bar; not for a task runner of
    other processes, such as Dask's).

    Returns the run manifests of the months built, as their JSON objects. With `book` (a name),
    one book over all the months is then built into BOOKS/NAME.bin, its manifest beside it;
    with `dask_address`, its key ranges are summed on that cluster. `split` (on a Dask task
    runner): each month's source is read by units of frames on all the cluster's workers.
    """
    options = options or BuildOptions()
    logger = get_run_logger()
    wanted = select_months(months)
    if "{month}" not in source and len(wanted) > 1:
        raise ChesspipeError("a backfill source must contain {month}, e.g. lichess:{month}")
    if book is not None:
        range_book = range_book_url(books, book, wanted)  # a bad name fails before the months
    futures = [
        build_month_task.with_options(name=f"build-month-{month}").submit(
            source, month, warehouse, books, options, force, progress, split
        )
        for month in wanted
    ]
    manifests: list[dict[str, Any]] = []
    failed: list[tuple[str, BaseException]] = []
    for month, future in zip(wanted, futures, strict=True):
        try:
            manifest = future.result()
        except Exception as exc:  # one month's failure must not hide the others' results
            logger.error("%s failed: %s", month, exc)
            failed.append((month, exc))
            continue
        manifests.append(manifest.to_json())
        publish_artifact(manifest)
    if failed:
        raise MonthsFailed(len(wanted), failed)
    if book is not None:
        range_book_task(warehouse, wanted, range_book, options, dask_address)
    return manifests


@task(name="build-range-book", cache_policy=NO_CACHE)
def range_book_task(
    warehouse: str,
    months: list[str],
    out: str,
    options: BuildOptions,
    dask_address: str | None = None,
) -> None:
    """Build one book over all the months of a backfill, read where the months are (its key
    ranges summed on the cluster at `dask_address`); into a store, it is published with its
    manifest as a pair."""
    where: Path | str = warehouse if is_remote(warehouse) else Path(warehouse)
    with cluster_executor(dask_address) as executor:
        if is_remote(out):
            publish_range_book(where, months, out, options.settings.book, executor=executor)
        else:
            build_book(where, months, Path(out), options.settings.book, executor=executor)
