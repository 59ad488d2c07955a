"""Real Prefect flow runs (local ephemeral server): monthly build, schedule, backfill on Dask."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import zstandard

from pipelines.books.settings import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.flows.options import BuildOptions
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.settings import IngestSettings
from pipelines.monthly.build import build_month
from pipelines.monthly.publish import published_paths, range_book_path
from pipelines.monthly.settings import MonthSettings
from pipelines.warehouse.layout import partition_file
from tests.conftest import ROOT, run_cli

OPTIONS = BuildOptions(
    settings=MonthSettings(IngestSettings(GameFilter(min_rating=0)), BookSettings(min_games=2)),
    log_every=0.0,
)
# (and how many processes read a month: where it ran, not what it holds: a Dask worker's
# process is daemonic and reads alone)
VOLATILE = {"timings", "finished_at", "seconds", "workers", "output_mtime_ns"}


@pytest.fixture(scope="module")
def prefect_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A private Prefect home and a temporary local server for this module's flow runs."""
    home = tmp_path_factory.mktemp("prefect-home")
    env = {
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        # Dask worker processes import the project from this checkout.
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    from prefect.testing.utilities import prefect_test_harness

    try:
        with prefect_test_harness(server_startup_timeout=180):
            yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def settings() -> MonthSettings:
    return OPTIONS.settings


def stable(manifest: dict[str, Any]) -> dict[str, Any]:
    """Return a manifest without the fields that differ between identical runs (times, and the
    book's warehouse: where the statistics were, not what they hold)."""
    out = {k: v for k, v in manifest.items() if k not in VOLATILE}
    for part, volatile in (("ingest", VOLATILE), ("book", VOLATILE | {"warehouse"})):
        if isinstance(out.get(part), dict):
            out[part] = {k: v for k, v in out[part].items() if k not in volatile}
    return out


def served_explorer_has_the_month(warehouse: Path, source: Path) -> None:
    """`chesspipe serve` over the built warehouse counts the month as a python-chess recount
    done lila's way (50 plies, each position once per game) of the games the filter keeps."""
    import chess

    from pipelines.serve.explorer import Explorer
    from tests.explorer_recount import counts, read_games

    speeds = {speed.value for speed in GameFilter().speeds}
    games = read_games({"2021-10": source}, 0, speeds)
    explorer = Explorer(warehouse, cache_bytes=0)
    try:
        assert explorer.lookup.game_count() == len(games) > 0
        for path in ([], ["e2e4"], ["e2e4", "e7e5"], ["d2d4", "d7d5", "c2c4"]):
            board = chess.Board()
            for uci in path:
                board.push_uci(uci)
            answer = explorer.lichess({"play": ",".join(path)})
            fields = ("white", "draws", "black", "averageRating")
            got = {m["uci"]: {k: m[k] for k in fields} for m in answer["moves"]}
            assert got == counts(games, board), path
            assert not answer.get("notes"), answer.get("notes")
    finally:
        explorer.close()


@pytest.mark.slow
def test_cli_and_flow_run(prefect_env: dict[str, str], tmp_path: Path, games_2021: Path) -> None:
    from prefect.artifacts import Artifact
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterId,
        LogFilter,
        LogFilterFlowRunId,
    )

    from pipelines.flows.monthly import build_month_flow

    warehouse, books = tmp_path / "wh", tmp_path / "books"
    # The command line runs the flow in its own process with its own ephemeral server.
    proc = run_cli(
        "build-month",
        str(games_2021),
        "--month",
        "2021-10",
        "--warehouse",
        str(warehouse),
        "--books",
        str(books),
        "--min-rating",
        "0",
        "--min-games",
        "2",
        "--progress",
    )
    summary = json.loads(proc.stdout)
    assert summary["status"] == "built" and summary["games_read"] == 999
    assert "999 games (" in proc.stderr and "kept" in proc.stderr
    # Quiet by default: the progress lines only, no Prefect log record, notice or docs link.
    assert not re.search(r"\d\d:\d\d:\d\d\.\d{3} \| ", proc.stderr), proc.stderr
    assert "prefect" not in proc.stderr.lower(), proc.stderr
    book, manifest_file = published_paths(books, "2021-10")
    manifest = json.loads(manifest_file.read_text())
    assert summary["games_kept"] == manifest["ingest"]["games_kept"]
    served_explorer_has_the_month(warehouse, games_2021)

    # The same build as plain functions gives the same book and manifest.
    direct = build_month(
        str(games_2021), "2021-10", tmp_path / "wh2", tmp_path / "books2", settings()
    )
    # Each book records the warehouse its statistics came from; the rest is equal.
    assert manifest["book"]["warehouse"] == str(warehouse.resolve())
    assert direct.book.warehouse == str((tmp_path / "wh2").resolve())
    assert stable(direct.to_json()) == stable(manifest)
    assert book.read_bytes() == published_paths(tmp_path / "books2", "2021-10")[0].read_bytes()

    # In-process flow run: up to date, nothing rewritten, a Markdown summary left behind.
    before = book.stat().st_mtime_ns
    state = build_month_flow(
        source=str(games_2021),
        warehouse=str(warehouse),
        books=str(books),
        month="2021-10",
        options=OPTIONS,
        return_state=True,
    )
    assert state.is_completed()
    again = state.result()
    assert again["status"] == "up-to-date" and book.stat().st_mtime_ns == before
    artifact = Artifact.get("book-2021-10")
    assert artifact is not None
    assert f"games kept: {manifest['ingest']['games_kept']:,}" in str(artifact.data)
    assert "(up-to-date)" in str(artifact.data)

    # A forced run goes through every step as its own task run.
    state = build_month_flow(
        source=str(games_2021),
        warehouse=str(warehouse),
        books=str(books),
        month="2021-10",
        options=OPTIONS,
        force=True,
        return_state=True,
    )
    assert state.result()["status"] == "built"
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[state.state_details.flow_run_id])
            )
        )
    names = sorted(run.name.rsplit("-", 1)[0] for run in runs)
    assert names == ["build-book", "explorer-index", "ingest", "publish", "resolve-source"]
    assert all(run.state is not None and run.state.is_completed() for run in runs)
    # The flow logged the progress line (bytes of the total, games per second, kept).
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=30)
    with get_client(sync_client=True) as client:
        logs = client.read_logs(
            LogFilter(flow_run_id=LogFilterFlowRunId(any_=[state.state_details.flow_run_id]))
        )
    progress = [log.message for log in logs if "games (" in log.message]
    assert progress and "100.0%" in progress[-1] and "999 games" in progress[-1]
    assert f"{manifest['ingest']['games_kept']} kept" in progress[-1]
    # A failure the user can act on surfaces as itself, and the flow run is marked failed.
    with pytest.raises(ChesspipeError, match="no such file"):
        build_month_flow(
            source=str(tmp_path / "absent.pgn.zst"),
            warehouse=str(warehouse),
            books=str(books),
            month="2021-10",
            options=OPTIONS,
        )
    assert book.read_bytes() == published_paths(tmp_path / "books2", "2021-10")[0].read_bytes()


