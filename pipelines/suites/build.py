"""`suite build`: the exits of the statistics, judged by the evaluation store, drawn and
written as an EPD or PGN suite with a manifest beside it."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json
from pipelines.suites.exits import Exit, statistics_moves, walk_exits
from pipelines.suites.files import epd_line, pgn_game, suite_format
from pipelines.suites.settings import SuiteSettings
from pipelines.warehouse.locks import output_lock
from pipelines.warehouse.resources import DEFAULT_RESOURCES, QueryResources
from schemas.atomic_files import OutputSet, check_output
from schemas.version import __version__

if TYPE_CHECKING:
    from pipelines.evals.store import Evaluation


def suite_manifest_path(suite: Path) -> Path:
    """The manifest beside a suite: SUITE.json for SUITE.epd."""
    return Path(suite).with_suffix(".json")


@dataclass(frozen=True)
class SuiteCounts:
    """How the exits became the suite: found by the walk, of the side asked, without an
    evaluation (or without the WDL a draw-rate window needs), outside the window, kept."""

    positions: int
    exits: int
    side: int
    unevaluated: int
    outside: int
    written: int

    def to_json(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class SuiteManifest:
    """What `suite build` wrote and from what."""

    chesspipe_version: str
    out: str
    format: str
    warehouse: str
    months: tuple[str, ...]
    speeds: tuple[str, ...] | None
    min_band: int | None
    evals: str | None
    settings: SuiteSettings
    counts: SuiteCounts
    white_to_move: int
    sha256: str
    seconds: float
    finished_at: str

    def to_json(self) -> dict[str, Any]:
        return {
            "chesspipe_version": self.chesspipe_version,
            "out": self.out,
            "format": self.format,
            "warehouse": self.warehouse,
            "months": list(self.months),
            "speeds": None if self.speeds is None else list(self.speeds),
            "min_band": self.min_band,
            "evals": self.evals,
            "settings": self.settings.record(),
            "counts": self.counts.to_json(),
            "white_to_move": self.white_to_move,
            "sha256": self.sha256,
            "seconds": self.seconds,
            "finished_at": self.finished_at,
        }


class EmptySuite(ChesspipeError):
    """No exit passes the settings: nothing is written."""


def _in_window(evaluation: Evaluation | None, settings: SuiteSettings) -> bool | None:
    """Whether an exit's evaluation lies in the window; None where it cannot say (no
    evaluation, or no WDL for a draw-rate window)."""
    if evaluation is None:
        return None
    if settings.window is not None:
        low, high = settings.window
        return low <= evaluation.score <= high
    assert settings.draw_rate is not None
    if evaluation.wdl is None:
        return None
    low_rate, high_rate = settings.draw_rate
    return low_rate <= evaluation.wdl[1] / 1000 <= high_rate


def _drawn(exits: list[Exit], settings: SuiteSettings) -> list[Exit]:
    """`settings.count` exits drawn with `settings.seed` (`white_share` of them White to
    move, as near as there are), in the walk's order; all of them without a count."""
    if settings.count is None or settings.count >= len(exits) and settings.white_share is None:
        return exits
    rng = random.Random(settings.seed)
    if settings.white_share is None:
        chosen = set(rng.sample(range(len(exits)), settings.count))
    else:
        whites = [i for i, e in enumerate(exits) if e.white_to_move]
        blacks = [i for i, e in enumerate(exits) if not e.white_to_move]
        want_white = min(len(whites), round(settings.count * settings.white_share))
        want_black = min(len(blacks), settings.count - want_white)
        want_white = min(len(whites), settings.count - want_black)
        chosen = set(rng.sample(whites, want_white)) | set(rng.sample(blacks, want_black))
    return [exit_ for i, exit_ in enumerate(exits) if i in chosen]


def _suite_text(exits: list[Exit], kind: str, evaluations: dict[int, Evaluation]) -> str:
    parts = []
    for number, exit_ in enumerate(exits, 1):
        if kind == "pgn":
            parts.append(pgn_game(exit_.moves, number))
            continue
        found = evaluations.get(exit_.key)
        cp = None if found is None or found.mate is not None else found.cp
        parts.append(
            epd_line(
                exit_.board(),
                line=exit_.san_line(),
                games=exit_.games,
                cp=cp,
                depth=None if found is None else found.depth,
                wdl=None if found is None else found.wdl,
            )
            + "\n"
        )
    return "".join(parts)


