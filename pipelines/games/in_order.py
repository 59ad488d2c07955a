"""A source's games read in order here, one at a time, progress told as they go."""

from __future__ import annotations

import time
from collections.abc import Iterator

from pipelines.games.decompress import decompressed_chunks
from pipelines.games.game_filter import ScanStats
from pipelines.games.scan import split_games
from pipelines.progress import ProgressCallback
from pipelines.sources.open import OpenSource


def games_in_order(
    opened: OpenSource,
    stats: ScanStats,
    *,
    started: float,
    progress: ProgressCallback | None = None,
) -> Iterator[bytes]:
    """Yield each game of an open source (scan.split_games: without its leading "["), read in
    order, counting in `stats`; `progress` hears how far the run is, `started` (monotonic) in,
    at most twice a second, once the game before was used."""
    games = split_games(decompressed_chunks(opened.reader), stats)
    if progress is None:
        yield from games
        return
    last_report = started
    for game in games:
        if stats.games_read & 0x3FF == 0:
            now = time.monotonic()
            if now - last_report >= 0.5:
                last_report = now
                progress(stats.progress(opened.reader.bytes_read, opened.size, now - started))
        yield game
