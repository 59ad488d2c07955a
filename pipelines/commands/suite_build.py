"""`chesspipe suite build`: an EPD or PGN suite of the statistics' popular exits."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pipelines.commands.options import (
    add_file_roles,
    add_resources_options,
    existing_warehouse,
    fraction,
    integer,
    non_negative_int,
    positive_int,
    resources_from_args,
    settings_as_flags,
)
from pipelines.errors import ChesspipeError

T = TypeVar("T")


def span(kind: Callable[[str], T]) -> Callable[[str], tuple[T, T]]:
    """A `LOW..HIGH` option (or one value, for both ends)."""

    def parse(text: str) -> tuple[T, T]:
        low, dots, high = text.partition("..")
        try:
            first = kind(low)
            return (first, kind(high) if dots else first)
        except (ValueError, argparse.ArgumentTypeError):
            raise argparse.ArgumentTypeError(f"not LOW..HIGH: {text!r}") from None

    return parse


def _rate(text: str) -> float:
    if not re.fullmatch(r"[0-9]*\.?[0-9]+", text.strip()):
        raise ValueError(text)
    return float(text)


#: A `LOW..HIGH` of rates (0.40..0.60).
rate_span = span(_rate)


def register(subparsers: Any) -> None:
    from pipelines.suites.settings import SuiteSettings

    default = SuiteSettings()
    parser = subparsers.add_parser(
        "build",
        help="write an EPD or PGN suite of popular exits",
        description="Walk the statistics' moves from the start position and write the "
        "positions reached at --plies by at least --min-games games (a line goes on through a "
        "move while at least --stop-early games played it) as an EPD suite (the FEN's four "
        "fields, hmvc and fmvn, c0 the line in SAN, c1 the games, and from the evaluation store "
        'ce, acd and c2 "wdl W D L") or a PGN suite (each line a game), with a manifest '
        "SUITE.json beside it. With --evals and --window or --draw-rate, only the exits whose "
        "stored evaluation lies in the window: build a raw suite, analyse it (chesspipe evals "
        "analyse --suite RAW.epd), then build again with the window.",
    )
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path, help="SUITE.epd or SUITE.pgn")
    parser.add_argument(
        "--months", default="all", help="YYYY-MM, YYYY-MM..YYYY-MM, a list, or all (all)"
    )
    parser.add_argument(
        "--speeds", default=None, help="only these speeds' statistics (comma-separated)"
    )
    parser.add_argument(
        "--min-band", type=non_negative_int, default=None, help="only rating bands >= this"
    )
    parser.add_argument(
        "--plies",
        type=span(positive_int),
        default=(default.first_ply, default.last_ply),
        metavar="MIN..MAX",
        help=f"the exits' plies ({default.first_ply}..{default.last_ply}; 16 is 16..16)",
    )
    parser.add_argument(
        "--min-games",
        type=positive_int,
        default=default.min_games,
        help=f"games that must reach an exit ({default.min_games})",
    )
    parser.add_argument(
        "--stop-early",
        type=positive_int,
        metavar="K",
        help="a line ends once fewer than K games played its next move (--min-games)",
    )
    parser.add_argument("--side", choices=("white", "black"), help="only this side to move")
    parser.add_argument(
        "--white-share",
        type=fraction,
        metavar="SHARE",
        help="with --count: this share of the exits drawn with White to move",
    )
    parser.add_argument("--count", type=positive_int, help="draw this many exits")
    parser.add_argument("--seed", type=integer, default=default.seed, help="the draw's seed")
    parser.add_argument(
        "--evals", type=Path, help="a warehouse whose evaluation store judges the exits"
    )
    window = parser.add_mutually_exclusive_group()
    window.add_argument(
        "--window",
        type=span(integer),
        metavar="CP..CP",
        help="keep exits evaluated in this window (centipawns, the side to move's view)",
    )
    window.add_argument(
        "--draw-rate",
        type=rate_span,
        metavar="LOW..HIGH",
        help="keep exits whose engine WDL draw rate lies in this window (0.40..0.60)",
    )
    add_file_roles(parser, writes=("out",))
    add_resources_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.suites.build import build_suite
    from pipelines.suites.settings import SuiteSettings

    existing_warehouse(args.warehouse)
    if args.evals is not None:
        existing_warehouse(args.evals)
    speeds = tuple(s for s in args.speeds.split(",") if s) if args.speeds else None
    with settings_as_flags():
        settings = SuiteSettings(
            first_ply=args.plies[0],
            last_ply=args.plies[1],
            min_games=args.min_games,
            stop_early=args.stop_early,
            side=args.side,
            white_share=args.white_share,
            count=args.count,
            seed=args.seed,
            window=args.window,
            draw_rate=args.draw_rate,
        )
    if settings.judged and args.evals is None:
        raise ChesspipeError("--window and --draw-rate judge exits by --evals: give it")
    manifest = build_suite(
        args.warehouse,
        args.months,
        args.out,
        settings,
        speeds=speeds,
        min_band=args.min_band,
        evals=args.evals,
        resources=resources_from_args(args),
    )
    print(json.dumps(manifest.to_json(), indent=2))
    return 0
