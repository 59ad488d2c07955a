"""What DuckDB may use of the machine: a memory limit from the machine (not 2 GB for all),
`--memory-limit` and `--temp-dir` on the commands that run DuckDB, spilling into a private
folder under the temp folder given, and the same answers whatever the limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.errors import ChesspipeError
from pipelines.warehouse.resources import (
    QueryResources,
    default_memory_limit,
    machine_memory,
    parse_size,
)
from pipelines.warehouse.sql import connect
from tests.conftest import run_cli
from tests.sample_tool import make_sample

MONTH = make_sample.SAMPLE_MONTHS[0]


def test_sizes_read_as_duckdb_reads_them() -> None:
    assert parse_size("4GB") == 4 * 10**9
    assert parse_size("512MiB") == 512 << 20
    assert parse_size(" 1.5 gb ") == 1_500_000_000
    for bad in ("lots", "4", "GB", "-1GB", "4 GiBs"):
        with pytest.raises(ChesspipeError, match="not a size"):
            parse_size(bad)
    with pytest.raises(ChesspipeError, match="under 1 MB"):
        QueryResources(1000)


def test_the_default_limit_is_the_machines(sample_warehouse: Path) -> None:
    limit = default_memory_limit()
    assert limit == max(256 << 20, machine_memory() // 2)
    con = connect(sample_warehouse)
    try:
        [(shown,)] = con.execute("SELECT current_setting('memory_limit')").fetchall()
    finally:
        con.close()
    assert shown != "1.8 GiB"  # the limit every machine had (2 GB)
    # DuckDB shows the limit to a tenth of its unit.
    unit = 1 << 30 if shown.endswith("GiB") else 1 << 20
    assert abs(parse_size(shown) - limit) <= unit // 10


@pytest.mark.slow
def test_a_query_spills_into_the_temp_folder_given_and_leaves_nothing(
    sample_warehouse: Path, tmp_path: Path
) -> None:
    spills = tmp_path / "spills"
    spills.mkdir()
    resources = QueryResources(parse_size("64MB"), spills)
    con = connect(sample_warehouse, resources=resources)
    try:
        [(folder,)] = con.execute("SELECT current_setting('temp_directory')").fetchall()
        assert Path(folder).parent.parent == spills
        big = "SELECT count(*) FROM (SELECT i FROM range(20000000) t(i) ORDER BY hash(i))"
        assert con.execute(big).fetchall() == [(20_000_000,)]
        assert Path(folder).is_dir()  # it spilled there, past 64 MB
    finally:
        con.close()
    del con
    import gc

    gc.collect()
    assert list(spills.iterdir()) == []
    proc = run_cli("sql", "--warehouse", str(sample_warehouse), "--memory-limit", "300MB",
                   "--temp-dir", str(spills), "--format", "csv",
                   "SELECT current_setting('memory_limit') AS m, "
                   "current_setting('temp_directory') AS t")  # fmt: skip
    limit, temp = proc.stdout.splitlines()[1].split(",")
    assert limit == "286.1 MiB" and temp.startswith(str(spills))
    assert list(spills.iterdir()) == []
    for args, says in ((("--memory-limit", "lots"), "not a size: 'lots'"),
                       (("--temp-dir", str(tmp_path / "none")), "no such folder")):  # fmt: skip
        bad = run_cli("sql", "--warehouse", str(sample_warehouse), *args, "SELECT 1", check=False)
        assert bad.returncode == 1 and says in bad.stderr and bad.stderr.count("\n") == 1


def test_a_book_is_the_same_at_any_memory_limit(sample_warehouse: Path, tmp_path: Path) -> None:
    books = []
    for name, extra in (("default", ()), ("small", ("--memory-limit", "16MB",
                                                   "--temp-dir", str(tmp_path)))):  # fmt: skip
        out = tmp_path / f"{name}.bin"
        run_cli("book", "build", "--warehouse", str(sample_warehouse), "--months", MONTH,
                "--min-games", "1", "--out", str(out), *extra)  # fmt: skip
        books.append(out.read_bytes())
    assert books[0] == books[1] and books[0]
