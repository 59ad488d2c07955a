"""The python-chess baseline for `chesspipe training from-games`: the same records, the plain way.

    python bench/naive_training_from_games.py OUT.plain --syzygy DIR [--no-require-eval] PGN.zst...

`chess.pgn.read_game` on every game (no rating, speed or bot filter: games with a decisive or
drawn result, whatever their ratings, as `--min-rating 0` keeps them), python-chess's `[%eval]` reader, and
python-chess's Syzygy prober for every position the tables cover (DTZ and the halfmove clock
under the 50-move rule, the first covered outcome carried back to the game's start), written as
`.plain` with `Board.fen()`.
"""

from __future__ import annotations

import argparse
import io
import sys

import chess
import chess.engine
import chess.pgn
import chess.syzygy
import zstandard

RESULTS = {"1-0": 1, "1/2-1/2": 0, "0-1": -1}


def outcome(tablebase: chess.syzygy.Tablebase, board: chess.Board) -> tuple[int, int]:
    """(result, score) of a covered position from its side to move."""
    if board.is_checkmate():
        return -1, -31752
    dtz = tablebase.probe_dtz(board)
    if dtz > 0 and dtz + board.halfmove_clock <= 100:
        return 1, 31753 - min(dtz, 246)
    if dtz < 0 and -dtz + board.halfmove_clock <= 100:
        return -1, -(31753 - min(-dtz, 246))
    return 0, 0


def mover_score(node: chess.pgn.ChildNode) -> int | None:
    """The eval after a move from the mover's view: centipawns, or 32000 - n for mate in n."""
    pov = node.eval()
    if pov is None:
        return None
    score = pov.pov(not node.board().turn)
    mate = score.mate()
    if mate is not None:
        return 32000 - mate if mate > 0 else -(32000 + mate)
    return score.score()


def game_records(
    game: chess.pgn.Game, tablebase: chess.syzygy.Tablebase, require: bool
) -> list[str]:
    white_result = RESULTS[game.headers["Result"]]
    nodes = list(game.mainline())
    if not nodes:
        return []
    scores = [mover_score(node) for node in nodes]
    if require and None in scores:
        return []
    board = game.board()
    positions = []
    first = None
    for ply, node in enumerate([*nodes, None]):
        covered = not board.castling_rights and chess.popcount(board.occupied) <= 4
        tb = outcome(tablebase, board) if covered else None
        if tb is not None and first is None:
            first = tb[0] if board.turn == chess.WHITE else -tb[0]
        if node is None:
            break
        positions.append((board.fen(), node.move.uci(), scores[ply], ply, board.turn, tb))
        board.push(node.move)
    lines = []
    for fen, move, score, ply, turn, tb in positions:
        white = first if first is not None else white_result
        result = white if turn == chess.WHITE else -white
        if tb is not None:
            result, score = tb
        if score is None:
            continue
        lines.append(f"fen {fen}\nmove {move}\nscore {score}\nply {ply}\nresult {result}\ne\n")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("pgns", nargs="+")
    parser.add_argument("--syzygy", required=True)
    parser.add_argument("--no-require-eval", dest="require", action="store_false")
    args = parser.parse_args()
    records = 0
    with chess.syzygy.open_tablebase(args.syzygy) as tablebase, open(args.out, "w") as out:
        for path in args.pgns:
            with open(path, "rb") as handle:
                text = zstandard.ZstdDecompressor().stream_reader(handle)
                pgn = io.TextIOWrapper(text, encoding="utf-8")
                while (game := chess.pgn.read_game(pgn)) is not None:
                    headers = game.headers
                    if headers.get("Result") not in RESULTS:
                        continue
                    lines = game_records(game, tablebase, args.require)
                    out.writelines(lines)
                    records += len(lines)
    print(records, file=sys.stderr)


if __name__ == "__main__":
    main()
