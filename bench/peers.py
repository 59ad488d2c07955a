"""Peer programs run the same way by the tests and the benchmarks."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.data import read_text


def pgn_extract_elo(
    source: Path, rating: int, folder: Path, *, program: str = "pgn-extract"
) -> Path:
    """Return a PGN file of the games `pgn-extract` keeps with both Elo ratings >= rating."""
    plain = folder / "all.pgn"
    plain.write_text(read_text(source))
    tags = folder / "tags.txt"
    tags.write_text(f'WhiteElo >= "{rating}"\nBlackElo >= "{rating}"\n')
    kept = folder / f"kept-{rating}.pgn"
    subprocess.run(
        [program, "-s", "-t", str(tags), "-o", str(kept), str(plain)],
        check=True,
        capture_output=True,
    )
    return kept
