"""The annotated SAN walk (pipelines/games/_sanwalk.c's walk_annotated) reads the `[%clk]` and
`[%eval]` after each move as eval_comments.move_annotations reads them, on every real game it
accepts, and as python-chess reads them; its moves are walk_openings's."""

from __future__ import annotations

import functools
import io
import math
import random
from pathlib import Path

import chess.pgn
import numpy as np
import pytest

from pipelines.games.eval_comments import VALUE_MATE, move_annotations
from pipelines.games.game_filter import ScanStats
from pipelines.games.sanwalk import NO_CLOCK, NO_EVAL, Annotated, walk_annotated, walk_openings
from pipelines.games.scan import split_games
from tests.conftest import GAMES_2013, GAMES_2021, ODD_CASES, need
from tests.recount import read_text

#: A move's clock and eval as move_annotations gives them.
Values = tuple[list[int | None], list[int | None]]


@functools.cache
def games(path: Path) -> list[bytes]:
    """A dump's games as the scanner splits them, each its tags (without the first "[") and
    movetext."""
    return list(split_games([read_text(need(path, "real Lichess games")).encode()], ScanStats()))


def movetext(game: bytes) -> bytes:
    return game.partition(b"\n\n")[2]


def rows_by_text(walked: Annotated) -> list[Values | None]:
    """Each text's clocks and evals (None where a text is refused), NO_CLOCK and NO_EVAL as
    None."""
    clocks = [None if value == NO_CLOCK else value for value in walked.clocks.tolist()]
    evals = [None if value == NO_EVAL else value for value in walked.evals.tolist()]
    found: list[Values | None] = []
    end = 0
    for length in walked.lengths.tolist():
        if length < 0:
            found.append(None)
            continue
        found.append((clocks[end : end + length], evals[end : end + length]))
        end += length
    return found


def annotated(text: bytes, plies: int | None = None) -> Values | None:
    """One text's clocks and evals by the walk (None: refused)."""
    return rows_by_text(walk_annotated([text], plies=plies))[0]


def check_texts(texts: list[bytes], plies_asked: tuple[int | None, ...]) -> int:
    """Walk the texts, annotated and not, each number of plies: the same rows and, for each text
    accepted, move_annotations's values for its moves walked. Return the texts accepted whole."""
    truth = [move_annotations(text) for text in texts]
    accepted = 0
    for plies in plies_asked:
        walked, plain = walk_annotated(texts, plies=plies), walk_openings(texts, plies=plies)
        assert walked.lengths.tolist() == plain.lengths.tolist()
        assert walked.keys.tolist() == plain.keys.tolist()
        assert walked.moves.tolist() == plain.moves.tolist()
        assert len(walked.clocks) == len(walked.evals) == len(walked.keys)
        for text, found, (tokens, clocks, evals) in zip(
            texts, rows_by_text(walked), truth, strict=True
        ):
            if found is None:
                continue
            walked_clocks, walked_evals = found
            moves = len(walked_clocks)
            if plies is None:
                assert moves == len(tokens), text
                accepted += 1
            assert walked_clocks == clocks[:moves], text
            assert walked_evals == evals[:moves], text
    return accepted


@pytest.mark.parametrize(
    ("path", "least"),
    [
        (GAMES_2021, 990),
        (ODD_CASES, 90),
        pytest.param(GAMES_2013, 25000, marks=pytest.mark.slow),
    ],
    ids=["2021", "odd-cases", "2013"],
)
def test_real_games_annotate_as_move_annotations_reads_them(path: Path, least: int) -> None:
    texts = [movetext(game) for game in games(path)]
    assert check_texts(texts, (None, 1, 20)) >= least


def test_real_clocks_and_evals_are_read() -> None:
    texts = [movetext(game) for game in games(GAMES_2021)]
    walked = walk_annotated(texts)
    assert (walked.lengths >= 0).sum() >= 990
    # Every move of Lichess's 2021 games has its clock; about a tenth of the games their evals.
    assert (walked.clocks != NO_CLOCK).all()
    assert 0.05 * len(walked.evals) < (walked.evals != NO_EVAL).sum() < 0.2 * len(walked.evals)
    assert (np.abs(walked.evals[walked.evals != NO_EVAL]) >= VALUE_MATE - 100).any()  # mates


def python_chess_values(game: chess.pgn.Game) -> Values:
    """A game's clocks (floor of tenths) and evals (White's view, mates as the walk writes them)
    as python-chess reads them."""
    clocks: list[int | None] = []
    evals: list[int | None] = []
    for node in game.mainline():
        seconds = node.clock()
        clocks.append(None if seconds is None else math.floor(round(seconds * 10, 6)))
        score = node.eval()
        evals.append(None if score is None else score.white().score(mate_score=VALUE_MATE))
    return clocks, evals


