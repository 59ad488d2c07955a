"""The compiled SAN walk (pipelines/games/_sanwalk.c) agrees with python-chess on every game it
accepts, and counting in batches with it equals counting by python-chess alone."""

from __future__ import annotations

import functools
import itertools
import random
from pathlib import Path

import chess
import chess.polyglot
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from pipelines.games.game_filter import GameFilter, KeptGame, ScanStats
from pipelines.games.sanwalk import Walked, walk_openings
from pipelines.games.scan import kept_games, split_games
from pipelines.ingest.counting import IllegalMove, MoveCounter, OpeningTree
from schemas.movetext import san_tokens
from schemas.speed import Speed
from tests.random_moves import random_move
from tests.recount import read_text


def python_chess_rows(
    token_lists: list[list[bytes]],
) -> tuple[list[int], list[int], list[int], list[int]]:
    tree = OpeningTree()
    keys, moves, games, rejected = [], [], [], []
    for index, tokens in enumerate(token_lists):
        try:
            walked = tree.walk(tokens)
        except IllegalMove:
            rejected.append(index)
            continue
        for key, move in walked:
            keys.append(key)
            moves.append(move)
            games.append(index)
    return keys, moves, games, rejected


def owners(walked: Walked) -> list[int]:
    """The text each row of a walk belongs to."""
    lengths = np.maximum(walked.lengths, 0)
    return np.repeat(np.arange(len(lengths)), lengths).tolist()


def refused(walked: Walked) -> list[int]:
    return np.flatnonzero(walked.lengths < 0).tolist()


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["standard-2013-01-part1.pgn.zst", "standard-2021-10-sample.pgn.zst", "odd-cases.pgn"]
)
def test_every_real_game_agrees(name: str) -> None:
    from tests.conftest import LICHESS_DIR, need

    path = need(LICHESS_DIR / name, "real Lichess games")
    stats = ScanStats()
    games = list(
        kept_games(
            split_games([read_text(path).encode()], stats),
            GameFilter(0, frozenset(Speed), True),
            stats,
        )
    )
    tokens = [t for t in (san_tokens(g.movetext, 20) for g in games) if t]
    result = walk_openings([b" ".join(t) for t in tokens])
    keys, moves, games, rejected = python_chess_rows(tokens)
    assert refused(result) == rejected == []
    assert result.keys.tolist() == keys
    assert result.moves.tolist() == moves
    assert owners(result) == games
    assert len(keys) > 10000 or name != "standard-2013-01-part1.pgn.zst"


def random_game_tokens(rng: random.Random, plies: int) -> list[bytes]:
    board = chess.Board()
    tokens = []
    for _ in range(plies):
        move = random_move(board, rng, special_share=0.7)
        if move is None:
            break
        tokens.append(board.san(move).encode())
        board.push(move)
    return tokens


@pytest.mark.slow
def test_random_games_with_special_moves_agree() -> None:
    rng = random.Random(11)
    tokens = [random_game_tokens(rng, rng.randrange(1, 200)) for _ in range(300)]
    result = walk_openings([b" ".join(t) for t in tokens])
    keys, moves, games, rejected = python_chess_rows(tokens)
    assert refused(result) == rejected == []
    assert (result.keys.tolist(), result.moves.tolist(), owners(result)) == (keys, moves, games)


MANGLE = st.sampled_from(
    [
        b"Ke3",
        b"O-O",
        b"O-O-O",
        b"0-0",
        b"e5",
        b"exd6",
        b"Nbd7",
        b"Qh5+",
        b"e8=Q",
        b"e8Q",
        b"Nf3#",
        b"Zz9",
        b"--",
        b"e4!",
        b"Bb5+!?",
        b"R1e2",
        b"Kxe2",
        b"h8=N+",
        b"a1",
    ]
)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), cut=st.integers(0, 40), junk=MANGLE)
def test_mangled_games_are_rejected_exactly_when_python_chess_rejects(
    seed: int, cut: int, junk: bytes
) -> None:
    """A game the compiled walk accepts must be one python-chess accepts, with the same rows."""
    rng = random.Random(seed)
    tokens = random_game_tokens(rng, 40)
    tokens = tokens[:cut] + [junk] + tokens[cut + 1 :]
    assert_batched_counts_as_plain(
        KeptGame(2300, 2300, Speed.BLITZ, 2, None, b" ".join(tokens)), 20
    )


