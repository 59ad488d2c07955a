"""`chesspipe serve` says where it is and what it serves, logs requests when asked, and a port
in use is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from pipelines.games.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from schemas.speed import Speed
from tests.conftest import ROOT, run_cli
from tests.sample_tool import make_sample
from tests.serving import free_port

MONTHS = make_sample.SAMPLE_MONTHS


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("warehouse")
    for month in MONTHS:
        ingest(str(make_sample.sample_path(month)), month, folder,
               IngestSettings(GameFilter(0, frozenset(Speed), True)))  # fmt: skip
    return folder


def _serve(warehouse: Path, port: int, *options: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines", "serve", "--warehouse", str(warehouse),
         "--port", str(port), *options],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
    )  # fmt: skip


@pytest.mark.slow
def test_the_server_says_where_it_is_and_logs_when_asked(warehouse: Path) -> None:
    port = free_port()
    server = _serve(warehouse, port, "--verbose")
    try:
        assert server.stdout is not None  # stdout and stderr (uvicorn logs to both), merged
        lines = []
        while not (line := server.stdout.readline()).startswith("chesspipe: serving"):
            assert line, "the server ended before it said where it is"
            lines.append(line)
        # The index holds a row per position, move, month, speed and rating group.
        rows = run_cli("sql", "--warehouse", str(warehouse), "--format", "csv",
                       "SELECT count(*) FROM (SELECT DISTINCT key, move, month, speed, "
                       "rating_group FROM move_stats)").stdout.splitlines()[1]  # fmt: skip
        assert line.rstrip("\n") == (
            f"chesspipe: serving http://127.0.0.1:{port}/: explorer over 2 months "
            f"({MONTHS[0]}..{MONTHS[-1]}, {int(rows):,} index rows), no tablebase"
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lichess?play=e2e4") as answer:
            assert json.load(answer)["moves"]
        while "GET /lichess?play=e2e4" not in (logged := server.stdout.readline()):
            assert logged, "no request logged"
        assert " 200" in logged
        # A second server on the same port: one line, at once.
        second = run_cli("serve", "--warehouse", str(warehouse), "--port", str(port),
                         check=False)  # fmt: skip
        assert second.returncode == 1
        assert second.stderr.splitlines() == [
            f"chesspipe: error: port {port} on 127.0.0.1 is in use (another server?); "
            "choose another --port"
        ]
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_a_quiet_server_logs_no_request(warehouse: Path) -> None:
    port = free_port()
    server = _serve(warehouse, port)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith(f"chesspipe: serving http://127.0.0.1:{port}/")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lichess") as answer:
            assert answer.status == 200
    finally:
        server.terminate()
        rest, _ = server.communicate(timeout=30)
    assert "GET /lichess" not in rest


@pytest.mark.slow
def test_the_workers_die_with_a_server_killed_with_sigkill(warehouse: Path) -> None:
    """`serve --workers 2` killed with -9 left both uvicorn workers, their replay workers and
    the resource tracker running and answering: they end with it."""
    import signal
    import time

    from tests.test_stopping import alive, descendants

    port = free_port()
    server = _serve(warehouse, port, "--workers", "2")
    try:
        deadline = time.monotonic() + 120
        while True:  # every worker answers a long line (the replay workers start)
            try:
                play = ",".join(["g1f3", "g8f6", "f3g1", "f6g8"] * 10)
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/lichess?play={play}"):
                    pass
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        started = descendants(server.pid)
        assert len(started) >= 2, started
        os.kill(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
        until = time.monotonic() + 20
        while alive(started) and time.monotonic() < until:
            time.sleep(0.1)
        assert not alive(started), f"left running: {sorted(alive(started))}"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
