"""Memory stays bounded on pathological text: zstd bombs and endless lines (issue 18).

Each bomb is a pzstd-style file whose frames decompress to hundreds of MB from a few KB: NUL
bytes, newlines, one line with no newline, one game repeated. Every reader of PGN runs it in a
subprocess whose peak resident memory (the largest process of its tree, from the kernel) must
stay under MEMORY_BOUND_MB; the text longer than a game may be is skipped as `oversized` and
the games around it are read.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from pipelines.games.decompress import SKIPPABLE_MAGIC_LOW
from pipelines.warehouse.layout import manifest_path
from tests.conftest import ROOT, SYZYGY_DIR, need

#: Peak resident memory allowed for the largest process of a run (a bomb used to take 600+ MB).
MEMORY_BOUND_MB = 300

#: Decompressed size of a bomb's filler, in frames of FILLER_FRAME bytes.
FILLER = 256 << 20
FILLER_FRAME = 64 << 20

GAME = (
    b'[Event "Rated Blitz game"]\n[Site "https://lichess.org/abcdefgh"]\n[White "a"]\n'
    b'[Black "b"]\n[Result "1-0"]\n[WhiteElo "2300"]\n[BlackElo "2250"]\n'
    b'[TimeControl "300+0"]\n\n1. e4 { [%eval 0.3] } e5 { [%eval 0.2] } 1-0\n\n'
)

#: Runs a command; prints its exit status and the peak RSS (KB) of its largest process.
_PEAK = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stderr.write(p.stderr)\n"
    "sys.stdout.write(p.stdout)\n"
    "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)

#: Ingests argv[1] into warehouse argv[2] with argv[3] workers, any file split among them.
_INGEST = (
    "import json, sys\n"
    "from pipelines.games.game_filter import GameFilter\n"
    "from pipelines.ingest.run import ingest\n"
    "from pipelines.ingest.options import Runtime, Tuning\n"
    "from pipelines.ingest.settings import IngestSettings\n"
    "from schemas.speed import Speed\n"
    "rules = GameFilter(0, frozenset(Speed), allow_bots=True)\n"
    "m = ingest(sys.argv[1], '2024-01', sys.argv[2], IngestSettings(rules),\n"
    "           runtime=Runtime(workers=int(sys.argv[3])), tuning=Tuning(parallel_min_bytes=0))\n"
    "print(json.dumps([m.games_read, m.games_kept, m.games_dropped, m.workers]))\n"
)


def _bomb(path: Path, filler: bytes) -> Path:
    """Write GAME, then a game whose text is FILLER bytes of `filler`, then GAME, as frames."""
    cctx = zstandard.ZstdCompressor(level=1)
    block = filler * (FILLER_FRAME // len(filler))
    frames = [GAME + b"[Event "] + [block] * (FILLER // len(block)) + [b"\n\n" + GAME]
    with open(path, "wb") as handle:
        for text in frames:
            frame = cctx.compress(text)
            handle.write(struct.pack("<III", SKIPPABLE_MAGIC_LOW, 4, len(frame)))
            handle.write(frame)
    assert path.stat().st_size < 1 << 20  # a bomb: KBs that decompress to 256 MB
    return path


def _measured(*args: str) -> tuple[int, str, int]:
    """Run a Python command from this checkout; return its exit status, stdout and peak MB."""
    code, out, _, peak_mb = _measured_with_stderr(*args)
    return code, out, peak_mb


def _measured_with_stderr(*args: str) -> tuple[int, str, str, int]:
    """Run a Python command from this checkout; return its exit status, stdout, stderr and
    peak MB."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    *out, last = proc.stdout.splitlines()
    code, peak_kb = map(int, last.split())
    assert "Traceback" not in proc.stderr, proc.stderr
    return code, "\n".join(out), proc.stderr, peak_kb >> 10


@pytest.mark.slow
@pytest.mark.parametrize(
    ("filler", "workers"),
    [
        (b"\x00", 1),  # read in order here
        (b"\n", 1),
        (b"x", 1),  # one line, no newline
        (b"\x00", 2),  # units of frames in worker processes
        (b"\n", 2),
    ],
)
def test_bomb_is_skipped_in_bounded_memory(tmp_path: Path, filler: bytes, workers: int) -> None:
    source = _bomb(tmp_path / "bomb.pgn.zst", filler)
    code, out, peak_mb = _measured("-c", _INGEST, str(source), str(tmp_path / "wh"), str(workers))
    assert code == 0
    read, kept, dropped, used = json.loads(out)
    assert used == workers
    assert peak_mb < MEMORY_BOUND_MB, f"peak RSS {peak_mb} MB"
    assert (read, kept, dropped) == (3, 2, {"oversized": 1})


