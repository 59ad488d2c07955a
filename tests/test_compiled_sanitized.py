"""The compiled code (the game filter's fast path, the SAN walk, the sums of move statistics,
the training codec, the position scanner) built with AddressSanitizer and
UndefinedBehaviorSanitizer, fed real games, mangled games, records and blocks and random bytes or
rows: no read past a text, no undefined behaviour, no crash."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import GAMES_2013, ROOT, need, need_program

#: Fed to the sanitized module in a process of its own (the sanitizer's runtime preloaded):
#: every text from argv[2] (one movetext a line, escaped) and mutations of them.
FEED = r"""
import random, sys
import chess.polyglot, numpy as np
sys.path.insert(0, sys.argv[1])
import _sanwalk
_sanwalk.set_randoms(np.array(chess.polyglot.POLYGLOT_RANDOM_ARRAY, dtype=np.uint64).tobytes())
texts = [line.encode("latin-1").decode("unicode_escape").encode("latin-1")
         for line in open(sys.argv[2], encoding="latin-1").read().splitlines()]
rng = random.Random(1)
alphabet = b"abcdefgh12345678NBRQKOx=+#!?$.-{}()/;%* \n\r\t0\xe9["
# Texts without comments again with a clock and an eval after each word, for the annotated walk.
values = [b"0:01:00", b"0:00:09.79", b"1:2:3", b"0.17", b"-1.5,20", b"#-3", b"#0", b"x", b"", b"9"]
texts += [b" ".join(word + b" { [%clk " + rng.choice(values) + b"] [%eval " + rng.choice(values)
                    + b"] }" for word in text.split())
          for text in [text for text in texts if b"{" not in text][:300]]
fed = []
for text in texts:
    fed.append(text)
    for _ in range(8):
        cut = text[: rng.randrange(len(text) + 1)]  # a text cut anywhere
        fed.append(cut)
        mangled = bytearray(text)
        for _ in range(rng.randrange(1, 6)):
            if mangled:
                mangled[rng.randrange(len(mangled))] = rng.choice(alphabet)
        fed.append(bytes(mangled))
for _ in range(20000):
    fed.append(bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))))
    fed.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))))
