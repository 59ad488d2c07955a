"""Where the real data for tests and benchmarks is, and a sample's text: shared by both.

Found through environment variables: CHESSPIPE_SHARED_DATA (default ../shared/data), or each of
CHESSPIPE_LICHESS, CHESSPIPE_POLYGLOT_BOOK and CHESSPIPE_SYZYGY. The tests import these from
here (tests/conftest.py); bench/ imports nothing from tests/.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parent.parent

#: Real data for tests and benchmarks: Lichess games, a Polyglot book, Syzygy tables.
SHARED_DATA = Path(os.environ.get("CHESSPIPE_SHARED_DATA", ROOT.parent / "shared" / "data"))
#: Sources of the peer programs no package ships (fastchess), and where bench/build_tools.sh
#: builds them.
SHARED_TOOLS = Path(os.environ.get("CHESSPIPE_SHARED_TOOLS", SHARED_DATA.parent / "tools"))
BUILT_TOOLS = Path(os.environ.get("CHESSPIPE_BUILT_TOOLS", ROOT / "build" / "tools"))
SUITES_DIR = Path(os.environ.get("CHESSPIPE_SUITES", SHARED_DATA / "suites"))
LICHESS_DIR = Path(os.environ.get("CHESSPIPE_LICHESS", SHARED_DATA / "lichess"))
POLYGLOT_BOOK = Path(
    os.environ.get("CHESSPIPE_POLYGLOT_BOOK", SHARED_DATA / "polyglot" / "performance.bin")
)
SYZYGY_DIR = Path(os.environ.get("CHESSPIPE_SYZYGY", SHARED_DATA / "syzygy" / "3-4"))

GAMES_2021 = LICHESS_DIR / "standard-2021-10-sample.pgn.zst"
GAMES_2013 = LICHESS_DIR / "standard-2013-01-part1.pgn.zst"
ODD_CASES = LICHESS_DIR / "odd-cases.pgn"


def read_text(path: Path) -> str:
    """Return the text of a .pgn or .pgn.zst file (every zstd frame), decoded as UTF-8."""
    data = path.read_bytes()
    if path.suffix == ".zst":
        data = (
            zstandard.ZstdDecompressor()
            .stream_reader(io.BytesIO(data), read_across_frames=True)
            .read()
        )
    return data.decode("utf-8", "replace")
