"""The command's local Prefect server, as Prefect's own API reports its settings."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from pipelines.flows.server import LocalApi


def server_settings() -> dict[str, dict[str, bool]]:
    """Start a command's local server; return its services' settings as its API reports them."""
    with LocalApi() as api:
        assert api.connect() is not None
        with urllib.request.urlopen(f"{api.url}/admin/settings", timeout=30) as answer:
            services: dict[str, dict[str, bool]] = json.load(answer)["server"]["services"]
    return services


@pytest.fixture
def local_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    for name in os.environ:
        if name.startswith("PREFECT_SERVER_SERVICES_"):
            monkeypatch.delenv(name)


@pytest.mark.slow
@pytest.mark.usefixtures("local_env")
def test_the_local_server_runs_the_recorders_without_automations_unless_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    services = server_settings()
    # What records the runs stays: task runs and events.
    assert services["task_run_recorder"]["enabled"] is True
    assert services["event_persister"]["enabled"] is True
    # Automations and the event log on a discarded output are off.
    assert services["triggers"]["enabled"] is False
    assert services["event_logger"]["enabled"] is False
    # A user's own setting wins.
    monkeypatch.setenv("PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED", "true")
    assert server_settings()["triggers"]["enabled"] is True
