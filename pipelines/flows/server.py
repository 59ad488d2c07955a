"""A command's own local Prefect API: started early, silent, and never outliving the command.

Without PREFECT_API_URL, Prefect starts a temporary server for each process that runs a flow,
after the process has imported Prefect, in the process group of the terminal (Ctrl-C kills it
before the flow can record the interruption) and without tying its life to the command's.
`LocalApi` starts the same server (Prefect's app under uvicorn) itself:

- before Prefect is imported, so the server boots while the command imports its libraries;
- in a session of its own, so a Ctrl-C or SIGTERM to the command's process group reaches the
  command, which records the run's end through the server and then stops it;
- with its output discarded, and Prefect's log and event queues drained before it stops;
- without the services a command's runs do not need (automations, event logger, streams out,
  block registration), without flow run heartbeats, and without a UI (runs' log lines do not
  point at one, unless PREFECT_UI_URL names one);
- in a process of its own making (`flows.prefect_internals`, the one module that patches
  Prefect's internals: killed by the kernel when the command dies, even by SIGKILL, and a
  faster start-up).

With PREFECT_API_URL set (in the environment or the active Prefect profile), the configured
server is used and nothing is started: a persistent server (`prefect server start`) saves the
start-up of a temporary one on every command.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from types import TracebackType
from typing import Any

from pipelines.errors import ChesspipeError
from pipelines.flows import prefect_internals

#: Seconds to wait for the server to answer, unless Prefect's own setting says otherwise.
STARTUP_TIMEOUT = 60.0

#: The port of a Prefect server with its UI started to serve a deployment: Prefect's own.
UI_PORT = 4200

#: The settings Prefect gives its temporary server (no UI, the ephemeral server's services),
#: but not PREFECT__SERVER_FINAL: with FastAPI 0.137+ it only adds a full garbage collection
#: (~0.15 s) before the app is frozen.
_SERVER_ENV = {
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
}


#: Work of Prefect's temporary server that a command's flow runs do not need, off unless set:
#: automations (triggers and their actions: loading them competes with the run's first
#: requests), printing every event to the discarded output, streaming events and logs out to
#: websocket clients, and registering block types at start-up (it imports every installed
#: Prefect collection, prefect-dask's Dask among them, ~0.3 s; no run here uses blocks, and a
#: `prefect server start` on the same database registers them). Runs, task runs (the task run
#: recorder), events and logs are recorded.
_SERVICES_OFF = {
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_EVENT_LOGGER_ENABLED": "false",
    "PREFECT_API_EVENTS_STREAM_OUT_ENABLED": "false",
    "PREFECT_SERVER_LOGS_STREAM_OUT_ENABLED": "false",
    "PREFECT_API_BLOCKS_REGISTER_ON_START": "false",
    "PREFECT_MEMOIZE_BLOCK_AUTO_REGISTRATION": "false",
}


#: Prefect's settings of flow run heartbeats (a user's setting keeps them on).
_HEARTBEAT_SETTINGS = ("PREFECT_FLOWS_HEARTBEAT_FREQUENCY", "PREFECT_RUNNER_HEARTBEAT_FREQUENCY")


class _DrainingNotice(logging.Filter):
    """Drops the notice a Prefect queue logs when it is stopped with items left to send."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Still processing items")


@contextmanager
def _quiet_while_draining(*services: type) -> Iterator[None]:
    """Keep the "Still processing items" notices of `services` (Prefect's queue services, each
    logging under its class name) off the terminal while the command drains them itself."""
    notice = _DrainingNotice()
    loggers = [logging.getLogger(service.__name__) for service in services]
    for logger in loggers:
        logger.addFilter(notice)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(notice)


