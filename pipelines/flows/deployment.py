"""The monthly deployment: a Prefect deployment that builds the previous month's book.

`chesspipe serve-monthly` serves it; each run on the cron builds the month before. Without
PREFECT_API_URL a local Prefect server (scheduler and UI) is started for the purpose.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError
from pipelines.flows.monthly import build_month_flow
from pipelines.flows.options import BuildOptions
from pipelines.flows.server import UI_PORT, wait_until_healthy
from pipelines.monthly.schedule import MONTHLY_CRON, SOURCE_TEMPLATE

DEPLOYMENT_NAME = "monthly-book"


def monthly_deployment(
    warehouse: str,
    books: str,
    source: str = SOURCE_TEMPLATE,
    cron: str = MONTHLY_CRON,
    options: BuildOptions | None = None,
    name: str = DEPLOYMENT_NAME,
) -> Any:
    """Return the deployment that builds the previous month on the cron (month left unset)."""
    parameters: dict[str, Any] = {"source": source, "warehouse": warehouse, "books": books}
    if options is not None:
        parameters["options"] = options.record()
    return build_month_flow.to_deployment(
        name=name,
        cron=cron,
        parameters=parameters,
        description="Build the previous month's lichess book on the 3rd of each month.",
        tags=["chesspipe", "monthly"],
    )


#: What a local server that exited at start-up is said to need, unless a caller says how its
#: user sets the port (a command line's flag).
SERVER_HINT = "port in use? or set PREFECT_API_URL to a running server"


@contextmanager
def prefect_server(
    port: int = UI_PORT, timeout: float = 180.0, hint: str = SERVER_HINT
) -> Iterator[str]:
    """Yield the API URL of a Prefect server: PREFECT_API_URL's, or a local one started here.

    A schedule needs a server with its scheduler running; Prefect's ephemeral mode has none.
    The local server (with its UI) lives as long as the block; `hint` says what to do when it
    exits at start-up.
    """
    from prefect.settings import PREFECT_API_URL, temporary_settings

    configured = PREFECT_API_URL.value()
    if configured:
        yield configured
        return
    prefect = Path(sys.executable).with_name("prefect")
    command = [str(prefect) if prefect.exists() else "prefect", "server", "start"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--analytics-off"]
    try:
        # Its own session: Ctrl-C stops the runner first; the server is stopped after it.
        server = subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        raise ChesspipeError(f"cannot start a Prefect server ({exc})") from None
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_until_healthy(
            server,
            url,
            timeout=timeout,
            interval=0.5,
            hint=hint,
        )
        print(f"Prefect server and UI on http://127.0.0.1:{port}", file=sys.stderr)
        with temporary_settings(updates={PREFECT_API_URL: url}):
            yield url
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def serve_monthly(
    deployment: Callable[[], Any], port: int = UI_PORT, hint: str = SERVER_HINT
) -> None:
    """Serve a deployment from this process until interrupted: the one `deployment` returns
    once the server is up (`monthly_deployment` with its arguments bound; `hint`: as for
    `prefect_server`)."""
    from prefect import serve

    with prefect_server(port, hint=hint):
        serve(deployment())
