"""Fuzzing the byte-level scanner: mangled, truncated, re-chunked and concatenated inputs."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.errors import CorruptInput
from pipelines.games.decompress import decompressed_chunks
from pipelines.games.game_filter import GameFilter, KeptGame, ScanStats, filter_game
from pipelines.games.scan import (
    MAX_GAME_BYTES,
    game_blocks,
    kept_games_in_blocks,
    split_games,
)
from schemas.movetext import san_tokens
from schemas.speed import Speed
from tests.conftest import ODD_CASES, need

ANY = GameFilter(0, frozenset(Speed), allow_bots=True)


def real_games() -> list[bytes]:
    text = need(ODD_CASES, "real Lichess games (odd cases)").read_bytes().strip(b"\n")
    return [g.strip(b"\n") + b"\n\n" for g in text.split(b"\n\n[Event ")]


def rechunk(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


def normalised(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n") if b"\r\n" in data[:65536] else data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(st.integers(0, 94), min_size=0, max_size=12),
    cuts=st.lists(st.integers(0, 10**7), max_size=30),
)
def test_rechunked_games_come_out_whole_and_once(picks: list[int], cuts: list[int]) -> None:
    games = real_games()
    chosen = [games[i] if games[i].startswith(b"[") else b"[Event " + games[i] for i in picks]
    data = b"".join(chosen)
    stats = ScanStats()
    out = list(split_games(rechunk(data, cuts), stats, max_game_bytes=1 << 20))
    assert [b"[" + g.rstrip(b"\n") for g in out] == [g.rstrip(b"\n") for g in chosen]
    assert stats.pgn_bytes == len(data)


@settings(max_examples=400, deadline=None)
@given(
    data=st.binary(max_size=3000).map(lambda b: b.replace(b"\r", b"")),
    cuts=st.lists(st.integers(0, 5000), max_size=10),
    joins=st.integers(0, 8),
)
def test_arbitrary_bytes_lose_and_duplicate_nothing(
    data: bytes, cuts: list[int], joins: int
) -> None:
    """Whatever the bytes and chunking, the games are exactly the text between boundaries."""
    data = data + b"\n\n[" * (joins % 3) + data[: joins * 50]
    stats = ScanStats()
    pieces = list(split_games(rechunk(data, cuts), stats, max_game_bytes=1 << 20, check_end=False))
    text = data.lstrip(b"\n\r\t \xef\xbb\xbf")
    framed = (b"\n\n" if text.startswith(b"[") else b"\n\n[") + text if text else b""
    expected = [p for p in framed.split(b"\n\n[")[1:] if p and not p.isspace()]
    if b"{" in data:
        # Blank lines before "[" inside comments do not split (the comment tests check them).
        assert b"".join(pieces).replace(b"\n [", b"\n\n[") == b"".join(expected)
        assert len(pieces) <= len(expected)
    else:
        assert pieces == expected
        # Read as the end of a source, a last piece with no result is left out and flagged.
        ended = ScanStats()
        checked = list(
            split_games(rechunk(data, cuts), ended, max_game_bytes=1 << 20, check_end=True)
        )
        assert checked == (expected[:-1] if ended.ends_inside_game else expected)
        last = expected[-1] if expected else b""
        ends = last.rstrip().endswith((b"1-0", b"0-1", b"1/2-1/2", b"*"))
        assert ended.ends_inside_game == (bool(expected) and not ends)
    kept = sum(filter_game(piece, ANY, stats) is not None for piece in pieces)
    assert stats.games_read == len(pieces)
    assert stats.games_read == kept + sum(stats.dropped.values())
    for rules in (ANY, GameFilter(1500)):
        assert_same_scan(rechunk(data, cuts), rules, 1 << 20)


@settings(max_examples=60, deadline=None)
@given(
    picks=st.lists(st.integers(0, 94), min_size=1, max_size=6),
    cut=st.floats(0.0, 1.0),
    flip=st.integers(0, 10**6),
    mode=st.sampled_from(["truncate", "flip", "concat"]),
)
def test_mangled_zstd_never_passes_silently(
    picks: list[int], cut: float, flip: int, mode: str
) -> None:
    games = real_games()
    data = b"".join(games[i] for i in picks)
    frame = zstandard.ZstdCompressor(level=1, write_checksum=True).compress(data)
    if mode == "concat":
        blob = frame + frame
        assert b"".join(decompressed_chunks(io.BytesIO(blob))) == data + data
        return
    if mode == "truncate":
        blob = frame[: int(len(frame) * cut)]
        if len(blob) in (0, len(frame)):
            return
    else:
        position = 4 + flip % (len(frame) - 4)
        blob = frame[:position] + bytes([frame[position] ^ 0x5A]) + frame[position + 1 :]
    try:
        out = b"".join(decompressed_chunks(io.BytesIO(blob)))
    except CorruptInput:
        return
    assert (
        mode == "flip" and out == data
    )  # a truncated frame must raise; a flip must raise or not matter


@pytest.mark.slow
def test_real_file_through_many_chunk_sizes(games_2021: Path) -> None:
    reference = None
    for size in (1, 7, 4096, 1 << 20):
        stats = ScanStats()
        chunks = decompressed_chunks(io.BytesIO(games_2021.read_bytes()), read_size=max(size, 64))
        rechunked = (c[i : i + size] for c in chunks for i in range(0, len(c), size))
        games = list(split_games(rechunked, stats))
        if reference is None:
            reference = games
        assert games == reference
    assert reference is not None and len(reference) == 999


def scanned_one_by_one(
    chunks: list[bytes], rules: GameFilter, max_game_bytes: int
) -> tuple[list[KeptGame], ScanStats]:
    """The reference: every game split out and put through filter_game."""
    stats = ScanStats()
    kept = []
    for game in split_games(chunks, stats, max_game_bytes=max_game_bytes, check_end=True):
        result = filter_game(game, rules, stats)
        if result is not None:
            kept.append(result)
    return kept, stats


def scanned_in_blocks(
    chunks: list[bytes], rules: GameFilter, max_game_bytes: int
) -> tuple[list[KeptGame], ScanStats]:
    stats = ScanStats()
    blocks = game_blocks(chunks, stats, max_game_bytes, check_end=True)
    return list(kept_games_in_blocks(blocks, rules, stats, max_game_bytes)), stats


def assert_same_scan(chunks: list[bytes], rules: GameFilter, max_game_bytes: int) -> None:
    kept, stats = scanned_in_blocks(chunks, rules, max_game_bytes)
    want_kept, want = scanned_one_by_one(chunks, rules, max_game_bytes)
    assert kept == want_kept
    assert (stats.games_read, +stats.dropped, stats.pgn_bytes) == (
        want.games_read,
        +want.dropped,
        want.pgn_bytes,
    )


#: Edits to a game's tags that the block scanner must decide exactly as filter_game does.
HEADER_EDITS = [
    lambda g, r: g.replace(b'[WhiteElo "', b'[WhiteElo "' + r, 1),
    lambda g, r: g.replace(b'[BlackElo "', b'[BlackElo "' + r, 1),
    lambda g, r: re.sub(rb'WhiteElo "\d+"', b'WhiteElo "' + r + b'"', g, count=1),
    lambda g, r: re.sub(rb'BlackElo "\d+"', b'BlackElo "' + r + b'"', g, count=1),
    lambda g, r: g.replace(b"[Site ", b'[WhiteElo "' + r + b'"]\n[Site ', 1),
    lambda g, r: g.replace(b"[Site ", b'[BlackElo "' + r + b'"]\n[Site ', 1),
    lambda g, r: g.replace(b"[Site ", b"\n[Site ", 1),  # a blank line inside the tags
    lambda g, r: g.replace(b"[Site ", b"junk\n[Site ", 1),  # a line that is not a tag
    lambda g, r: g.replace(b'"]\n[Site ', b'"\n[Site ', 1),  # the first line lacks its "]"
    lambda g, r: re.sub(rb"\A\[Event [^\n]*\n", b"", g),  # ratings come first
    lambda g, r: re.sub(rb"\A(?:\[(?!WhiteElo)[^\n]*\n)*", b"", g),
    lambda g, r: g.replace(b"\n[BlackElo", b'\n[Foo "1"]\n[BlackElo', 1),  # not in a row
    lambda g, r: re.sub(rb"(\[WhiteElo [^\n]*\n)(\[BlackElo [^\n]*\n)", rb"\2\1", g),
    lambda g, r: g.replace(b"\n\n1.", b'\n\n{ [WhiteElo "' + r + b'"]\n[BlackElo "1"] } 1.', 1),
    lambda g, r: g.replace(b"\n\n1.", b'\n\n[WhiteElo "' + r + b'"]\n[BlackElo "1"]\n1.', 1),
    lambda g, r: g.split(b"\n\n")[0] + b"\n\n",  # no movetext
    lambda g, r: g.replace(b"[Site ", b"[Si\x00te ", 1),
    lambda g, r: g.replace(b"\n", b"\r\n"),
    lambda g, r: g.replace(b"[Event ", b"[Event " + r * 300, 1),  # long enough to be oversized
]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(
        st.tuples(
            st.integers(0, 94),
            st.lists(st.integers(0, len(HEADER_EDITS) - 1), max_size=3),
            st.sampled_from([b"", b"0", b"00", b"?", b"1999", b"2199", b"2200", b"02200", b"3000"]),
            st.booleans(),
        ),
        max_size=10,
    ),
    cuts=st.lists(st.integers(0, 10**6), max_size=12),
    min_rating=st.sampled_from([0, 1, 10, 999, 1000, 2199, 2200, 2201, 2500, 10**5]),
    max_game_bytes=st.sampled_from([400, 3000, 1 << 20]),
)
def test_blocks_decide_every_game_as_filter_game(
    picks: list[tuple[int, list[int], bytes, bool]],
    cuts: list[int],
    min_rating: int,
    max_game_bytes: int,
) -> None:
    games = real_games()
    chosen = []
    for index, edits, rating, set_rating in picks:
        game = games[index] if games[index].startswith(b"[") else b"[Event " + games[index]
        if set_rating:  # most games of a dump are rated below the filter's minimum
            game = re.sub(rb'WhiteElo "\d+"', b'WhiteElo "' + rating + b'"', game, count=1)
        for edit in edits:
            game = HEADER_EDITS[edit](game, rating)
        chosen.append(game)
    data = b"".join(chosen)
    rules = GameFilter(min_rating, frozenset(Speed), allow_bots=True)
    assert_same_scan(rechunk(data, cuts), rules, max_game_bytes)


@pytest.mark.parametrize("min_rating", [0, 1500, 2200, 2500])
def test_blocks_decide_a_real_month_as_filter_game(games_2021: Path, min_rating: int) -> None:
    chunks = list(decompressed_chunks(io.BytesIO(games_2021.read_bytes())))
    assert_same_scan(chunks, GameFilter(min_rating), MAX_GAME_BYTES)
    assert_same_scan(chunks, GameFilter(min_rating, frozenset(Speed), True), MAX_GAME_BYTES)


def san_tokens_reference(movetext: bytes, limit: int | None = None) -> list[bytes]:
    """The tokenizer spelled out with one regular expression per step, the moves found by
    python-chess's own movetext pattern."""
    import chess.pgn

    text = re.sub(rb"\{[^}]*(?:\}|\Z)|;[^\n]*", b" ", movetext)
    while True:
        stripped = re.sub(rb"\([^()]*\)", b" ", text)
        if stripped == text:
            break
        text = stripped
    text = re.sub(rb"\(.*", b"", text, flags=re.DOTALL)  # a variation never closed
    tokens = [
        match.group(1).encode("latin-1")
        for match in chess.pgn.MOVETEXT_REGEX.finditer(text.decode("latin-1"))
        if match.group(1)
    ]
    return tokens if limit is None else tokens[:limit]


