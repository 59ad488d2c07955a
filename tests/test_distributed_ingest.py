"""One month spread over the workers of a local Dask cluster, reading its frames by HTTP range."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.errors import ChesspipeError
from pipelines.games.frames import write_framed_zstd
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Download, Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import partition_file
from schemas.speed import Speed
from tests.loopback_http import LoopbackServer
from tests.recount import read_text

if os.environ.get("CI"):  # the dask extra is required in CI; skipped locally when absent
    import distributed
else:
    distributed = pytest.importorskip("distributed", reason="pip install '.[dask]' to run it")

ANY = GameFilter(1500, frozenset(Speed), allow_bots=True)
COMPARED = ("games_read", "games_kept", "games_dropped", "pgn_bytes", "rows")


def table(warehouse: Path) -> list[dict]:
    return pq.read_table(partition_file(warehouse, "2020-01")).to_pylist()


@pytest.mark.slow
def test_month_over_dask_equals_one_process(
    tmp_path: Path, games_2013: Path, games_2021: Path
) -> None:
    dump = tmp_path / "month.pgn.zst"
    write_framed_zstd(
        dump,
        (read_text(games_2021) + "\n" + read_text(games_2013)).encode(),
        frame_size=300_000,
        level=1,
    )
    single = ingest(
        str(dump), "2020-01", tmp_path / "single", IngestSettings(ANY), runtime=Runtime(workers=1)
    )
    with (
        LoopbackServer() as server,
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        url = server.add("/month.pgn.zst", dump.read_bytes())
        over_http = ingest(
            url,
            "2020-01",
            tmp_path / "http",
            IngestSettings(ANY),
            runtime=Runtime(executor=client.get_executor()),
        )
        from_file = ingest(
            str(dump),
            "2020-01",
            tmp_path / "file",
            IngestSettings(ANY),
            runtime=Runtime(executor=client.get_executor()),
        )
        ranges = [r for _, path, r in server.requests if path == "/month.pgn.zst" and r]
        with pytest.raises(ChesspipeError, match="cannot be checksummed"):
            ingest(
                url,
                "2020-01",
                tmp_path / "x",
                IngestSettings(ANY),
                download=Download(expected_sha256="0" * 64),
                runtime=Runtime(executor=client.get_executor()),
            )
    for name in COMPARED:
        assert getattr(single, name) == getattr(over_http, name) == getattr(from_file, name), name
    assert table(tmp_path / "single") == table(tmp_path / "http") == table(tmp_path / "file")
    assert over_http.workers == from_file.workers == "executor"
    assert over_http.source_sha256 is None  # read by ranges, never whole
    assert from_file.source_sha256 == single.source_sha256
    assert ranges and all("-" in r and not r.endswith("-") for r in ranges)  # closed byte ranges
    assert single.games_read == 999 + 25611
