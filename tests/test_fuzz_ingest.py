"""Fuzzing `chesspipe ingest` end to end: random bytes and cuts of a real multi-frame dump.

Each case runs the command in a subprocess and checks what a user sees: exit status 0 only
when the input is whole, one line on stderr and no traceback otherwise, nothing left in the
warehouse on failure, and bounded memory. Seeded, and bounded to about a minute.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.games.frames import frame_index, write_framed_zstd
from tests.conftest import ROOT
from tests.recount import read_text

MEMORY_BOUND_KB = 400 << 10
BUDGET_SECONDS = 60


#: Runs a command and reports its exit status and peak RSS (KB) on stdout; passes stderr on.
_PEAK = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stderr.write(p.stderr)\n"
    "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _ingest(source: Path, warehouse: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run the command; returncode is its own, and its peak RSS is checked here."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "pipelines", "ingest", str(source),
         "--month", "2024-01", "--warehouse", str(warehouse), "--quiet", "--min-rating", "0",
         *extra],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip
    code, peak_kb = map(int, proc.stdout.split())
    assert peak_kb < MEMORY_BOUND_KB, f"peak RSS {peak_kb >> 10} MB"
    return subprocess.CompletedProcess(proc.args, code, "", proc.stderr)


def _check(proc: subprocess.CompletedProcess[str], warehouse: Path, whole: bool) -> None:
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    if whole:
        assert proc.returncode == 0, err
        return
    assert proc.returncode == 1, (proc.returncode, err)
    assert len(err.splitlines()) == 1 and err.startswith("chesspipe: error: "), err
    # Nothing published, nothing staged, no temporary file: only the empty lock folder.
    left = [p for p in warehouse.rglob("*") if p.is_file() and p.parent.name != ".locks"]
    assert not left, left


@pytest.fixture
def framed_dump(tmp_path: Path, games_2021: Path) -> Path:
    path = tmp_path / "dump.pgn.zst"
    write_framed_zstd(path, read_text(games_2021).encode(), frame_size=150_000, level=1)
    return path


@pytest.mark.slow
def test_random_cuts_of_a_multi_frame_dump(tmp_path: Path, framed_dump: Path) -> None:
    data = framed_dump.read_bytes()
    with open(framed_dump, "rb") as handle:
        frames = frame_index(handle, len(data))
    assert frames is not None and len(frames) > 4
    boundaries = [f.offset + f.size for f in frames[:-1]]
    rng = random.Random(20240101)
    cuts = rng.sample(boundaries, 3) + [rng.randrange(1, len(data)) for _ in range(4)]
    started = time.monotonic()
    whole = tmp_path / "whole"
    _check(_ingest(framed_dump, whole, "--workers", "2"), whole, whole=True)
    for number, cut in enumerate(cuts):
        source = tmp_path / f"cut-{cut}.pgn.zst"
        source.write_bytes(data[:cut])
        for workers in ("1", "2"):
            warehouse = tmp_path / f"wh-{number}-{workers}"
            proc = _ingest(source, warehouse, "--workers", workers)
            _check(proc, warehouse, whole=False)
            assert source.name in proc.stderr or "truncated" in proc.stderr
        if time.monotonic() - started > BUDGET_SECONDS:
            break


@pytest.mark.slow
def test_random_bytes(tmp_path: Path) -> None:
    rng = random.Random(7)
    for number in range(4):
        source = tmp_path / f"random-{number}{rng.choice(['.pgn', '.pgn.zst'])}"
        size = rng.choice([100, 10_000, 1_000_000])  # (blank text is an empty month)
        head = rng.choice([b"", b"\x28\xb5\x2f\xfd", b'[Event "x"]\n'])
        source.write_bytes(head + rng.randbytes(size))
        warehouse = tmp_path / f"wh-{number}"
        _check(_ingest(source, warehouse), warehouse, whole=False)
