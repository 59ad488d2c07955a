"""The three ways to make a label set: sampled materials, an EPD/FEN list, a month of games."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pipelines.endgames.dataset import check_label_set_free, write_label_set
from pipelines.endgames.from_games import GameScan, game_positions
from pipelines.endgames.labeller import Labeller
from pipelines.endgames.positions import (
    Position,
    check_sample_size,
    epd_positions,
    parse_materials,
    sample_positions,
)
from pipelines.endgames.probing import TablebaseError
from pipelines.games.game_filter import GameFilter, NothingKept
from pipelines.games.plan import PARALLEL_MIN_BYTES
from pipelines.progress import ProgressCallback
from pipelines.sources.open import Source
from pipelines.warehouse.layout import check_month


def sample_labels(
    folders: Sequence[Path],
    materials: str,
    seed: int,
    out: Path,
    backend: str = "auto",
    *,
    overwrite: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Label uniformly random positions of each material into OUT/sample-seedN.parquet.

    `progress` is called with the positions sampled so far and the number asked for.
    """
    pairs = parse_materials(materials)
    for material, count in pairs:
        check_sample_size(material, count)
    check_label_set_free(out, f"sample-seed{seed}", overwrite=overwrite)
    labeller = Labeller(folders, backend)
    for material, _ in pairs:
        pieces = len(material) - 1
        if pieces > labeller.tables.largest:
            raise TablebaseError(
                f"{material}: {pieces} pieces; the largest table here has {labeller.tables.largest}"
            )
        missing = labeller.tables.missing_for(material)
        if missing:
            raise TablebaseError(f"{material}: table {missing} is missing")

    total = sum(count for _, count in pairs)

    def positions() -> Iterator[Position]:
        done = 0

        def report(found: int) -> None:
            if progress is not None:
                progress(done + found, total)

        for material, count in pairs:
            yield from sample_positions(material, count, seed, report)
            done += count
        report(0)

    settings = {"materials": dict(pairs), "seed": seed}
    with labeller:
        return write_label_set(
            positions(), labeller, out, f"sample-seed{seed}", settings, overwrite=overwrite
        )


def epd_labels(
    folders: Sequence[Path],
    path: Path,
    out: Path,
    backend: str = "auto",
    skip_uncovered: bool = False,
    name: str | None = None,
    *,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Label the positions of an EPD/FEN list into OUT/epd-STEM.parquet."""
    path = Path(path)
    check_label_set_free(out, name or f"epd-{path.stem}", overwrite=overwrite)
    labeller = Labeller(folders, backend)
    # Read the whole list first: a bad line fails before anything is written.
    positions = list(epd_positions(path))
    settings = {"input": str(path), "skip_uncovered": skip_uncovered}
    with labeller:
        return write_label_set(
            positions,
            labeller,
            out,
            name or f"epd-{path.stem}",
            settings,
            skip_uncovered,
            overwrite=overwrite,
        )


def game_labels(
    folders: Sequence[Path],
    source: Source,
    month: str,
    out: Path,
    rules: GameFilter,
    backend: str = "auto",
    progress: ProgressCallback | None = None,
    *,
    overwrite: bool = False,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    allow_empty: bool = False,
) -> dict[str, Any]:
    """Label the distinct tablebase-phase positions of a month's kept games: OUT/games-MONTH.

    A pzstd-style file of at least `parallel_min_bytes` is read by units of frames in
    `workers` processes (see from_games.game_positions: the same label set). A source of which
    no game is kept raises NothingKept and writes nothing, unless `allow_empty`.
    """
    check_month(month)
    check_label_set_free(out, f"games-{month}", overwrite=overwrite)
    labeller = Labeller(folders, backend)
    scan = GameScan()

    def positions() -> Iterator[Position]:
        yield from game_positions(
            source,
            rules,
            labeller.tables,
            scan,
            progress,
            workers=workers,
            parallel_min_bytes=parallel_min_bytes,
        )
        if scan.stats.games_kept == 0 and not allow_empty:
            raise NothingKept(str(source), scan.stats, rules)

    settings = {"source": source, "month": month, "filter": rules.to_json()}
    with labeller:
        return write_label_set(
            positions(),
            labeller,
            out,
            f"games-{month}",
            settings,
            extra=scan.summary,
            overwrite=overwrite,
        )