@settings(max_examples=500, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(
            [b"1.", b"12...", b"3.e4", b"e4", b"Nf3!?", b"O-O", b"0-0", b"1-0", b"1/2-1/2", b"*",
             b"$14", b"{ [%clk 0:03:00] }", b"{", b"}", b"(", b")", b";c\n", b"??", b"1.1-0",
             b"exd8=Q+", b"\t", b"\n", b"7", b"...", b"e4$1", b"\xc3\xa9", b"Nf3.", b".",
             b"Pe4", b"e4xyz", b"--", b"Z0", b"0000", b"Qh4#", b"@", b"N@f3", b"e8Q"]
        ),
        max_size=40,
    ),
    limit=st.sampled_from([None, 1, 3, 20]),
)  # fmt: skip
def test_san_tokens_equal_the_reference(parts: list[bytes], limit: int | None) -> None:
    movetext = b" ".join(parts)
    assert san_tokens(movetext, limit) == san_tokens_reference(movetext, limit)
    joined = b"".join(parts)
    assert san_tokens(joined, limit) == san_tokens_reference(joined, limit)


@settings(max_examples=1000, deadline=None)
@given(
    text=st.lists(
        st.sampled_from(list(b"0123456789abcdefghNBRQKPOZxX@-=/.$!?+#*{}();\n \xc3")),
        max_size=60,
    ).map(bytes),
    limit=st.sampled_from([None, 1, 3]),
)
def test_san_tokens_find_moves_as_python_chess_finds_them(text: bytes, limit: int | None) -> None:
    # Any text of movetext's characters: words split or glued anyhow, digits against moves.
    assert san_tokens(text, limit) == san_tokens_reference(text, limit)


