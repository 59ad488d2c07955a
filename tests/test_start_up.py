"""Start-up stays light: a command imports only the libraries its work needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"
HEAVY = ("prefect", "duckdb", "pyarrow", "pandas", "numpy", "chess", "distributed")

PROBE = """
import json, sys
from pipelines.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))))
"""


def imported(*argv: str) -> set[str]:
    """Run the command line in a fresh interpreter; return which heavy libraries it imported."""
    code = f"HEAVY = {HEAVY!r}\n{PROBE}"
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_help_imports_no_heavy_library() -> None:
    assert imported("--help") == set()
    assert imported("ingest", "--help") == set()


@pytest.mark.parametrize(
    ("min_rating", "allowed"),
    [
        ("99999", {"pyarrow", "numpy"}),  # nothing kept: the scanner, then a Parquet file
        ("0", {"pyarrow", "numpy", "chess"}),
    ],
)
def test_ingest_imports_no_prefect_duckdb_or_pandas(
    tmp_path: Path, min_rating: str, allowed: set[str]
) -> None:
    got = imported(
        "ingest", str(SAMPLE), "--month", "2024-01", "--warehouse", str(tmp_path), "--quiet",
        "--min-rating", min_rating, "--workers", "1", "--allow-empty", "--no-explorer",
    )  # fmt: skip
    assert got == allowed


def test_ingest_with_the_explorer_imports_no_prefect_or_pandas(tmp_path: Path) -> None:
    # The explorer's index (by default) writes its lookup file with DuckDB.
    got = imported(
        "ingest", str(SAMPLE), "--month", "2024-01", "--warehouse", str(tmp_path), "--quiet",
        "--min-rating", "0", "--workers", "1",
    )  # fmt: skip
    assert "prefect" not in got and "distributed" not in got and "pandas" not in got
    assert "duckdb" in got
    assert (tmp_path / "explorer" / "month=2024-01.json").is_file()


def test_ingest_leaves_counting_libraries_to_its_workers(tmp_path: Path) -> None:
    # Two workers and a file read in order: worker processes scan and count its blocks of games.
    got = imported(
        "ingest", str(SAMPLE), "--month", "2024-01", "--warehouse", str(tmp_path), "--quiet",
        "--min-rating", "0", "--workers", "2", "--no-explorer",
    )  # fmt: skip
    assert got == set()
    manifest = json.loads((tmp_path / "move_stats" / "month=2024-01.json").read_text())
    assert manifest["games_kept"] > 1000 and manifest["rows"] > 0


def test_book_build_imports_duckdb_only(tmp_path: Path) -> None:
    imported("ingest", str(SAMPLE), "--month", "2024-01", "--warehouse", str(tmp_path), "--quiet")
    got = imported(
        "book", "build", "--warehouse", str(tmp_path), "--months", "2024-01",
        "--out", str(tmp_path / "book.bin"),
    )  # fmt: skip
    assert got == {"duckdb"}
