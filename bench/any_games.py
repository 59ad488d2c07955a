"""Games that are not from Lichess, side by side with Lichess games and with the decompressors.

Per game, `chesspipe ingest --speeds all --min-rating 0` (every game kept, one worker) on an
over-the-board collection (../shared/data/otb/, repeated to a few MB) against the same on as
many real Lichess games; and the collection as .pgn, .pgn.gz, .pgn.bz2 and .zip, each beside
the decompressor alone (`gzip -dc`, `bzip2 -dc`, `unzip -p`) on the same file. Rounds take
turns; medians. Prints a Markdown section for bench/RESULTS.md ("Games that are not from
Lichess").

    python bench/any_games.py [--rounds 3] [--copies 12]
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("CHESSPIPE_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _games(text: bytes) -> int:
    return text.count(b"\n[Event ") + text.startswith(b"[Event ")


def _run(args: list[str], stdout: int | None = subprocess.DEVNULL) -> float:
    started = time.perf_counter()
    subprocess.run(args, check=True, stdout=stdout, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - started


def _ingest(source: Path, folder: Path) -> list[str]:
    warehouse = folder / "w"
    shutil.rmtree(warehouse, ignore_errors=True)
    return [sys.executable, "-m", "pipelines", "ingest", str(source), "--month", "2024-01",
            "--warehouse", str(warehouse), "--speeds", "all", "--min-rating", "0", "--quiet",
            "--workers", "1"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copies", type=int, default=12)
    options = parser.parse_args()
    otb = (SHARED / "otb" / "Capablanca.pgn").read_bytes() + (
        SHARED / "otb" / "London1851.pgn"
    ).read_bytes()
    otb_text = (otb.replace(b"\r\n", b"\n") + b"\n") * options.copies
    lichess_all = (
        zstandard.ZstdDecompressor()
        .stream_reader(
            io.BytesIO((SHARED / "lichess" / "standard-2013-01-part1.pgn.zst").read_bytes()),
            read_across_frames=True,
        )
        .read()
    )
    wanted = _games(otb_text)
    cut = 0
    for _ in range(wanted):
        cut = lichess_all.index(b"\n\n[Event ", cut + 1)
    lichess_text = lichess_all[: cut + 1]
    with tempfile.TemporaryDirectory(prefix="chesspipe-any-games-") as name:
        folder = Path(name)
        files = {
            "lichess.pgn": lichess_text,
            "otb.pgn": otb_text,
            "otb.pgn.gz": gzip.compress(otb_text, 6),
            "otb.pgn.bz2": bz2.compress(otb_text, 9),
        }
        for file, data in files.items():
            (folder / file).write_bytes(data)
        with zipfile.ZipFile(folder / "otb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("otb.pgn", otb_text)
        cases = {
            "Lichess games, .pgn": _ingest(folder / "lichess.pgn", folder),
            "OTB collection, .pgn": _ingest(folder / "otb.pgn", folder),
            "OTB collection, .pgn.gz": _ingest(folder / "otb.pgn.gz", folder),
            "`gzip -dc` alone": ["gzip", "-dc", str(folder / "otb.pgn.gz")],
            "OTB collection, .pgn.bz2": _ingest(folder / "otb.pgn.bz2", folder),
            "`bzip2 -dc` alone": ["bzip2", "-dc", str(folder / "otb.pgn.bz2")],
            "OTB collection, .zip": _ingest(folder / "otb.zip", folder),
            "`unzip -p` alone": ["unzip", "-p", str(folder / "otb.zip")],
        }
        times: dict[str, list[float]] = {case: [] for case in cases}
        for _ in range(options.rounds):
            for case, args in cases.items():
                times[case].append(_run(args))
    median = {case: statistics.median(values) for case, values in times.items()}
    print(
        f"## Games that are not from Lichess (bench/any_games.py)\n\n"
        f"{wanted:,} games each: the two OTB collections repeated {options.copies} times "
        f"({len(otb_text) / 1e6:.1f} MB of PGN), and as many real Lichess games (2013-01, "
        f"{len(lichess_text) / 1e6:.1f} MB); every game kept (`--speeds all --min-rating 0`, "
        f"one worker); medians of {options.rounds} rounds, taking turns; start-up included.\n"
    )
    print("| case | wall | per game | vs Lichess |\n|---|---|---|---|")
    base = median["Lichess games, .pgn"]
    for case, seconds in median.items():
        per_game = f"{seconds / wanted * 1e6:.0f} µs"
        ratio = f"{seconds / base:.2f}x" if "alone" not in case else ""
        print(f"| {case} | {seconds:.2f} s | {per_game} | {ratio} |")


if __name__ == "__main__":
    main()