def test_bomb_on_the_command_line_read_in_order_by_workers(tmp_path: Path) -> None:
    source = _bomb(tmp_path / "bomb.pgn.zst", b"\x00")
    warehouse = tmp_path / "wh"
    code, _, peak_mb = _measured(
        "-m", "pipelines", "ingest", str(source), "--month", "2024-01", "--warehouse",
        str(warehouse), "--quiet", "--min-rating", "0", "--workers", "2",
    )  # fmt: skip
    assert code == 0
    assert peak_mb < MEMORY_BOUND_MB, f"peak RSS {peak_mb} MB"
    manifest = json.loads(manifest_path(warehouse, "2024-01").read_text())
    assert manifest["games_dropped"] == {"oversized": 1}
    assert manifest["games_kept"] == 2


def test_repeated_game_bomb(tmp_path: Path) -> None:
    """A bomb of one game repeated: every copy is read, none is held longer than needed."""
    source = _bomb(tmp_path / "bomb.pgn.zst", GAME.replace(b"2300", b"1000"))  # (dropped)
    code, out, peak_mb = _measured("-c", _INGEST.replace("(0,", "(1500,"), str(source),
                                   str(tmp_path / "wh"), "1")  # fmt: skip
    assert code == 0
    read, kept, dropped, _ = json.loads(out)
    assert peak_mb < MEMORY_BOUND_MB, f"peak RSS {peak_mb} MB"
    copies = FILLER // len(GAME)
    assert (read, kept) == (copies + 2, 2)
    assert dropped == {"rating_low": copies}


def test_training_from_games_bomb(tmp_path: Path) -> None:
    source = _bomb(tmp_path / "bomb.pgn.zst", b"\x00")
    out = tmp_path / "out.plain"
    code, _, peak_mb = _measured(
        "-m", "pipelines", "training", "from-games", str(source), "--month", "2024-01",
        "--out", str(out), "--min-rating", "0", "--no-tables",
    )  # fmt: skip
    assert code == 0
    assert peak_mb < MEMORY_BOUND_MB, f"peak RSS {peak_mb} MB"
    manifest = json.loads(out.with_name(out.name + ".json").read_text())
    assert manifest["games_skipped"] == {"oversized": 1}
    assert manifest["records"] == 4


def test_endgames_from_games_bomb(tmp_path: Path) -> None:
    source = _bomb(tmp_path / "bomb.pgn.zst", b"x")
    code, _, peak_mb = _measured(
        "-m", "pipelines", "endgames", "from-games", str(source), "--month", "2024-01",
        "--out", str(tmp_path / "out"), "--min-rating", "0", "--quiet",
        "--syzygy", str(need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables").parent),
    )  # fmt: skip
    assert code == 0
    assert peak_mb < MEMORY_BOUND_MB, f"peak RSS {peak_mb} MB"


#: Peak resident memory allowed for a training tool reading one 50 MB line (it took 220+ MB).
LONG_LINE_BOUND_MB = 120


@pytest.mark.parametrize("command", ["stats", "shuffle", "interleave", "convert"])
def test_a_long_plain_line_fails_in_one_line_in_bounded_memory(
    tmp_path: Path, command: str
) -> None:
    """A .plain line longer than MAX_LINE_BYTES is refused unread, naming its line."""
    from schemas.plain import MAX_LINE_BYTES

    record = b"fen 8/8/8/8/8/8/8/K1k5 w - - 0 1\nmove a1a2\nscore 0\nply 0\nresult 0\ne\n"
    source = tmp_path / "long.plain"
    with open(source, "wb") as handle:
        handle.write(record + b"fen " + b"x" * (50 << 20) + b"\n" + record[33:])
    out = tmp_path / "out" / "o.plain"
    args = {
        "stats": ("stats", str(source)),
        "shuffle": ("shuffle", str(source), str(out), "--seed", "1"),
        "interleave": ("interleave", str(source), "--out", str(out), "--seed", "1"),
        "convert": ("convert", str(source), str(out)),
    }[command]
    code, out_text, err, peak_mb = _measured_with_stderr("-m", "pipelines", "training", *args)
    assert peak_mb < LONG_LINE_BOUND_MB, f"peak RSS {peak_mb} MB"
    assert (code, out_text) == (1, "")
    assert err.splitlines() == [
        f"chesspipe: error: {source}:7: record 2: a line longer than {MAX_LINE_BYTES} bytes"
    ]
    assert not out.exists()