def test_python_chess_reads_the_same_clocks_and_evals() -> None:
    first = games(GAMES_2021)[:200]
    walked = rows_by_text(walk_annotated([movetext(game) for game in first]))
    # (the scanner splits a game from the next at "\n\n[": each begins after its "[")
    handle = io.StringIO("\n\n".join("[" + game.decode() for game in first))
    evaluated = 0
    for found in walked:
        game = chess.pgn.read_game(handle)
        assert game is not None and not game.errors
        assert found == python_chess_values(game)
        evaluated += any(value is not None for value in found[1])
    assert evaluated > 5


#: One game's moves, to hang hand-written comments on.
MOVES = [b"e4", b"e5", b"Nf3", b"Nc6", b"Bb5", b"a6"]


def commented(*comments: bytes) -> bytes:
    """MOVES numbered, the comments after each in turn (b"" for none)."""
    words = []
    for ply, (move, comment) in enumerate(zip(MOVES, comments, strict=False)):
        words.append(f"{ply // 2 + 1}{'.' if ply % 2 == 0 else '...'} ".encode() + move)
        if comment:
            words.append(comment)
    words.extend(MOVES[len(comments) :])
    return b" ".join(words) + b" 1-0"


def test_hand_written_comments() -> None:
    cases: list[tuple[bytes, Values]] = [
        # fractions of any length, rounded down to tenths
        (
            commented(
                b"{ [%clk 0:00:09.7] }",
                b"{ [%clk 0:00:09.79] }",
                b"{[%clk 1:02:03.]}",
                b"{[%clk 0:00:09.123456]}",
                b"{[%clk 9999:59:59.9]}",
            ),
            ([97, 97, 37230, 91, 359999999, None], [None] * 6),
        ),
        # several comments after a move: the first clock and the first eval decide
        (
            commented(
                b"{ hello } { [%clk 0:01:00] } { [%clk 0:02:00] [%eval 0.3] } { [%eval 0.5] }",
                b"{ [%eval x] } { [%eval 0.4] }",  # the first eval does not read: none
                b"{ [%eval] [%evaluation 1] [%eval 0.2] }",  # not commands: the third is
            ),
            ([600, None, None, None, None, None], [30, None, 20, None, None, None]),
        ),
        # a comment before the first move belongs to none
        (
            b"{ [%clk 0:01:00] [%eval 0.2] } 1. e4 e5 { [%clk 0:00:59] }",
            ([None, 590], [None, None]),
        ),
        # mates: White's view; #0 (the side to move is mated) by the side that moved
        (
            commented(
                b"{[%eval #-3]}",
                b"{[%eval #-3]}",
                b"{[%eval #+2,30]}",
                b"{[%eval #0]}",
                b"{[%eval #-0]}",
                b"{[%eval #3.5]}",
            ),
            ([None] * 6, [-31997, -31997, 31998, -32000, 32000, None]),
        ),
        # centipawns: a depth ignored, signs, the range's end, values that do not read
        (
            commented(
                b"{ [%eval 0.17,20] }",
                b"{ [%eval -1.5] }",
                b"{ [%eval +3] }",
                b"{ [%eval 315.06] }",
                b"{ [%eval -315.07] }",
                b"{ [%eval 99999999999] }",
            ),
            ([None] * 6, [17, -150, 300, 31506, None, None]),
        ),
        (
            commented(
                b"{ [%eval .5] }",
                b"{ [%eval -0.05] }",
                b"{ [%eval\t 0.17 ] }",
                b"{ [%eval 1.] }",
                b"{ [%eval 0.123] }",
                b"{ [%eval 0.17,] }",
            ),
            ([None] * 6, [50, -5, 17, None, None, None]),
        ),
        # other commands around them; clocks that do not read
        (
            commented(
                b"{ [%csl Ga4,Rb5] [%cal Ge2e4] [%clk 0:00:30] [%eval -0.3] [%emt 0:00:01] }",
                b"{ [%clk 0:60:00] }",
                b"{ [%clk 10000:00:00] }",
                b"{ [%clk0:01:00] [%clk  0:01:01 ] }",
                b"{ [%clk 0:1:00] }",
                b"{ [%clk 0:01:00 }",  # no closing bracket: none
            ),
            ([300, None, None, 610, None, None], [-30, None, None, None, None, None]),
        ),
    ]
    for text, expected in cases:
        tokens, clocks, evals = move_annotations(text)
        assert len(tokens) == len(expected[0]), text
        assert (clocks, evals) == expected, text
        assert annotated(text) == expected, text