def test_a_long_game_with_a_bad_word_at_its_end_is_read_at_once() -> None:
    # (A guard: checking the words with a pattern that tries each word's shapes again on every
    # failure after it took minutes for 30 words, and would never end here.)
    movetext = b" ".join(b"%d. e4 e5" % n for n in range(1, 200)) + b" 200. e4x! 1-0"
    assert san_tokens(movetext) == san_tokens_reference(movetext)
    assert len(san_tokens(movetext)) == 2 * 199 + 1


#: Comments and tags that hold what looks like a game boundary, or braces, in legal PGN.
COMMENT_TRICKS = [
    lambda m: m.replace(b"1. ", b'1. { a comment\n\n[Event "inside a comment"]\n} ', 1),
    lambda m: m.replace(b"1. ", b'1. { one { two\n\n[Event "x"]\n\n[Site "y"] } ', 1),
    lambda m: m.replace(b"1. ", b"1. { closed } { open\n\n[Event\n} ", 1),
    lambda m: m.replace(b"1. ", b"1. ; a { in a line comment\n", 1),
    lambda m: m.replace(b"1. ", b"1. } ", 1),  # a stray closing brace is text
    lambda m: m + b' { after the result\n\n[Event "z"] }',
]


def _with_trick(game: bytes, trick: int | None, brace_in_tag: bool) -> bytes:
    head, _, moves = game.rstrip(b"\n").partition(b"\n\n")
    if brace_in_tag:
        head = head.replace(b'[Site "', b'[Site "{', 1)
    if trick is not None:
        result = moves.rsplit(b" ", 1)
        moves = COMMENT_TRICKS[trick](result[0]) + b" " + result[1] if len(result) == 2 else moves
    return head + b"\n\n" + moves + b"\n\n"


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    picks=st.lists(
        st.tuples(
            st.integers(0, 94),
            st.one_of(st.none(), st.integers(0, len(COMMENT_TRICKS) - 1)),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
    cuts=st.lists(st.integers(0, 10**6), max_size=12),
)
def test_splitter_agrees_with_python_chess_on_comments(
    picks: list[tuple[int, int | None, bool]], cuts: list[int]
) -> None:
    import chess.pgn

    games = real_games()
    chosen = []
    for index, trick, brace_in_tag in picks:
        game = games[index] if games[index].startswith(b"[") else b"[Event " + games[index]
        chosen.append(_with_trick(game, trick, brace_in_tag))
    data = b"".join(chosen)
    handle = io.StringIO(data.decode("utf-8", "replace"))
    reference = []
    while (read := chess.pgn.read_game(handle)) is not None:
        reference.append(read.headers.get("Site"))
    stats = ScanStats()
    pieces = list(split_games(rechunk(data, cuts), stats, max_game_bytes=1 << 20, check_end=True))
    assert not stats.ends_inside_game
    sites = [re.search(rb'\[Site "([^"\n]*)"\]', b"[" + p).group(1).decode() for p in pieces]
    assert sites == reference
    assert_same_scan(rechunk(data, cuts), ANY, 1 << 20)


def test_a_blank_line_in_a_comment_is_not_a_new_game(tmp_path: Path) -> None:
    game = (
        b'[Event "a"]\n[Site "1"]\n[Result "1-0"]\n\n'
        b'1. e4 { look:\n\n[Event "inside"]\n} e5 1-0\n\n'
        b'[Event "b"]\n[Site "2"]\n[Result "0-1"]\n\n1. d4 0-1\n'
    )
    pieces = list(split_games([game], ScanStats(), check_end=True))
    assert [p[:11] for p in pieces] == [b'Event "a"]\n', b'Event "b"]\n']


#: Tag names: those the filter reads, others, and near misses.
TAG_NAMES = [
    b"Event", b"Site", b"White", b"Black", b"Result", b"UTCDate", b"WhiteElo", b"BlackElo",
    b"WhiteRatingDiff", b"WhiteTitle", b"BlackTitle", b"Variant", b"FEN", b"SetUp",
    b"TimeControl", b"Termination", b"ECO", b"WhiteEloX", b"Opening",
]  # fmt: skip
TAG_VALUES = [
    b"", b"2200", b"1500", b"0", b"02200", b"?", b"99999999999999999999999", b"BOT", b"GM",
    b"1-0", b"0-1", b"1/2-1/2", b"*", b"300+3", b"60+0", b"-", b"15+0", b"abc", b'with "quote',
    b"Standard", b"Chess960", b"From Position", b"[", b"a]", b"2021.10.01",
    b"rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
]  # fmt: skip
#: A Lichess game's tags, in the dumps' order, with values that pass the filter.
LICHESS_TAGS = [
    (b"Event", b"Rated Blitz game"), (b"Site", b"https://lichess.org/abcdefgh"),
    (b"White", b"a"), (b"Black", b"b"), (b"Result", b"1-0"), (b"UTCDate", b"2021.10.01"),
    (b"WhiteElo", b"2300"), (b"BlackElo", b"2250"), (b"WhiteRatingDiff", b"+5"),
    (b"WhiteTitle", b"GM"), (b"BlackTitle", b"FM"), (b"ECO", b"C20"),
    (b"Opening", b"King's Pawn Game"), (b"TimeControl", b"300+3"), (b"Termination", b"Normal"),
]  # fmt: skip
MOVETEXTS = [
    b"1. e4 e5 2. Nf3 1-0", b"", b"1. e4 { [Event \"x\"]\n[WhiteElo \"1\"] } e5 0-1",
    b'[WhiteElo "100"]\n1. d4 *', b"1. e4 {\n\n[FEN \"8/8/8/8/8/8/8/8 w - - 0 1\"] } 1/2-1/2",
]  # fmt: skip
#: Values each tag read by the filter takes before edits (None: the tag is absent).
READ_VALUES = st.fixed_dictionaries(
    {
        b"Result": st.sampled_from([b"1-0", b"0-1", b"1/2-1/2", b"*", b""]),
        b"WhiteElo": st.sampled_from([b"2300", b"1500", b"0", b"?", b"99999999999999999999"]),
        b"BlackElo": st.sampled_from([b"2250", b"02200", b"2200", b"?", b""]),
        b"WhiteTitle": st.sampled_from([None, b"GM", b"BOT"]),
        b"BlackTitle": st.sampled_from([None, b"FM", b"BOT"]),
        b"TimeControl": st.sampled_from([b"300+3", b"60+0", b"-", b"abc", b"", b"1+"]),
    }
)
#: Edits of a Lichess tag section: (what, where, tag name, value).
TAG_EDITS = st.lists(
    st.tuples(
        st.sampled_from(["value", "insert", "delete", "swap"]),
        st.integers(0, 20),
        st.sampled_from(TAG_NAMES),
        st.sampled_from(TAG_VALUES),
    ),
    max_size=4,
)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(
    values=READ_VALUES,
    edits=TAG_EDITS,
    separator=st.sampled_from([b"\n\n", b"\n\n", b"\n\n", b"\n", b"", b"\n\n\n", b" \n\n"]),
    movetext=st.sampled_from(MOVETEXTS),
    crlf=st.sampled_from([False, False, False, True]),
    min_rating=st.sampled_from([0, 1500, 2200, 2201, 2300]),
    allow_bots=st.booleans(),
    variant=st.sampled_from(["standard", "chess960"]),
)
def test_lichess_headers_are_read_as_tag_by_tag(
    values: dict[bytes, bytes | None],
    edits: list[tuple[str, int, bytes, bytes]],
    separator: bytes,
    movetext: bytes,
    crlf: bool,
    min_rating: int,
    allow_bots: bool,
    variant: str,
) -> None:
    """filter_game's fast path (compiled code for the usual Lichess tag section) decides every
    game, and reads every tag, as looking for each tag on its own does: Lichess's tags edited
    (values, tags added, dropped or moved, doubled), other line ends, no movetext."""
    from pipelines.games.game_filter import _filter_any_game

    tags = [(name, values.get(name, value)) for name, value in LICHESS_TAGS]
    tags = [(name, value) for name, value in tags if value is not None]
    for what, where, name, value in edits:
        at = where % (len(tags) + 1)
        if what == "insert":
            tags.insert(at, (name, value))
        elif at < len(tags):
            if what == "value":
                tags[at] = (tags[at][0], value)
            elif what == "delete":
                del tags[at]
            elif at + 1 < len(tags):
                tags[at], tags[at + 1] = tags[at + 1], tags[at]
    text = b"\n".join(b'[%s "%s"]' % pair for pair in tags) + separator + movetext
    if crlf:
        text = text.replace(b"\n", b"\r\n")
    game = text[1:] if text.startswith(b"[") else text  # as the scanner splits it
    rules = GameFilter(min_rating, frozenset(Speed), allow_bots, variant)
    fast, slow = ScanStats(), ScanStats()
    assert filter_game(game, rules, fast) == _filter_any_game(game, rules, slow)
    assert (fast.games_read, fast.dropped, fast.unreadable_bytes) == (
        slow.games_read, slow.dropped, slow.unreadable_bytes,
    )  # fmt: skip


def test_real_games_take_the_fast_path(games_2021: Path, games_2013: Path) -> None:
    """Nearly every game of the real samples is decided by the compiled fast path (else it
    buys nothing): all but those with a "?" for a rating."""
    from pipelines.games import _scan
    from pipelines.games.game_filter import compiled_rules

    rules = compiled_rules(GameFilter())
    for path in (games_2021, games_2013):
        chunks = list(decompressed_chunks(io.BytesIO(path.read_bytes())))
        games = list(split_games(chunks, ScanStats()))
        matched = sum(_scan.decide_game(game, rules)[0] is not game for game in games)
        unrated = sum(b'Elo "?"' in game.split(b"\n\n")[0] for game in games)
        assert matched == len(games) - unrated > 900