for plies in (-1, 0, 1, 20, 50):
    keys, moves, lengths = _sanwalk.walk_openings(fed, plies)
    annotated = _sanwalk.walk_annotated(fed, plies)
    assert annotated[:3] == (keys, moves, lengths), plies
    assert len(annotated[3]) == len(annotated[4]) == len(keys) // 2, plies
    print(plies, len(keys) // 8, sum(np.frombuffer(lengths, dtype=np.int32) >= 0), flush=True)
# The same texts as blocks of games for the filter: each a game's tags and movetext, mangled.
import _scan
from pipelines.games.game_filter import GameFilter, compiled_rules
from schemas.speed import Speed
headers = [line.encode("latin-1").decode("unicode_escape").encode("latin-1")
           for line in open(sys.argv[3], encoding="latin-1").read().splitlines()]
for rules in (GameFilter(), GameFilter(0, frozenset(Speed), True, "chess960")):
    compiled = compiled_rules(rules)
    kept = 0
    for n in range(0, len(fed) - 3, 3):
        header = headers[n % len(headers)]
        cut = header[: rng.randrange(len(header) + 1)]  # the last game cut inside its tags
        block = b"\n\n[" + header + fed[n] + b"\n\n[" + fed[n + 1] + b"\n\n[" + cut
        mangled = bytearray(block)
        for _ in range(rng.randrange(0, 4)):
            mangled[rng.randrange(len(mangled))] = rng.choice(alphabet + b'"]\x00')
        for with_text in (False, True):
            games, counts = _scan.scan_block(bytes(mangled), 1 << 20, compiled, with_text)
            kept += len(games)
        _scan.decide_game(bytes(mangled[3:]), compiled)
    print("filter", kept, flush=True)
"""


def sanitized_build(folder: Path, name: str, *, room: str = "games") -> Path:
    """Build a compiled module of pipelines/`room`/ with the sanitizers, each text read in a
    buffer of its exact size."""
    compiler = need_program("gcc")
    module = folder / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
         "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
         "-DCHESSPIPE_EXACT_BUFFERS", "-std=c99", "-Wall", "-Wextra", "-Werror",
         f"-I{sysconfig.get_paths()['include']}", str(ROOT / f"pipelines/{room}/{name}.c"),
         "-o", str(module)],
        check=True,
    )  # fmt: skip
    return module


def first_games(path: Path, count: int) -> list[bytes]:
    """The first games of a real dump, as the scanner splits them."""
    from pipelines.games.game_filter import ScanStats
    from pipelines.games.scan import split_games
    from tests.recount import read_text

    games = split_games([read_text(path).encode()], ScanStats())
    return [game for _, game in zip(range(count), games, strict=False)]


def movetexts(path: Path, count: int) -> list[bytes]:
    """The movetexts of the first games of a real dump."""
    from pipelines.games.game_filter import GameFilter, ScanStats
    from pipelines.games.scan import kept_games, split_games
    from schemas.speed import Speed
    from tests.recount import read_text

    stats = ScanStats()
    games = kept_games(
        split_games([read_text(path).encode()], stats), GameFilter(0, frozenset(Speed)), stats
    )
    return [game.movetext for _, game in zip(range(count), games, strict=False)]


def escaped(texts: list[bytes]) -> str:
    """Texts one a line, escaped (FEED reads them back)."""
    return "\n".join(text.decode("latin-1").encode("unicode_escape").decode() for text in texts)


def sanitizer_runtime() -> str:
    """The path of AddressSanitizer's runtime, preloaded into the Python that runs a test."""
    runtime = subprocess.run(
        [need_program("gcc"), "-print-file-name=libasan.so"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if not Path(runtime).exists():
        reason = f"AddressSanitizer's runtime is not installed (gcc found {runtime!r})"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return runtime


def sanitized_environment(runtime: str) -> dict[str, str]:
    return dict(
        os.environ,
        LD_PRELOAD=runtime,
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:exitcode=99",
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=98",
        PYTHONMALLOC="malloc",
        PYTHONPATH=str(ROOT),
    )


@pytest.mark.slow
def test_the_sanitized_code_reads_nothing_past_any_text(tmp_path: Path) -> None:
    module = sanitized_build(tmp_path, "_sanwalk")
    sanitized_build(tmp_path, "_scan")
    runtime = sanitizer_runtime()
    texts = tmp_path / "texts.txt"
    games = movetexts(need(GAMES_2013, "real Lichess games"), 3000)
    texts.write_text(escaped(games), encoding="latin-1")
    headers = tmp_path / "headers.txt"
    tag_sections = [game.partition(b"\n\n")[0] + b"\n\n" for game in first_games(GAMES_2013, 300)]
    headers.write_text(escaped(tag_sections), encoding="latin-1")
    run = subprocess.run(
        [sys.executable, "-c", FEED, str(module.parent), str(texts), str(headers)],
        capture_output=True, text=True, env=sanitized_environment(runtime), timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    # The real games are read as the build chesspipe runs reads them: most, whole.
    from pipelines.games.sanwalk import walk_openings

    whole = walk_openings(games)
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    assert set(lines) == {"-1", "0", "1", "20", "50", "filter"}
    assert int(lines["filter"]) > 0  # some mangled games were kept, or handed back
    assert int((whole.lengths >= 0).sum()) > len(games) * 0.9


#: Rows of every size (each buffer its exact size), summed by the sanitized module from four
#: threads at once, each sum checked against NumPy's; then columns of the wrong lengths.
SUM_FEED = r"""
import sys, threading
import numpy as np
sys.path.insert(0, sys.argv[1])
import _sums
def check(seed):
    rng = np.random.default_rng(seed)
    for size in [0, 1, 2, 3, 7, 24, 25, 2048, 5000, 60000, 200000]:
        distinct = rng.integers(0, 2**64, size=max(1, size // 4), dtype=np.uint64)
        distinct[: len(distinct) // 2] >>= np.uint64(16)  # (many in the first bucket)
        keys = distinct[rng.zipf(1.5, size) % len(distinct)]  # (some keys in thousands of rows)
        packed = (rng.integers(0, 2**32, size) % rng.choice([1, 3, 2**32])).astype(np.uint32)
        points = rng.integers(0, 3, size, dtype=np.uint8)
        ratings = rng.integers(0, 2**16, size, dtype=np.uint16)
        firsts = rng.integers(0, 2**64, size, dtype=np.uint64)
        summed = _sums.sum_plies(keys.tobytes(), packed.tobytes(), firsts.tobytes(),
                                 points.tobytes(), ratings.tobytes())
        out_keys = np.frombuffer(summed[0], np.uint64)
        out_packed = np.frombuffer(summed[1], np.uint32)
        out_firsts = np.frombuffer(summed[2], np.uint64)
        wins, draws, losses, rating_sum = (np.frombuffer(v, dtype=np.uint64) for v in summed[3:])
        order = np.lexsort((packed, keys))
        change = np.ones(size, dtype=bool)
        sorted_keys, sorted_packed = keys[order], packed[order]
        change[1:] = sorted_keys[1:] != sorted_keys[:-1]
        change[1:] |= sorted_packed[1:] != sorted_packed[:-1]
        starts = np.flatnonzero(change)
        assert out_keys.tolist() == sorted_keys[starts].tolist()
        assert out_packed.tolist() == sorted_packed[starts].tolist()
        if size:
            least = np.minimum.reduceat(firsts[order], starts)
            assert out_firsts.tolist() == least.tolist()
        for column, expected in ((wins, points == 2), (draws, points == 1),
                                 (losses, points == 0), (rating_sum, ratings)):
            if size:
                sums = np.add.reduceat(expected[order].astype(np.uint64), starts)
                assert column.tolist() == sums.tolist()
        as_counts = [c.astype(np.uint64).tobytes()
                     for c in (points == 2, points == 1, points == 0, ratings)]
        assert _sums.sum_counts(keys.tobytes(), packed.tobytes(), firsts.tobytes(),
                                *as_counts) == summed
checked = []
def checked_run(seed):
    check(seed)
    checked.append(seed)  # (an exception in a thread leaves the exit code at 0)
threads = [threading.Thread(target=checked_run, args=(seed,)) for seed in range(4)]
for thread in threads: thread.start()
for thread in threads: thread.join()
for wrong in [(b"\0" * 8, b"\0" * 3, b"\0" * 8, b"\0", b"\0\0"),
              (b"\0" * 7, b"", b"", b"", b"")]:
    try:
        _sums.sum_plies(*wrong)
    except ValueError as error:
        print("refused", error, flush=True)
print("summed", sorted(checked), flush=True)
"""


@pytest.mark.slow
def test_the_sanitized_sums_read_and_write_nothing_out_of_bounds(tmp_path: Path) -> None:
    module = sanitized_build(tmp_path, "_sums", room="ingest")
    run = subprocess.run(
        [sys.executable, "-c", SUM_FEED, str(module.parent)],
        capture_output=True, text=True, env=sanitized_environment(sanitizer_runtime()),
        timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    assert run.stdout.splitlines()[-1] == "summed [0, 1, 2, 3]", run.stderr[-4000:]
    assert run.stdout.count("refused") == 2


#: The fixture's `.plain` encoded in pieces of every size and its `.binpack` decoded, each
#: checked against the other; then texts and blocks mangled, cut and flipped, the refused records
#: stepped over as the Python path would take them.
CODEC_FEED = r"""
import random, struct, sys
sys.path.insert(0, sys.argv[1])
import _codec
plain = open(sys.argv[2], "rb").read()
binpack = open(sys.argv[3], "rb").read()
def blocks_of(data):
    offset, blocks = 0, []
    while offset + 8 <= len(data):
        (size,) = struct.unpack("<I", data[offset + 4: offset + 8])
        blocks.append(data[offset + 8: offset + 8 + size])
        offset += 8 + size
    return blocks
def encode(data, rng):
    encoder, position, out, refused = _codec.Encoder(), 0, [], 0
    while position < len(data):
        position, taken, stopped, blocks = encoder.encode(data, position, rng.choice([1, 7, 1000]))
        out.append(blocks)
        if stopped == 1:  # refused: step over the record, as the Python reader would take it
            refused += 1
            end = data.find(b"\ne\n", position)
            position = len(data) if end < 0 else end + 3
            encoder.set_state(encoder.state())
        elif stopped == 2:
            break
    out.append(encoder.close())
    return b"".join(out), refused
rng = random.Random(1)
written, refused = encode(plain, rng)
assert refused == 0 and written == binpack, "the fixture encodes as Stockfish's tools wrote it"
decoded = [_codec.decode_block(block) for block in blocks_of(binpack)]
assert b"".join(text for text, _ in decoded) == plain, "the fixture decodes as it was written"
alphabet = b"0123456789abcdefgh-/ \n=KQRBNPkqrbnpwe"
piece = plain[:40000]
stepped = taken = 0
for _ in range(300):
    mangled = bytearray(piece[: rng.randrange(len(piece) + 1)])
    for _ in range(rng.randrange(0, 5)):
        if mangled:
            mangled[rng.randrange(len(mangled))] = rng.choice(alphabet)
    stepped += encode(bytes(mangled), rng)[1]
for block in blocks_of(binpack):
    for _ in range(40):
        mangled = bytearray(block[: rng.randrange(len(block) + 1)] if rng.random() < 0.3 else block)
        for _ in range(rng.randrange(1, 4)):
            if mangled:
                mangled[rng.randrange(len(mangled))] ^= 1 << rng.randrange(8)
        taken += _codec.decode_block(bytes(mangled)) is not None
    _codec.decode_block(b"")
print("codec", stepped, taken, flush=True)
"""


@pytest.mark.slow
def test_the_sanitized_codec_reads_and_writes_nothing_out_of_bounds(
    tmp_path: Path, plain_fixture: Path, binpack_fixture: Path
) -> None:
    module = sanitized_build(tmp_path, "_codec", room="training")
    run = subprocess.run(
        [sys.executable, "-c", CODEC_FEED, str(module.parent), str(plain_fixture),
         str(binpack_fixture)],
        capture_output=True, text=True, env=sanitized_environment(sanitizer_runtime()),
        timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    _, stepped, taken = run.stdout.split()
    assert int(stepped) > 0 and int(taken) > 0  # mangled records were refused, some blocks read


#: Games of garbage move bytes fed to the sanitized scanner (scan.py's `_scout` swapped for it):
#: the real games of argv[2] (hex, one a line) cut and flipped, random bytes, moves of pieces that
#: are there to squares anywhere, Chess960 games, from good and unreadable FEN starts, for queries
#: of every rule, from two threads at once; then tables of the wrong sizes or out of range.
SCOUT_FEED = r"""
import random, sys, threading
import chess, numpy as np, pyarrow as pa
sys.path.insert(0, sys.argv[1])
import _scout
from pipelines.search import scan
from pipelines.search.query import parse_query
from schemas.polyglot import encode_move
from tests.random_moves import random_move
scan._scout = _scout
real = [bytes.fromhex(line) for line in open(sys.argv[2]).read().split()]
rng = random.Random(1)
fed = []
for game in real:
    fed.append(game)
    for _ in range(3):
        fed.append(game[: rng.randrange(len(game) + 1)])  # cut anywhere, odd lengths too
        mangled = bytearray(game)
        for _ in range(rng.randrange(1, 6)):
            if mangled:
                mangled[rng.randrange(len(mangled))] = rng.randrange(256)
        fed.append(bytes(mangled))
for _ in range(4000):
    fed.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40))))
for _ in range(400):  # the side to move's pieces moved anywhere, promotions asked at random
    board, out = chess.Board(), bytearray()
    for _ in range(rng.randrange(1, 120)):
        mine = list(chess.scan_forward(board.occupied_co[board.turn])) or [0]
        raw = rng.randrange(64) | rng.choice(mine) << 6 | rng.randrange(5) << 12
        out += raw.to_bytes(2, "little")
        board.turn = not board.turn
    fed.append(bytes(out))
fens = [None, "r3k2r/8/8/2Pp4/8/8/8/R3K2R w KQkq d6 0 1", "8/P6k/8/8/8/8/p6K/8 w - - 0 1",
        "not a FEN", "8/8/8/8/8/8/8/8 w - - 0 1"]
starts = [rng.choice(fens) for _ in fed]
results = np.array([rng.choice([0, 1, 2, 9, 255]) for _ in fed], dtype=np.uint8)
queries = [parse_query(text) for text in [
    '{"pass": ""}', '{"sub-fen": ["8/8/8/8/4P3/8/8/8", "r7/8/8/8/8/8/8/7K"]}',
    '{"material": ["KQKQ", "KRPKR"], "stm": "white"}', '{"imbalance": ["PPvN", "v"]}',
    '{"fen": "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"}',
    '{"white-move": ["O-O", "exd6", "e8=Q", "Rac1"], "black-move": ["O-O-O", "Nbd7"]}',
    '{"captured": "", "moved": "KP", "result": ["1-0", "*"]}', '{"captured": "QP"}',
    '{"sequence": [{"moved": "P"}, {"streak": [{"captured": "PNBRQ"}, {"pass": ""}]}, '
    '{"moved": "K"}]}']]
matched, looked_at = [], []
def feed(seed):
    for query in queries:
        found = scan.scan_games(fed, results, query, starts=starts, limit=None if seed else 50)
        matched.append(len(found.games))
        looked_at.append(found.positions)
threads = [threading.Thread(target=feed, args=(seed,)) for seed in range(2)]
for thread in threads: thread.start()
for thread in threads: thread.join()
assert len(matched) == 2 * len(queries)  # (an exception in a thread leaves the exit code at 0)
# Chess960 games, castling often, and an arrow array (an offset, nulls) of them.
games960 = []
for _ in range(60):
    board = chess.Board.from_chess960_pos(rng.randrange(960))
    start, out = board.fen(), bytearray()
    for _ in range(rng.randrange(0, 100)):
        move = random_move(board, rng, special_share=0.8)
        if move is None:
            break
        out += encode_move(board, move).to_bytes(2, "little")
        board.push(move)
    games960.append((start, bytes(out)))
array = pa.array([None] + [game for _, game in games960] + [None], pa.large_binary()).slice(1, 60)
for query in queries:
    scan.scan_games(array, results[:60], query, starts=[s for s, _ in games960], chess960=True)
# Tables that do not fit are refused; offsets out of the data are empty games.
tables = scan.compile_query(queries[-1])
good = (b"\x00" * 8, np.array([0, 4, 2, 99], np.int64), True, None, 0, 3, b"\x02" * 3,
        np.zeros(3, np.int32), scan.start_table(None, 1)[1], *tables, -1)
print("scout", sum(matched), sum(looked_at), _scout.scan(*good)[2], flush=True)
def bad(at, value):
    args = list(good)
    args[at] = value
    try:
        _scout.scan(*args)
    except ValueError as error:
        print("refused", error, flush=True)
bad(1, np.array([0, 4], np.int64))  # too few offsets
bad(5, 9)  # too many games
bad(6, b"\x02")  # results of another length
bad(7, np.array([0, 0, 3], np.int32))  # a start not in the table
bad(8, b"\x00" * 100)  # a start table not whole
two = np.zeros(1, scan.POSITION)
two["masks"][0][0] = two["masks"][0][1] = 1
bad(8, two)  # two pieces on a square
wrong = tables.conditions.copy()
wrong["moves_first"][0] = 1000
bad(9, wrong)  # a condition's items out of the tables
bad(9, b"")  # no condition
bad(15, b"\x01" * 255)  # allowed results not 256
"""


@pytest.mark.slow
def test_the_sanitized_scanner_reads_nothing_out_of_bounds(tmp_path: Path) -> None:
    import numpy as np

    from pipelines.games.sanwalk import walk_openings

    module = sanitized_build(tmp_path, "_scout", room="search")
    walked = walk_openings(movetexts(need(GAMES_2013, "real Lichess games"), 500))
    moves, sizes = walked.moves.astype("<u2"), np.maximum(walked.lengths, 0)
    ends = np.cumsum(sizes)
    games = [moves[end - size : end].tobytes().hex()
             for end, size in zip(ends, sizes, strict=True) if size]  # fmt: skip
    (tmp_path / "games.txt").write_text("\n".join(games))
    run = subprocess.run(
        [sys.executable, "-c", SCOUT_FEED, str(module.parent), str(tmp_path / "games.txt")],
        capture_output=True, text=True, env=sanitized_environment(sanitizer_runtime()),
        timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    lines = run.stdout.splitlines()
    _, matched, looked_at, empty_games = lines[0].split()
    assert int(matched) > 0 and int(looked_at) > len(games) and empty_games == "3"
    assert len(lines) == 10 and all(line.startswith("refused") for line in lines[1:]), lines