@pytest.mark.slow
def test_scheduled_run_builds_the_previous_month(
    prefect_env: dict[str, str], tmp_path: Path, games_2021: Path
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.objects import StateType
    from prefect.flow_engine import run_flow
    from prefect.states import Scheduled

    from pipelines.flows.deployment import monthly_deployment
    from pipelines.flows.monthly import build_month_flow
    from pipelines.monthly.schedule import MONTHLY_CRON

    (tmp_path / "dumps").mkdir()
    (tmp_path / "dumps" / "2025-12.pgn.zst").write_bytes(games_2021.read_bytes())
    deployment = monthly_deployment(
        str(tmp_path / "wh"),
        str(tmp_path / "books"),
        str(tmp_path / "dumps" / "{month}.pgn.zst"),
        options=OPTIONS,
    )
    deployment_id = deployment.apply()
    when = datetime(2026, 1, 3, 6, 0, tzinfo=UTC)
    with get_client(sync_client=True) as client:
        stored = client.read_deployment(deployment_id)
        assert [s.schedule.cron for s in stored.schedules] == [MONTHLY_CRON]  # type: ignore[union-attr]
        assert "month" not in stored.parameters
        flow_run = client.create_flow_run_from_deployment(
            deployment_id, state=Scheduled(scheduled_time=when)
        )
    assert flow_run.expected_start_time == when
    result = run_flow(build_month_flow, flow_run=flow_run, parameters=flow_run.parameters)
    assert isinstance(result, dict) and result["month"] == "2025-12"
    assert published_paths(tmp_path / "books", "2025-12")[0].exists()
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(flow_run.id).state_type == StateType.COMPLETED


def split_months(source: Path, folder: Path, months: list[str]) -> None:
    """Write real games as one .pgn.zst per month (consecutive slices, at game boundaries)."""
    text = zstandard.ZstdDecompressor().decompress(source.read_bytes(), max_output_size=1 << 28)
    games = [g for g in text.split(b"\n\n[Event ") if g.strip()]
    games = [games[0]] + [b"[Event " + g for g in games[1:]]
    size = -(-len(games) // len(months))
    folder.mkdir()
    for n, month in enumerate(months):
        part = b"\n\n".join(games[n * size : (n + 1) * size]).rstrip(b"\n") + b"\n\n"
        (folder / f"{month}.pgn.zst").write_bytes(zstandard.ZstdCompressor().compress(part))


@pytest.mark.slow
def test_backfill_on_a_local_dask_cluster_equals_sequential_runs(
    prefect_env: dict[str, str], tmp_path: Path, games_2021: Path
) -> None:
    from distributed import Client, LocalCluster

    months = ["2021-08", "2021-09", "2021-10"]
    split_months(games_2021, tmp_path / "dumps", months)
    template = str(tmp_path / "dumps" / "{month}.pgn.zst")
    sequential = [
        build_month(
            template.format(month=m), m, tmp_path / "seq-wh", tmp_path / "seq-books", settings()
        )
        for m in months
    ]
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        # The command line's DaskTaskRunner on the cluster; 2021-11 has no dump and must fail
        # alone, without stopping the other months.
        proc = run_cli(
            "backfill",
            "--months",
            "2021-08..2021-11",
            "--source",
            template,
            "--warehouse",
            str(tmp_path / "wh"),
            "--books",
            str(tmp_path / "books"),
            "--dask-address",
            cluster.scheduler_address,
            "--min-rating",
            "0",
            "--min-games",
            "2",
            check=False,
        )
        # The months ran as tasks in the cluster's worker processes.
        with Client(cluster) as client:
            executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("chesspipe: error: backfill: 1 of 4 months failed: 2021-11 (")
    assert "no such file" in last
    assert len(executed) == 2 and sum(executed.values()) >= len(months) + 1
    parallel = [
        json.loads(published_paths(tmp_path / "books", month)[1].read_text()) for month in months
    ]
    assert all(m["status"] == "built" for m in parallel)
    assert [stable(m) for m in parallel] == [stable(m.to_json()) for m in sequential]
    for month in months:
        assert pq.read_table(partition_file(tmp_path / "wh", month)).equals(
            pq.read_table(partition_file(tmp_path / "seq-wh", month))
        )
        assert (
            published_paths(tmp_path / "books", month)[0].read_bytes()
            == published_paths(tmp_path / "seq-books", month)[0].read_bytes()
        )
    assert len({m["book_sha256"] for m in parallel}) == 3
    assert not published_paths(tmp_path / "books", "2021-11")[0].exists()


@pytest.mark.slow
def test_backfill_of_a_month_list_builds_one_book_over_them(
    prefect_env: dict[str, str], tmp_path: Path, games_2021: Path
) -> None:
    """backfill --book NAME: after the months, one book over all of them, as PolyGlot makes it."""
    from pipelines.books.manifest import read_manifest_beside
    from pipelines.commands.backfill import range_book_summary
    from pipelines.flows.backfill import backfill_flow
    from schemas.speed import Speed
    from tests.test_book import entry_set, make_book_reference

    split_months(games_2021, tmp_path / "dumps", ["2021-08", "2021-10"])
    rules = GameFilter(min_rating=0, speeds=frozenset(Speed), allow_bots=True)
    every_game = BuildOptions(settings=MonthSettings(IngestSettings(rules), BookSettings(3)))
    books = str(tmp_path / "books")
    manifests = backfill_flow(
        months="2021-08,2021-10",
        source=str(tmp_path / "dumps" / "{month}.pgn.zst"),
        warehouse=str(tmp_path / "wh"),
        books=books,
        options=every_game,
        book="range",
    )
    assert [m["month"] for m in manifests] == ["2021-08", "2021-10"]
    book = tmp_path / "books" / "range.bin"
    manifest = read_manifest_beside(book)
    assert manifest is not None and manifest.months == ("2021-08", "2021-10")
    # The months are consecutive slices of the games: PolyGlot reads them in month order.
    assert book.read_bytes() == make_book_reference(tmp_path, games_2021, 0, 3, 0.35).read_bytes()
    assert len(entry_set(book)) > len(entry_set(published_paths(tmp_path / "books", "2021-08")[0]))
    assert range_book_summary(books, "range", "2021-08,2021-10") == {
        "months": "2021-08,2021-10",
        "status": "built",
        "book": str(book),
        "entries": len(entry_set(book)),
    }
    with pytest.raises(ChesspipeError, match="plain file name"):
        range_book_path(tmp_path, "../x", ["2021-08"])
    refused = run_cli("backfill", "--months", "2021-08", "--warehouse", str(tmp_path / "wh"),
                      "--books", books, "--book", "lichess-2021-08", check=False)  # fmt: skip
    assert refused.returncode == 1 and "a month's own book" in refused.stderr


@pytest.mark.slow
def test_the_command_records_its_runs_before_its_server_stops(tmp_path: Path) -> None:
    """build-month's own temporary server (stopped with the command) has recorded the flow
    run, every task run and the logs; the second
    command finds the new database migrated and skips Prefect's check. Flow run heartbeats
    are off, unless the user sets them."""
    import sqlite3

    from pipelines.flows.prefect_internals import migrations_head

    home = tmp_path / "prefect-home"
    runs = {"2024-01": {}, "2024-02": {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30"}}
    for month, env in runs.items():
        run_cli(
            "build-month",
            str(ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"),
            "--month",
            month,
            "--warehouse",
            str(tmp_path / "wh"),
            "--books",
            str(tmp_path / "books"),
            env={"PREFECT_HOME": str(home), "PREFECT_API_URL": "", **env},
        )
    database = sqlite3.connect(home / "prefect.db")
    try:
        flows = database.execute("SELECT id, state_type FROM flow_run").fetchall()
        tasks = database.execute("SELECT name, state_type FROM task_run").fetchall()
        revision = database.execute("SELECT version_num FROM alembic_version").fetchall()
        beats = database.execute(
            "SELECT resource FROM events WHERE event = 'prefect.flow-run.heartbeat'"
        ).fetchall()
        months = {
            run: month
            for run, month in database.execute(
                "SELECT flow_run_id, substr(message, 19, 7) FROM log"
                " WHERE message LIKE 'published lichess-%'"
            )
        }
    finally:
        database.close()
    assert revision == [(migrations_head(),)]
    assert [state for _, state in flows] == ["COMPLETED", "COMPLETED"]
    steps = ["build-book", "explorer-index", "ingest", "publish", "resolve-source"]
    assert sorted(name.rsplit("-", 1)[0] for name, _ in tasks) == sorted(2 * steps)
    assert {state for _, state in tasks} == {"COMPLETED"}
    assert sorted(months.values()) == ["2024-01", "2024-02"]
    beating = {months[json.loads(resource)["prefect.resource.id"].split(".")[-1]]
               for (resource,) in beats}  # fmt: skip
    assert beating == {"2024-02"}
