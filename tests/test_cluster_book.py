"""A book summed by key ranges on a Dask cluster (an external `dask scheduler` and two
`dask worker` processes, each with its own TMPDIR and HOME) from a bucket of moto's S3 server:
the local book's bytes; a range that fails leaves no book; a worker that dies is replaced."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from pipelines.books import build as book_build
from pipelines.books.build import build_book
from pipelines.books.settings import BookSettings
from pipelines.flows.cluster import cluster_executor
from pipelines.monthly.build import build_month
from pipelines.monthly.publish import published_paths
from pipelines.warehouse.layout import partition_file
from tests.conftest import need_module, run_cli
from tests.moto_s3 import MotoServer
from tests.serving import free_port
from tests.test_object_storage import SAMPLE, moto, s3_env, settings  # noqa: F401
from tests.test_stored_warehouse import two_months

MONTHS = ("2024-01", "2024-02")


@pytest.fixture(scope="module")
def cluster(moto: MotoServer) -> Iterator[str]:  # noqa: F811
    """A scheduler and two workers (processes of their own, each with its own TMPDIR, HOME and
    PREFECT_HOME, reaching the moto server); yields the scheduler's address."""
    need_module("distributed", "'chesspipe[dask]'")
    folder = Path(tempfile.mkdtemp(prefix="cl-", dir="/tmp"))  # (short: unix socket paths)
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).parent / "dask")
    procs = []
    for n, command in enumerate(
        [
            [
                dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--dashboard-address",
                ":0",
            ],
            *(
                [
                    dask,
                    "worker",
                    address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                ]
                for _ in range(2)
            ),
        ]  # fmt: skip
    ):
        home = folder / str(n)
        for sub in ("tmp", "home", "prefect"):
            (home / sub).mkdir(parents=True)
        env = dict(os.environ, **moto.env, TMPDIR=str(home / "tmp"), HOME=str(home / "home"))
        env["PREFECT_HOME"] = str(home / "prefect")
        env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
        procs.append(
            subprocess.Popen(
                command,
                cwd=home,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=(home / "log").open("wb"),
                start_new_session=True,
            )  # fmt: skip
        )
    try:
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def filled(moto: MotoServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:  # noqa: F811
    """Two months in a bucket and in a local folder: (warehouse URL, local warehouse)."""
    local = tmp_path_factory.mktemp("local")
    return two_months(moto, "cluster-book", local), local / "wh"


@pytest.mark.slow
def test_a_book_summed_on_the_cluster_from_the_bucket_is_the_local_book(
    cluster: str,
    filled: tuple[str, Path],
    s3_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    from distributed import Client

    warehouse, local = filled
    reference, ours = tmp_path / "local.bin", tmp_path / "cluster.bin"
    common = ["--months", "2024-01..2024-02", "--min-games", "2"]
    run_cli("book", "build", "--warehouse", str(local), "--out", str(reference), *common)
    with Client(cluster) as client:
        before = sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())
        proc = run_cli(
            "book", "build", "--warehouse", warehouse, "--out", str(ours), *common,
            "--ranges", "16", "--dask-address", cluster,
        )  # fmt: skip
        executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert ours.read_bytes() == reference.read_bytes() and reference.stat().st_size > 16 * 500
    assert '"entries"' in proc.stdout
    # 16 ranges and 2 months' hashes ran as tasks, on both workers.
    assert sum(executed.values()) - before >= 18 and all(executed.values())


@pytest.mark.slow
def test_a_backfill_on_the_cluster_builds_its_book_there_into_the_bucket(
    cluster: str,
    moto: MotoServer,  # noqa: F811
    filled: tuple[str, Path],
    s3_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    import json

    _, local = filled
    bucket = moto.create_bucket("fresh-cluster")  # the months are built on the cluster
    warehouse = f"s3://{bucket}/wh"
    proc = run_cli(
        "backfill", "--months", "2024-01..2024-02", "--source", SAMPLE,
        "--warehouse", warehouse, "--books", f"s3://{bucket}/books",
        "--min-rating", "0", "--min-games", "2", "--book", "on-cluster",
        "--dask-address", cluster,
        env={"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": "",
             "PREFECT_SERVER_ANALYTICS_ENABLED": "false"},
    )  # fmt: skip
    summary = json.loads(proc.stdout)
    assert [m["status"] for m in summary[:2]] == ["built", "built"]
    assert summary[-1]["book"] == f"s3://{bucket}/books/on-cluster.bin"
    objects = moto.objects(bucket)
    for month in MONTHS:  # the months the cluster built: a local run's bytes
        assert objects[f"wh/{partition_file(Path('.'), month).as_posix()}"] == (
            partition_file(local, month).read_bytes()
        )
        local_book = published_paths(local.parent / "books", month)[0]
        assert objects[f"books/{local_book.name}"] == local_book.read_bytes()
    assert not [k for k in objects if "/.staging/" in k or "/.locks/" in k]
    reference = tmp_path / "reference.bin"
    run_cli("book", "build", "--warehouse", str(local), "--months", "2024-01..2024-02",
            "--out", str(reference), "--min-games", "2")  # fmt: skip
    assert moto.objects(bucket, "books/on-cluster.bin")["books/on-cluster.bin"] == (
        reference.read_bytes()
    )


@pytest.mark.slow
def test_a_month_split_over_the_cluster_is_the_month_one_process_builds(
    cluster: str, tmp_path: Path, games_2021: Path
) -> None:
    import json

    import pyarrow.parquet as pq
    from distributed import Client

    from pipelines.games.frames import write_framed_zstd
    from tests.recount import read_text

    month = "2021-10"
    dump = tmp_path / f"{month}.pgn.zst"
    write_framed_zstd(dump, read_text(games_2021).encode(), frame_size=200_000, level=1)
    single = build_month(str(dump), month, tmp_path / "one-wh", tmp_path / "one-books", settings())
    with Client(cluster) as client:
        before = client.run(lambda dask_worker: dask_worker.state.executed_count)
        proc = run_cli(
            "backfill", "--months", month, "--source", str(tmp_path / "{month}.pgn.zst"),
            "--warehouse", str(tmp_path / "wh"), "--books", str(tmp_path / "books"),
            "--min-rating", "0", "--min-games", "2", "--dask-address", cluster, "--split",
            env={"PREFECT_HOME": str(tmp_path / "prefect"), "PREFECT_API_URL": "",
                 "PREFECT_SERVER_ANALYTICS_ENABLED": "false"},
        )  # fmt: skip
        after = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert json.loads(proc.stdout)[0]["status"] == "built"
    # The month's units of frames ran on both workers (besides the month's own task).
    assert all(after[w] - before.get(w, 0) >= 2 for w in after), (before, after)
    assert pq.read_table(partition_file(tmp_path / "wh", month)).equals(
        pq.read_table(partition_file(tmp_path / "one-wh", month))
    )
    book = published_paths(tmp_path / "books", month)[0]
    assert book.read_bytes() == published_paths(tmp_path / "one-books", month)[0].read_bytes()
    record = json.loads(book.with_suffix(".json").read_text())
    assert record["ingest"]["workers"] == "executor"
    assert record["ingest"]["games_kept"] == single.ingest.games_kept


def test_split_without_a_cluster_is_refused_in_one_line(tmp_path: Path) -> None:
    proc = run_cli(
        "backfill", "--months", "2024-01", "--source", SAMPLE, "--warehouse",
        str(tmp_path / "wh"), "--books", str(tmp_path / "books"), "--split", check=False,
    )  # fmt: skip
    said = proc.stderr.strip()
    assert proc.returncode != 0 and "\n" not in said and "--split" in said, said
    assert not (tmp_path / "wh").exists()


@pytest.mark.slow
def test_a_worker_killed_mid_month_the_month_is_built_again_whole(
    cluster: str,
    moto: MotoServer,  # noqa: F811
    filled: tuple[str, Path],
    s3_env: dict[str, str],  # noqa: F811
    tmp_path: Path,
) -> None:
    import json
    import threading
    import time

    from pipelines.sources.object_lease import Holder
    from tests.loopback_http import LoopbackServer

    _, local = filled
    bucket = moto.create_bucket("killed-worker")
    gate = threading.Event()
    with LoopbackServer() as server:
        data = Path(SAMPLE.format(month="2024-01")).read_bytes()
        server.add_dump("/dumps", "lichess_2024-01.pgn.zst", data, gate=gate)
        backfill = subprocess.Popen(
            [sys.executable, "-m", "pipelines", "backfill", "--months", "2024-01",
             "--source", f"{server.base}/dumps/lichess_{{month}}.pgn.zst",
             "--warehouse", f"s3://{bucket}/wh", "--books", f"s3://{bucket}/books",
             "--min-rating", "0", "--min-games", "2", "--dask-address", cluster],
            env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent),
                     PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_API_URL="",
                     PREFECT_SERVER_ANALYTICS_ENABLED="false"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        try:
            lease = "books/.locks/build-2024-01.lease"
            deadline = time.monotonic() + 120
            while lease not in (found := moto.objects(bucket, lease)):
                assert backfill.poll() is None and time.monotonic() < deadline, "no month began"
                time.sleep(0.05)
            holder = Holder.parse(found[lease])
            assert holder is not None and holder.pid != backfill.pid  # a worker's process
            os.kill(holder.pid, signal.SIGKILL)  # the machine is lost mid-month
            gate.set()
            out, err = backfill.communicate(timeout=300)
        finally:
            gate.set()
            if backfill.poll() is None:
                os.killpg(backfill.pid, signal.SIGKILL)
                backfill.wait()
    assert backfill.returncode == 0, err.decode()[-2000:]
    assert json.loads(out)[0]["status"] == "built"
    objects = moto.objects(bucket)
    assert objects[f"wh/{partition_file(Path('.'), '2024-01').as_posix()}"] == (
        partition_file(local, "2024-01").read_bytes()
    )
    assert not [k for k in objects if "/.staging/" in k or "/.locks/" in k]


@pytest.mark.slow
def test_a_range_that_fails_leaves_no_book_and_the_previous_one_stays(
    filled: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, local = filled
    out = tmp_path / "book.bin"
    build_book(local, "2024-01..2024-02", out, BookSettings(2))
    previous = out.read_bytes()
    real = book_build.range_entries
    calls: list[int] = []

    def failing(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 5:
            raise OSError("the worker's disk failed")
        return real(*args)

    monkeypatch.setattr(book_build, "range_entries", failing)
    with ThreadPoolExecutor(2) as executor, pytest.raises(OSError, match="disk failed"):
        build_book(local, "2024-01..2024-02", out, BookSettings(1), ranges=12, executor=executor)
    assert out.read_bytes() == previous and len(calls) >= 5
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def die_once(marker: str) -> int:
    """Kill this worker's process the first time (a machine lost mid-task); then answer."""
    if not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return os.getpid()


@pytest.mark.slow
def test_a_task_whose_worker_died_runs_again(cluster: str, tmp_path: Path) -> None:
    marker = str(tmp_path / "died")
    with cluster_executor(cluster) as executor:
        assert executor is not None
        assert executor.submit(die_once, marker).result(timeout=120) > 0
    assert Path(marker).exists()


@pytest.mark.slow
def test_a_cluster_that_does_not_answer_fails_the_book_in_one_line(
    filled: tuple[str, Path], tmp_path: Path
) -> None:
    _, local = filled
    out = tmp_path / "x.bin"
    closed = f"tcp://127.0.0.1:{free_port()}"
    proc = run_cli("book", "build", "--warehouse", str(local), "--months", "all", "--out",
                   str(out), "--dask-address", closed, check=False)  # fmt: skip
    said = proc.stderr.strip()
    assert proc.returncode != 0 and "\n" not in said and "does not answer" in said, said
    assert not out.exists()