def wait_until_healthy(
    process: subprocess.Popen[bytes],
    url: str,
    *,
    timeout: float,
    interval: float = 0.05,
    hint: str,
) -> None:
    """Wait until the Prefect server `process` answers on its API `url`; fail clearly if not.

    `hint` says, in the message of a server that exited, what the user can do.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ChesspipeError(
                f"the Prefect server exited with status {process.returncode} ({hint})"
            )
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(interval)
    raise ChesspipeError(f"the Prefect server did not answer on {url} within {timeout:.0f} s")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LocalApi:
    """The Prefect API a command's flow runs use: the configured one, or a local server.

    Enter it before importing Prefect (the server starts booting), import what the command
    needs, then call `connect()`, which waits for the server and points Prefect at it. Leaving
    the block drains Prefect's log and event queues and stops the server.
    """

    def __init__(self, *, startup_timeout: float | None = None) -> None:
        self.startup_timeout = startup_timeout
        self.url: str | None = None
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._connected = False
        self._stack = ExitStack()

    def __enter__(self) -> LocalApi:
        if os.environ.get("PREFECT_API_URL"):
            return self  # a configured server: nothing to start
        self._start()
        return self

    def _start(self) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/api"
        env = {**_SERVICES_OFF, **os.environ, **_SERVER_ENV}
        env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
        if "prefect.settings" in sys.modules:  # settings changed in this process count too
            from prefect.settings import get_current_settings

            env.update(get_current_settings().to_environment_variables(exclude_unset=True))
            env.update(_SERVER_ENV)
        command = [sys.executable, "-m", prefect_internals.__name__, str(os.getpid())]
        command += ["--factory", f"{prefect_internals.FACTORY_MODULE}:create_app"]
        command += ["--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--log-level", "error", "--lifespan", "on"]
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ChesspipeError(f"cannot start a local Prefect server ({exc})") from None

    def connect(self) -> str | None:
        """Wait for the local server and point Prefect at it; return its URL (None: configured).

        A server configured only in the active Prefect profile is used, and the one started
        here stopped.
        """
        from prefect.settings import (
            PREFECT_API_URL,
            PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
            PREFECT_UI_URL,
            temporary_settings,
        )

        # Whichever server the runs use, what they queue is sent before the command ends
        # (`__exit__`): a configured one too, else Prefect drains at exit with a notice.
        if self._process is None or PREFECT_API_URL.value():
            self._stop_server()  # none was started, or the profile names a server
            self._connected = True
            return None
        self._wait_until_healthy()
        self._connected = True
        assert self.url is not None
        updates: dict[Any, Any] = {PREFECT_API_URL: self.url}
        # No heartbeats: they let a server's automations mark a silent run crashed, and this
        # server has none and dies with the command. Joining their thread cost up to 1 s at
        # the end of every flow run (it sleeps in steps of 1 s).
        if not any(name in os.environ for name in _HEARTBEAT_SETTINGS):
            updates[PREFECT_FLOWS_HEARTBEAT_FREQUENCY] = None
        # No UI is served: no "View at" line of a run pointing at one (unless one is named).
        if PREFECT_UI_URL.value() is None:
            updates[PREFECT_UI_URL] = ""
        self._stack.enter_context(temporary_settings(updates=updates))
        # Processes this command starts (Dask workers) use the same server.
        os.environ["PREFECT_API_URL"] = self.url
        self._stack.callback(os.environ.pop, "PREFECT_API_URL", None)
        return self.url

    def _wait_until_healthy(self) -> None:
        assert self._process is not None and self.url is not None
        timeout = self.startup_timeout
        if timeout is None:
            from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

            timeout = max(STARTUP_TIMEOUT, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value())
        wait_until_healthy(
            self._process,
            self.url,
            timeout=timeout,
            hint="set PREFECT_API_URL to a running server to use that one",
        )

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if self._connected:
                # Send what is queued while the server still listens.
                from prefect.events.worker import EventsWorker
                from prefect.logging.handlers import APILogWorker

                with _quiet_while_draining(APILogWorker, EventsWorker):
                    APILogWorker.drain_all(timeout=10)
                    EventsWorker.drain_all(timeout=10)
        finally:
            self._stack.close()
            self._stop_server()

    def _stop_server(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
