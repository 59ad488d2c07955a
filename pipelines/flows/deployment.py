"""The monthly schedule: a deployment that builds the previous month's book, served locally.

Run `python -m pipelines.flows.deployment --warehouse DIR --books DIR` (or
`chesspipe serve-monthly ...`) to serve it; each run on the cron builds the month before.
"""

from __future__ import annotations

import argparse
from typing import Any

from pipelines.flows.monthly import build_month_flow
from pipelines.flows.options import BuildOptions

#: The dumps of a month appear in the first days of the next: build on the 3rd at 06:00 UTC.
MONTHLY_CRON = "0 6 3 * *"
DEPLOYMENT_NAME = "monthly-book"


def monthly_deployment(
    warehouse: str,
    books: str,
    source: str = "lichess:{month}",
    cron: str = MONTHLY_CRON,
    options: BuildOptions | None = None,
    name: str = DEPLOYMENT_NAME,
) -> Any:
    """Return the deployment that builds the previous month on the cron (month left unset)."""
    parameters: dict[str, Any] = {"source": source, "warehouse": warehouse, "books": books}
    if options is not None:
        parameters["options"] = options.model_dump()
    return build_month_flow.to_deployment(
        name=name,
        cron=cron,
        parameters=parameters,
        description="Build the previous month's lichess book on the 3rd of each month.",
        tags=["chesspipe", "monthly"],
    )


def serve_monthly(
    warehouse: str,
    books: str,
    source: str = "lichess:{month}",
    cron: str = MONTHLY_CRON,
    options: BuildOptions | None = None,
) -> None:
    """Serve the monthly deployment from this process until interrupted."""
    from prefect import serve

    serve(monthly_deployment(warehouse, books, source, cron, options))


def main() -> None:
    """Serve the monthly deployment with default build options."""
    parser = argparse.ArgumentParser(description="Serve the monthly book deployment.")
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--books", required=True)
    parser.add_argument("--source", default="lichess:{month}")
    parser.add_argument("--cron", default=MONTHLY_CRON)
    args = parser.parse_args()
    serve_monthly(args.warehouse, args.books, args.source, args.cron)


if __name__ == "__main__":
    main()
