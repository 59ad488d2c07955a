"""An existing Dask cluster is asked before any work: a scheduler that does not answer, and
workers on another host with no Prefect server they can reach, each end in one line."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.errors import ChesspipeError
from pipelines.flows.cluster import check_cluster, is_this_machine
from tests.conftest import need_module, run_cli
from tests.serving import free_port

#: An address of TEST-NET-3 (RFC 5737): no machine's, never routed.
ELSEWHERE = "203.0.113.7"


@pytest.fixture(scope="module")
def foreign_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A `dask scheduler` and a `dask worker` that says it is reached at another host."""
    need_module("distributed", "'chesspipe[dask]'")
    folder = tmp_path_factory.mktemp("cluster")
    port, worker_port = free_port(), free_port()
    address = f"tcp://127.0.0.1:{port}"
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__DAEMON="False")
    procs = [
        subprocess.Popen(
            [str(bin_dir / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
             "--dashboard-address", ":0"],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        ),
        subprocess.Popen(
            [str(bin_dir / "dask"), "worker", address, "--nworkers", "1", "--nthreads", "1",
             "--listen-address", f"tcp://127.0.0.1:{worker_port}",
             "--contact-address", f"tcp://{ELSEWHERE}:{worker_port}", "--no-dashboard"],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,
        ),
    ]  # fmt: skip
    try:
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=60)
        yield address
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_this_machine_is_told_from_another() -> None:
    assert is_this_machine("127.0.0.1") and is_this_machine("localhost")
    assert is_this_machine(socket.gethostname())
    assert not is_this_machine(ELSEWHERE)
    assert not is_this_machine("no-such-host.invalid")


def backfill(tmp_path: Path, address: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "backfill", "--months", "2024-01", "--source", str(tmp_path / "{month}.pgn.zst"),
        "--warehouse", str(tmp_path / "wh"), "--books", str(tmp_path / "books"),
        "--dask-address", address,
        check=False,
        env={"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": "",
             "PREFECT_SERVER_ANALYTICS_ENABLED": "false", **env},
    )  # fmt: skip


@pytest.mark.slow
def test_workers_elsewhere_without_a_prefect_server_they_reach_fail_before_any_work(
    foreign_cluster: str, tmp_path: Path
) -> None:
    proc = backfill(tmp_path, foreign_cluster)
    assert proc.returncode != 0
    said = proc.stderr.strip()
    assert "\n" not in said and "Traceback" not in said, said
    assert f"runs on {ELSEWHERE}, which cannot reach this command's Prefect server" in said
    assert "set PREFECT_API_URL" in said
    assert not (tmp_path / "wh").exists() and not (tmp_path / "books").exists()
    # A Prefect server named by PREFECT_API_URL is the user's to make reachable: no objection.
    check_cluster(foreign_cluster, local_server=None)
    with pytest.raises(ChesspipeError, match=ELSEWHERE):
        check_cluster(foreign_cluster, local_server="http://127.0.0.1:4200/api")


@pytest.mark.slow
def test_a_scheduler_that_does_not_answer_fails_in_one_line(tmp_path: Path) -> None:
    need_module("distributed", "'chesspipe[dask]'")
    started = time.monotonic()
    proc = backfill(tmp_path, f"tcp://127.0.0.1:{free_port()}")
    assert proc.returncode != 0 and time.monotonic() - started < 60
    said = proc.stderr.strip()
    assert "\n" not in said and "Traceback" not in said, said
    assert "the Dask scheduler at tcp://127.0.0.1:" in said and "does not answer" in said
    assert not (tmp_path / "wh").exists()