def assert_batched_counts_as_plain(game: KeptGame, plies: int) -> None:
    """Counting a game in a batch gives the rows and drops of counting it by python-chess."""
    stats = ScanStats()
    batched = MoveCounter(plies, stats, batched=True)
    batched.add(game)
    batched.flush()
    plain_stats = ScanStats()
    plain = MoveCounter(plies, plain_stats, batched=False)
    plain.add(game)
    assert stats.dropped == plain_stats.dropped
    assert stats.games_kept == plain_stats.games_kept
    assert bytes(batched.rows.keys) == bytes(plain.rows.keys)
    assert bytes(batched.rows.moves) == bytes(plain.rows.moves)
    assert bytes(batched.rows.points) == bytes(plain.rows.points)


def test_en_passant_key_only_with_a_capturer() -> None:
    """The en passant file is in a key only where a pawn of the side to move stands beside the
    pawn that made the double step, as Polyglot says (whether it may take or not)."""
    lines = [
        b"e4 d5 e5 f5 h3",  # f6: White's e5 pawn beside, it may take
        b"e4 e5 d4 exd4 c4 d5",  # c3: Black's d4 pawn beside, it may take
        b"e4 h6 e5 d5 Ke2 f5 Ke3",  # d6 then f6: beside, and White's king could be in check
        b"e4 h6",  # e3: no Black pawn beside
        b"a4 h5 a5 b5 axb6 h4 g4 hxg3",  # twice taken en passant
    ]
    result = walk_openings(lines)
    keys, moves, games, rejected = python_chess_rows([line.split() for line in lines])
    assert refused(result) == rejected == []
    assert (result.keys.tolist(), result.moves.tolist(), owners(result)) == (keys, moves, games)


def test_counter_batches_equal_one_by_one(games_2021: Path) -> None:
    stats = ScanStats()
    games = list(
        kept_games(
            split_games([read_text(games_2021).encode()], stats),
            GameFilter(0, frozenset(Speed), True),
            stats,
        )
    )
    results = []
    for batched in (True, False):
        counts = ScanStats()
        counter = MoveCounter(20, counts, batched=batched, batch_size=64)
        for game in games:
            counter.add(game)
        counter.flush()
        results.append(
            (
                counts.games_kept,
                dict(counts.dropped),
                bytes(counter.rows.keys),
                bytes(counter.rows.moves),
                bytes(counter.rows.points),
                bytes(counter.rows.bands),
                bytes(counter.rows.speeds),
                bytes(counter.rows.groups),
                bytes(counter.rows.ratings),
            )
        )
    assert results[0] == results[1]


@functools.cache
def first_kept_games(path: Path, count: int) -> list[KeptGame]:
    stats = ScanStats()
    games = kept_games(
        split_games([read_text(path).encode()], stats), GameFilter(0, frozenset(Speed), True), stats
    )
    return list(itertools.islice(games, count))


def python_chess_mainline_rows(movetext: bytes, plies: int) -> tuple[list[int], list[int]]:
    """Keys and Polyglot moves of a movetext's first plies, read by python-chess's PGN reader."""
    import io

    import chess.pgn

    from schemas.polyglot import encode_move

    game = chess.pgn.read_game(io.StringIO(movetext.decode()))
    assert game is not None
    board = game.board()
    keys, moves = [], []
    for move in list(game.mainline_moves())[:plies]:
        keys.append(chess.polyglot.zobrist_hash(board))
        moves.append(encode_move(board, move))
        board.push(move)
    return keys, moves


@pytest.mark.slow
@pytest.mark.parametrize("plies", [9, 40, None])
@pytest.mark.parametrize(
    "name", ["standard-2013-01-part1.pgn.zst", "standard-2021-10-sample.pgn.zst", "odd-cases.pgn"]
)
def test_real_movetexts_walk_as_python_chess_reads_the_whole_game(
    name: str, plies: int | None
) -> None:
    """Real movetexts (comments, clocks, evaluations, NAGs, odd cases) as the counter hands
    them to the walk: each one it accepts gives python-chess's reading of the game's first
    plies, and it accepts most."""
    from tests.conftest import LICHESS_DIR, need

    games = first_kept_games(need(LICHESS_DIR / name, "real Lichess games"), 600)
    result = walk_openings([g.movetext for g in games], plies=plies)
    mine = np.array(owners(result), dtype=np.int64)
    for index, game in enumerate(games):
        if result.lengths[index] < 0:
            continue  # refused: counted by python-chess instead
        keys, moves = python_chess_mainline_rows(game.movetext, plies or 10**6)
        assert result.keys[mine == index].tolist() == keys
        assert result.moves[mine == index].tolist() == moves
    assert (result.lengths >= 0).sum() > 0.9 * len(games) or name == "odd-cases.pgn"


