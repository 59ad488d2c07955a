"""`chesspipe search`: the games whose positions match, from the explorer's games."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pipelines.commands.options import (
    existing_warehouse,
    non_negative_int,
    positive_int,
    settings_as_flags,
)

FORMATS = ("table", "json", "pgn")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "search",
        help="find the games where a position, a structure or a material balance appears",
        description="Replay the explored months' games (kept by `explorer index` or a build "
        "with the explorer) and give those with a position that matches: an exact --fen, a "
        "--subfen pattern (the pieces given on their squares, the rest any), --material, "
        "--imbalance, --stm, --result; each flag may be given again (any of them), all flags "
        "together (all of them). --query takes Scoutfish's JSON query language instead "
        '(sequence and streak included), e.g. \'{"sequence": [{"sub-fen": '
        '"8/8/8/8/2B5/8/8/8"}, {"sub-fen": "8/8/8/8/8/5B2/8/8"}]}\' or @FILE. Matches stream '
        "out in month and game order, each with the plies it matched at (0: the start).",
    )
    parser.add_argument("--warehouse", type=Path, required=True, metavar="DIR")
    rules = parser.add_argument_group("the position (all of these hold at one ply)")
    rules.add_argument("--fen", action="append", default=[], help="a whole position (FEN)")
    rules.add_argument("--subfen", action="append", default=[], metavar="PATTERN",
                       help="pieces on squares, e.g. 8/8/p7/8/8/1B3N2/8/8")  # fmt: skip
    rules.add_argument("--material", action="append", default=[], metavar="KRPKR",
                       help="both sides' pieces exactly, White's first")  # fmt: skip
    rules.add_argument("--imbalance", action="append", default=[], metavar="PPvN",
                       help="White's extra pieces, v, Black's")  # fmt: skip
    rules.add_argument("--stm", choices=("white", "black"), help="the side to move")
    rules.add_argument("--result", action="append", default=[],
                       choices=("1-0", "0-1", "1/2-1/2"), help="the game's result")  # fmt: skip
    rules.add_argument("--query", metavar="JSON", help="a Scoutfish query (or @FILE)")
    games = parser.add_argument_group("the games searched")
    games.add_argument("--months", default="all", help="YYYY-MM, a range, a list or all (all)")
    games.add_argument("--speeds", help="comma-separated speeds (all)")
    games.add_argument("--min-rating", type=non_negative_int, default=0,
                       help="both players rated at least this")  # fmt: skip
    games.add_argument("--player", help="a player's games (either side, any case)")
    parser.add_argument("--limit", type=positive_int, help="stop after this many games")
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (default), json (a line a game) or pgn")  # fmt: skip
    parser.add_argument("--workers", type=positive_int, default=os.cpu_count() or 1,
                        help="threads replaying games (the machine's cores)")  # fmt: skip
    parser.add_argument("--quiet", action="store_true", help="no summary on stderr")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pipelines.errors import UsageError
    from pipelines.search.games import (
        SearchSettings,
        SearchStats,
        condition_json,
        read_query_file,
        search_games,
    )
    from pipelines.search.query import parse_query, query_from_json

    existing_warehouse(args.warehouse)
    flags = condition_json(fen=args.fen, sub_fen=args.subfen, material=args.material,
                           imbalance=args.imbalance, stm=args.stm, result=args.result)  # fmt: skip
    if args.query is not None and flags:
        raise UsageError("--query goes alone: give its rules inside the JSON, or use the "
                             "rule flags without it")  # fmt: skip
    if args.query is None and not flags:
        raise UsageError("say what to find: --fen, --subfen, --material, --imbalance, "
                             "--stm, --result or --query")  # fmt: skip
    query = parse_query(read_query_file(args.query)) if args.query else query_from_json(flags)
    if args.limit is not None:
        query = query.limited(args.limit)
    speeds = None
    if args.speeds is not None:
        speeds = frozenset(s.strip() for s in args.speeds.split(",") if s.strip())
    with settings_as_flags():
        settings = SearchSettings(args.months, speeds, args.min_rating, args.player)
    stats = SearchStats()
    out = sys.stdout
    if args.format == "table":
        out.write(f"{'month':7}  {'game':8}  {'white':24}  {'black':24}  {'result':7}  plies\n")
    for match in search_games(args.warehouse, query, settings, workers=args.workers,
                              stats=stats):  # fmt: skip
        if args.format == "json":
            out.write(json.dumps(match.to_json()) + "\n")
        elif args.format == "pgn":
            out.write(match.pgn() + "\n\n")
        else:
            white = _player(match.white, match.white_elo)
            black = _player(match.black, match.black_elo)
            plies = ",".join(map(str, match.plies))
            out.write(f"{match.month:7}  {match.id:8}  {white:24}  {black:24}  "
                      f"{match.result:7}  {plies}\n")  # fmt: skip
        out.flush()
    if not args.quiet:
        rate = stats.positions_per_second / 1e6
        print(f"chesspipe: {stats.matched:,} games matched of {stats.games:,} searched in "
              f"{stats.months} months ({stats.positions:,} positions, {rate:.1f} M/s)",
              file=sys.stderr)  # fmt: skip
        if stats.without_moves:
            print(f"chesspipe: {len(stats.without_moves)} months keep no moves of their games "
                  f"and were not searched ({', '.join(stats.without_moves)}): index them again "
                  "without --no-games (chesspipe explorer index)", file=sys.stderr)  # fmt: skip
    return 0


def _player(name: str, elo: int | None) -> str:
    return f"{name} ({elo})" if elo is not None else name
