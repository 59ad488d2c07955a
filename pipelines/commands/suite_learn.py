"""`chesspipe suite learn`: drop a suite's exits by the matches played with it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipelines.commands.options import add_file_roles, positive_int, settings_as_flags
from pipelines.commands.suite_build import rate_span


def register(subparsers: Any) -> None:
    from pipelines.suites.settings import LearnSettings

    default = LearnSettings()
    parser = subparsers.add_parser(
        "learn",
        help="count match games per exit and drop the exits whose draw rate leaves a window",
        description="Read the PGN of matches played with a suite (fastchess or cutechess-cli, "
        "-repeat: each opening twice, colours swapped), count each exit's games (White wins, "
        "draws, Black wins, and pentanomial pairs for one engine), and write the suite without "
        "the exits whose draw rate, after --min-games games, lies outside --draw-rate, with a "
        "manifest NEW.json holding every played exit's counts. A game is an exit's by its start "
        "position (FEN tag) or, for a PGN suite played as book moves, a position of its first "
        "moves.",
    )
    parser.add_argument("matches", nargs="+", type=Path, metavar="MATCH.pgn")
    parser.add_argument("--suite", required=True, type=Path, help="the suite the matches played")
    parser.add_argument("--out", required=True, type=Path, help="NEW.epd or NEW.pgn")
    parser.add_argument(
        "--min-games",
        type=positive_int,
        default=default.min_games,
        help=f"games an exit needs before it can be dropped ({default.min_games})",
    )
    parser.add_argument(
        "--draw-rate",
        type=rate_span,
        default=default.draw_rate,
        metavar="LOW..HIGH",
        help="keep exits whose draw rate lies in this window (0.1..0.9)",
    )
    parser.add_argument(
        "--engine", help="the engine whose points pairs count (the first game's White)"
    )
    add_file_roles(parser, reads=("matches", "suite"), writes=("out",))
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.suites.learn import learn_suite
    from pipelines.suites.settings import LearnSettings

    with settings_as_flags():
        settings = LearnSettings(args.min_games, args.draw_rate)
    result = learn_suite(args.matches, args.suite, args.out, settings, engine=args.engine)
    print(json.dumps(result.summary(), indent=2))
    return 0