STRAY_CLOSERS = [
    b"1. e4 } e5 2. Nf3 Nc6 3. Bb5 a6 1-0",
    b"} 1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0",
    b"1. e4 e5} 2. Nf3 Nc6 3. Bb5 a6 1-0",
    b"1. e4 }e5 2. Nf3}Nc6 3. Bb5 a6 1-0",
    b"1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 } 4. Ba4 Nf6 1-0",
    b"1. e4 { a comment } } e5 2. Nf3 Nc6 3. Bb5 a6 1-0",
    b"1. e4 ) e5 2. Nf3 Nc6) 3. Bb5 a6 1-0",
    b"1. e4 (1. d4 d5) ) e5 2. Nf3 Nc6 3. Bb5 a6 1-0",
    b"1. e4 e5 2. Nf3 Nc6 ( 2... d6 3. Bb5 a6 1-0",  # a variation never closed
]


def assert_counted_as_python_chess_reads_it(movetext: bytes, plies: int, at_least: int) -> None:
    """The batch and the one-by-one counting count a kept game's first plies as python-chess
    reads its movetext (at least `at_least` plies)."""
    keys, moves = python_chess_mainline_rows(movetext, plies)
    assert len(keys) >= at_least
    for batched in (True, False):
        stats = ScanStats()
        counter = MoveCounter(plies, stats, batched=batched)
        counter.add(KeptGame(2300, 2300, Speed.BLITZ, 2, None, movetext))
        counter.flush()
        assert stats.dropped == {} and stats.games_kept == 1, batched
        assert counter.rows.keys.tolist() == keys, batched
        assert counter.rows.moves.tolist() == moves, batched


@pytest.mark.parametrize("plies", [4, 40])
@pytest.mark.parametrize("movetext", STRAY_CLOSERS)
def test_a_stray_closing_brace_or_parenthesis_is_skipped_as_python_chess_skips_it(
    movetext: bytes, plies: int
) -> None:
    """A `}` or `)` that closes nothing: python-chess reads the moves around it (a variation
    never closed, the moves before it); the batch and the one-by-one counting count them."""
    assert_counted_as_python_chess_reads_it(movetext, plies, at_least=4)
    import io

    import chess.pgn

    game = chess.pgn.read_game(io.StringIO(movetext.decode()))
    assert game is not None
    sans = [node.san().encode() for node in game.mainline()][:plies]  # as written here
    assert san_tokens(movetext, plies) == sans


#: Text between moves that python-chess's PGN reader skips: it finds moves in the movetext by
#: their pattern, whatever stands between them.
BETWEEN_MOVES = [
    b"1. e4 e5 2. Nf3.Nc6 3. Bb5 a6 4. Ba4 Nf6 1-0",  # a dot, no space
    b"1. e4 e5 2. Nf3! . Nc6 3. Bb5 a6 1-0",  # a dot alone
    b"1. e4 e5 2. Nf3 Nc6 3. Bb5+ a6 4. Ba4 Nf6xyz 5. O-O Be7 1-0",  # letters after a move
    b"1. Pe4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0",  # a pawn's letter
    b"1. e4\xc3\xa9 e5 2. Nf3 Nc6 3. Bb5 a6 1-0",  # a letter beyond ASCII
    b"1. e4$1 e5 2. Nf3$14 Nc6 3. Bb5 a6 1-0",  # NAGs against the moves
    b"1.e4 e5 2.Nf3 Nc6 3.Bb5 a6 4.Ba4 Nf6 5.O-O Be7 6.Re1 b5 7.Bb3 d6 8.c3 O-O 1-0",
]


@pytest.mark.parametrize("plies", [3, 40])
@pytest.mark.parametrize("movetext", BETWEEN_MOVES)
def test_text_between_moves_is_skipped_as_python_chess_skips_it(
    movetext: bytes, plies: int
) -> None:
    import io

    import chess.pgn

    game = chess.pgn.read_game(io.StringIO(movetext.decode()))
    assert game is not None and not game.errors  # python-chess reads it whole
    assert_counted_as_python_chess_reads_it(movetext, plies, at_least=3)