def test_a_game_cut_inside_a_comment() -> None:
    text = b"1. e4 { [%clk 0:01:00] } 1... e5 { [%clk 0:00:5"
    assert move_annotations(text) == ([b"e4", b"e5"], [600, None], [None, None])
    # The walk refuses it, as walk_openings does; the moves before the cut stand.
    assert annotated(text) is None
    assert walk_openings([text]).lengths.tolist() == [-1]
    assert annotated(text, 1) == ([600], [None])
    assert annotated(text, 2) == ([600, None], [None, None])


def test_past_the_moves_asked_for_the_last_ones_comments_are_read() -> None:
    text = b"1. e4 $1 { [%clk 0:01:00] } ! { [%eval 0.3] } 1... e5 { [%clk 0:00:50] } 2. Nf3"
    assert annotated(text, 0) == ([], [])
    assert annotated(text, 1) == ([600], [30])
    assert annotated(text, 2) == ([600, 500], [30, None])
    # Reading on stops at what the walk would refuse (a variation): the moves walked stand.
    text = b"1. e4 { [%clk 0:01:00] } ( 1. d4 { [%eval 0.3] } ) { [%eval 0.2] } 1... e5"
    assert annotated(text) is None
    assert annotated(text, 1) == ([600], [None])
    # (move_annotations reads the main line: the variation's comments belong to no move)
    assert move_annotations(text) == ([b"e4", b"e5"], [600, None], [20, None])


def test_variations_and_their_comments_belong_to_no_main_line_move() -> None:
    text = (
        b"1. e4 { [%clk 0:01:00] } ( 1. d4 { [%clk 0:00:01] } 1... d5 ( 1... Nf6 { x } ) ) "
        b"1... e5 ; a rest-of-line { [%clk 0:00:02]\n{ [%clk 0:00:59] } 2. Nf3 ( 2. f4"
        b" { [%clk 0:00:03] } ) 2... Nc6 ( 2... d6 { [%eval 9] "
    )
    assert move_annotations(text) == (
        [b"e4", b"e5", b"Nf3", b"Nc6"],
        [600, 590, None, None],
        [None] * 4,
    )


def digits(rng: random.Random, *lengths: int) -> str:
    """Random digits, as many as one of `lengths` (the first most often)."""
    length = lengths[0] if rng.random() < 0.7 else rng.choice(lengths)
    return "".join(rng.choice("0123456789") for _ in range(length))


def random_command(rng: random.Random) -> bytes:
    """A [%clk] or [%eval] near the grammar: parts of usual and odd lengths, now and then a
    byte mangled."""
    if rng.random() < 0.5:
        minutes, seconds = (f"{rng.choice('0123456')}{digits(rng, 1, 0, 2)}" for _ in "ms")
        value = f"{digits(rng, 1, 0, 2, 4, 5)}:{minutes}:{seconds}"
        value += rng.choice(["", "", ".", f".{digits(rng, 1, 2, 6)}"])
        name = "clk"
    else:
        if rng.random() < 0.3:
            value = "#" + rng.choice(["", "+", "-"]) + digits(rng, 1, 0, 4, 5)
        else:
            value = rng.choice(["", "+", "-"]) + digits(rng, 1, 0, 3, 10, 11)
            value += rng.choice(["", ".", f".{digits(rng, 2, 1, 3)}"])
        value += rng.choice(["", "", ",", f",{digits(rng, 2, 4, 5)}"])
        name = "eval"
    space = rng.choice([" ", " ", " ", "  ", chr(9), ""])
    command = bytearray(f"[%{name}{space}{value}{rng.choice([']', ']', ' ]'])}", "ascii")
    if rng.random() < 0.1:
        command[rng.randrange(len(command))] = rng.choice(b"[]%:.,#-+ 0x")
    return bytes(command)


def test_random_comments_read_as_move_annotations_reads_them() -> None:
    rng = random.Random(7)
    words = movetext(games(GAMES_2021)[0]).split()
    moves = [word for word in words if not word[:1].isdigit() and word[:1] not in b"{[}"]
    texts = []
    for _ in range(3000):
        parts = []
        for ply, move in enumerate(moves[: rng.randrange(1, 12)]):
            parts.append(f"{ply // 2 + 1}{'.' if ply % 2 == 0 else '...'}".encode())
            parts.append(move)
            for _ in range(rng.choice([0, 1, 1, 2])):
                inside = [random_command(rng) for _ in range(rng.randrange(4))]
                inside.insert(rng.randrange(len(inside) + 1), rng.choice([b"", b" ", b"[%csl]"]))
                parts.append(b"{ " + b" ".join(inside) + b" }")
        texts.append(b" ".join(parts))
    assert check_texts(texts, (None, 1, 3)) == len(texts)
    walked = walk_annotated(texts)
    assert (walked.clocks != NO_CLOCK).sum() > 2000 and (walked.evals != NO_EVAL).sum() > 2000
