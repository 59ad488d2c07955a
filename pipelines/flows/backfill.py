"""The backfill flow: many months built in parallel through a Prefect task runner (e.g. Dask)."""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from pipelines.errors import ChesspipeError
from pipelines.flows.monthly import LoggedProgress, publish_artifact
from pipelines.flows.options import BuildOptions
from pipelines.monthly.build import build_month
from pipelines.monthly.manifest import MonthManifest
from pipelines.warehouse.layout import month_range


@task(name="build-month", cache_policy=NO_CACHE)
def build_month_task(
    source: str, month: str, warehouse: str, books: str, options: BuildOptions, force: bool
) -> MonthManifest:
    """Build one month's book wherever the task runner puts this task."""
    logger = get_run_logger()
    manifest = build_month(
        source.format(month=month),
        month,
        warehouse,
        books,
        options.month_settings(),
        options.download(),
        force=force,
        progress=LoggedProgress(logger, options.log_every, label=f"{month}: "),
    )
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
) -> list[dict[str, Any]]:
    """Build the book of every month of `months` (YYYY-MM..YYYY-MM); `source` holds `{month}`.

    Returns the run manifests of the months built, as their JSON objects.
    """
    options = options or BuildOptions()
    logger = get_run_logger()
    wanted = month_range(months)
    if "{month}" not in source and len(wanted) > 1:
        raise ChesspipeError("a backfill source must contain {month}, e.g. lichess:{month}")
    futures = [
        build_month_task.with_options(name=f"build-month-{month}").submit(
            source, month, warehouse, books, options, force
        )
        for month in wanted
    ]
    manifests: list[dict[str, Any]] = []
    failed: list[str] = []
    for month, future in zip(wanted, futures, strict=True):
        try:
            manifest = future.result()
        except Exception as exc:  # one month's failure must not hide the others' results
            logger.error("%s failed: %s", month, exc)
            failed.append(f"{month} ({exc})")
            continue
        manifests.append(manifest.to_json())
        publish_artifact(manifest)
    if failed:
        raise ChesspipeError(
            f"backfill: {len(failed)} of {len(wanted)} months failed: " + "; ".join(failed)
        )
    return manifests