def numbered_movetext(tokens: list[bytes], comments: list[bytes], rng: random.Random) -> bytes:
    """Tokens written as PGN movetext with move numbers and, at random, comments after moves."""
    out = []
    for ply, token in enumerate(tokens):
        if ply % 2 == 0:
            out.append(b"%d." % (ply // 2 + 1))
        elif out and out[-1].startswith(b"{"):
            out.append(b"%d..." % (ply // 2 + 1))
        out.append(token)
        if rng.random() < 0.3:
            out.append(rng.choice(comments))
    return b" ".join(out)


COMMENTS = [
    b"{ [%clk 0:03:00] }",
    b"{ 11. Nf3 was better }",
    b"{ an open brace { inside }",
    b"(1. d4 d5 11. c4)",
    b"$1",
    b"; 11. e4\n",
    b"{ 11. }",
    b"{ 4.",
    b"}",
    b")",
]


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    cut=st.integers(0, 40),
    junk=MANGLE,
    plies=st.sampled_from([1, 2, 19, 20, 21]),
)
def test_numbered_commented_games_count_as_python_chess_counts_them(
    seed: int, cut: int, junk: bytes, plies: int
) -> None:
    """Batched counting of movetexts with move numbers, comments and variations (cut at a move
    number) gives the rows and drops of counting each game by python-chess alone."""
    rng = random.Random(seed)
    tokens = random_game_tokens(rng, 44)
    if rng.random() < 0.5:
        tokens = tokens[:cut] + [junk] + tokens[cut + 1 :]
    text = numbered_movetext(tokens, COMMENTS, rng) + b" 1-0"
    assert_batched_counts_as_plain(KeptGame(2300, 2300, Speed.BLITZ, 2, None, text), plies)


#: Tokens that make a plain movetext, or nearly: moves, and what a plain one may not hold.
PLAIN_JUNK = st.sampled_from(
    [b"Zz9", b"0-0", b"e4!", b"$1", b"1-0", b"--", b"Nbd7", b"O-O-O", b"h8=Q", b"e8Q", b"Ke2"]
    + [b"e4."]
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    length=st.integers(0, 80),
    cut=st.integers(0, 80),
    junk=st.one_of(st.none(), PLAIN_JUNK),
    result=st.sampled_from([b"1-0", b"0-1", b"1/2-1/2", b"*", b"", b"1-0\n", b" 1-0"]),
    plies=st.sampled_from([1, 20, 40, 60]),
)
def test_short_plain_games_count_as_python_chess_counts_them(
    seed: int, length: int, cut: int, junk: bytes | None, result: bytes, plies: int
) -> None:
    """A plain movetext, longer or shorter than the plies counted: its rows and drops are
    python-chess's, junk and all."""
    rng = random.Random(seed)
    tokens = random_game_tokens(rng, length)
    if junk is not None:
        tokens = tokens[:cut] + [junk] + tokens[cut + 1 :]
    numbered = []
    for ply, token in enumerate(tokens):
        numbered += [b"%d." % (ply // 2 + 1), token] if ply % 2 == 0 else [token]
    text = b" ".join([*numbered, result] if result else numbered)
    assert_batched_counts_as_plain(KeptGame(2300, 2300, Speed.BLITZ, 2, None, text), plies)


#: Pieces of movetext around the moves of a game: all that python-chess's PGN reader reads or
#: skips, and what the compiled walk refuses.
DECORATIONS = st.sampled_from(
    [
        b" ", b"  ", b"\n", b"\n\n", b"\r\n", b"\t", b"1.", b"1...", b"12. ", b"3..", b"10000. ",
        b"+", b"#", b"!", b"?", b"!?", b"??", b"!!!", b" $1 ", b"$", b" $23", b"{ a comment }",
        b"{ 11. Nf3 }", b"{", b"}", b"{[%clk 0:01:00]}", b"{ \xc3\xa9 }", b"(", b")",
        b"( 1... e5 )", b"; rest of line\n", b"\n% escape\n", b" 1-0 ", b" 0-1 ", b" 1/2-1/2 ",
        b" * ", b"*", b"--", b" Z0 ", b" 0000 ", b"0-0", b" O-O ", b" O-O-O ", b"e4", b"Nf3",
        b"P", b"x", b"=", b"=Q", b"Q", b"e8Q", b".", b"..", b"\xe9", b"[", b"]", b'"', b"@",
        b"Kxe2", b"h8=N", b"1", b"0", b"-", b"/",
    ]
)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    length=st.integers(0, 50),
    decorations=st.lists(st.tuples(st.integers(0, 60), DECORATIONS), max_size=8),
    spaced=st.booleans(),
    plies=st.sampled_from([1, 2, 7, 20, None]),
)
def test_the_walk_reads_any_movetext_it_accepts_as_python_chess_reads_it(
    seed: int,
    length: int,
    decorations: list[tuple[int, bytes]],
    spaced: bool,
    plies: int | None,
) -> None:
    """Arbitrary movetext (a game's SAN moves, numbered or not, with whatever PGN holds between
    them or breaks them): where the walk accepts it, its rows are python-chess's reading of the
    main line's first plies, and it walked all of them that python-chess reads."""
    rng = random.Random(seed)
    pieces = [token + (b" " if spaced or rng.random() < 0.8 else b"") for token in
              random_game_tokens(rng, length)]  # fmt: skip
    for at, decoration in sorted(decorations, reverse=True):
        pieces.insert(min(at, len(pieces)), decoration)
    text = b"".join(pieces)
    result = walk_openings([text], plies=plies)
    walked = int(result.lengths[0])
    event("refused" if walked < 0 else "accepted")
    if walked < 0:
        return  # refused: python-chess decides it
    walked_rows = (result.keys.tolist(), result.moves.tolist())
    assert walked_rows == counted_by_python_chess(text, plies), text
    read = read_by_python_chess(text, plies)
    assert read is None or walked_rows == read, text


def counted_by_python_chess(text: bytes, plies: int | None) -> tuple[list[int], list[int]]:
    """The rows of the first plies as counting without the walk finds them (the mainline's SAN
    tokens as python-chess's reader finds them, each parsed by python-chess)."""
    walked = OpeningTree().walk(san_tokens(text, plies))
    return [key for key, _ in walked], [move for _, move in walked]


def read_by_python_chess(text: bytes, plies: int | None) -> tuple[list[int], list[int]] | None:
    """python_chess_mainline_rows of any bytes (bytes beyond UTF-8 as U+FFFD), or None where
    python-chess's reader fails on the text (it raises on some stray closing parentheses)."""
    decoded = text.decode("utf-8", "replace").encode()
    if not decoded.strip():
        return [], []
    try:
        return python_chess_mainline_rows(decoded, plies if plies is not None else 10**6)
    except IndexError:
        return None


@settings(max_examples=300, deadline=None)
@given(text=st.binary(max_size=300), plies=st.sampled_from([1, 20, None]))
def test_the_walk_takes_any_bytes(text: bytes, plies: int | None) -> None:
    """Any bytes: refused, or read as python-chess reads them (never a crash, never a read
    past the text)."""
    result = walk_openings([text, b"e4 " + text, text + b" e4"], plies=plies)
    for index, candidate in enumerate([text, b"e4 " + text, text + b" e4"]):
        if result.lengths[index] < 0:
            continue
        keys, _ = counted_by_python_chess(candidate, plies)
        assert len(keys) == result.lengths[index], candidate


def test_last_visits_keeps_each_key_once_per_text_at_its_last_row() -> None:
    from pipelines.games.sanwalk import last_visits

    rng = random.Random(3)
    lengths = np.array([rng.choice([-1, 0, 1, 2, 7, 50, 120]) for _ in range(400)], np.int32)
    keys = np.array(
        [
            rng.choice([1, 2, 3, 2**64 - 1, rng.getrandbits(64)])
            for _ in range(int(np.maximum(lengths, 0).sum()))
        ],
        dtype=np.uint64,
    )
    expected, first = [], 0
    for length in np.maximum(lengths, 0):
        rows = range(first, first + int(length))
        expected += [r for r in rows if keys[r] not in keys[r + 1 : first + int(length)]]
        first += int(length)
    assert last_visits(keys, lengths).tolist() == expected
    with pytest.raises(ValueError, match="add up"):
        last_visits(keys[:-1], lengths)