def build_suite(
    warehouse: Path,
    months: str | list[str],
    out: Path,
    settings: SuiteSettings | None = None,
    *,
    speeds: tuple[str, ...] | None = None,
    min_band: int | None = None,
    evals: Path | None = None,
    resources: QueryResources = DEFAULT_RESOURCES,
) -> SuiteManifest:
    """Write a suite of the exits of `months` (a selection as `pipelines.warehouse.months`
    reads it) to `out` (.epd or .pgn) and its manifest beside it (suite_manifest_path); return
    the manifest. `speeds` and `min_band` choose the statistics rows as books do. `evals` (a
    warehouse with an evaluation store) gives the exits' evaluations: the EPD's `ce`, `acd` and
    `c2 "wdl ..."`, and the window's judgement. Raises EmptySuite (nothing written) when no
    exit is left."""
    from pipelines.books.build import stats_filter
    from pipelines.books.settings import BookSettings
    from pipelines.evals.store import read_evaluations
    from pipelines.warehouse.integrity import check_contents, month_expected
    from pipelines.warehouse.layout import available_months
    from pipelines.warehouse.months import missing_months, select_months
    from pipelines.warehouse.sql import connect, stable_read

    settings = settings or SuiteSettings()
    started = time.monotonic()
    kind = suite_format(out)
    manifest_file = suite_manifest_path(out)
    for path in (out, manifest_file):
        check_output(path)
    if settings.judged and evals is None:
        raise ChesspipeError("a window judges exits by their evaluations: give the store (evals)")
    have = available_months(warehouse)
    wanted = select_months(months, available=have) if isinstance(months, str) else list(months)
    missing = missing_months(wanted, have)
    if missing:
        raise ChesspipeError(f"{missing} in {warehouse} (ingest them first)")
    where, params = stats_filter(wanted, BookSettings(speeds=speeds, min_band=min_band))

    def read() -> Any:
        con = connect(warehouse, resources=resources)
        try:
            found = walk_exits(statistics_moves(con, where, params), settings)
        finally:
            con.close()
        check_contents(warehouse, [month_expected(warehouse, month) for month in wanted])
        return found

    walk = stable_read(warehouse, read)
    exits = walk.exits
    if settings.side is not None:
        exits = [e for e in exits if e.white_to_move == (settings.side == "white")]
    side = len(exits)
    evaluations = read_evaluations(evals, [e.key for e in exits]) if evals is not None else {}
    unevaluated = outside = 0
    if settings.judged:
        kept = []
        for exit_ in exits:
            inside = _in_window(evaluations.get(exit_.key), settings)
            if inside is None:
                unevaluated += 1
            elif inside:
                kept.append(exit_)
            else:
                outside += 1
        exits = kept
    exits = _drawn(exits, settings)
    counts = SuiteCounts(walk.positions, len(walk.exits), side, unevaluated, outside, len(exits))
    if not exits:
        raise EmptySuite(_empty_reason(counts, settings))
    # Under the output's lock (a second run to it fails at once; what killed runs left beside
    # it goes): the suite, then its manifest.
    outputs = OutputSet(out, manifest_file, sync=True)
    with output_lock(out, manifest_file), outputs:
        staged = outputs.path(out)
        staged.write_text(_suite_text(exits, kind, evaluations))
        manifest = SuiteManifest(
            chesspipe_version=__version__,
            out=str(out),
            format=kind,
            warehouse=str(Path(warehouse).resolve()),
            months=tuple(wanted),
            speeds=speeds,
            min_band=min_band,
            evals=None if evals is None else str(Path(evals).resolve()),
            settings=settings,
            counts=counts,
            white_to_move=sum(e.white_to_move for e in exits),
            sha256=file_sha256(staged),
            seconds=round(time.monotonic() - started, 3),
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        write_json(outputs.path(manifest_file), manifest.to_json())
    return manifest


def _empty_reason(counts: SuiteCounts, settings: SuiteSettings) -> str:
    if not counts.exits:
        return (
            f"no position at plies {settings.first_ply}..{settings.last_ply} is reached by "
            f"{settings.min_games} games or more (the walk reached {counts.positions:,} "
            "positions): ask fewer games or other plies; nothing written"
        )
    if not counts.side:
        return f"none of the {counts.exits:,} exits has {settings.side} to move; nothing written"
    window = "evaluation" if settings.window is not None else "draw-rate"
    what = "an evaluation" if settings.window is not None else "the engine's WDL"
    return (
        f"no exit lies in the {window} window: of {counts.side:,} exits, {counts.outside:,} lie "
        f"outside it and {counts.unevaluated:,} have no {what} in the store (analyse them: "
        "chesspipe evals analyse --suite RAW.epd); nothing written"
    )
