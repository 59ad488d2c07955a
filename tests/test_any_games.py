"""Games that are not from Lichess: master collections, annotated databases, chess.com and
engine-match exports, in any container.

The truths: python-chess's reading of the same games (tests/recount.py), PolyGlot's make-book
on the same games, pgn-extract's -D for duplicates. The games are the shared over-the-board
collections (../shared/data/otb/) and the Lichess samples, changed into each dialect here.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import subprocess
import zipfile
from collections import Counter
from pathlib import Path

import chess
import chess.pgn
import pytest

from pipelines.books.build import build_book
from pipelines.books.settings import BookSettings
from pipelines.games.game_filter import GameFilter, ScanStats
from pipelines.games.scan import kept_games, split_games
from pipelines.ingest.options import Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import partition_file
from schemas.polyglot import read_entries
from schemas.speed import Speed
from tests.conftest import OTB, need, need_program, run_cli
from tests.polyglot_order import first_plays, moves_by_first_play, rank_order
from tests.recount import keeps, read_text, recount, speed
from tests.test_ingest import stats_counter

EVERY_GAME = GameFilter(0, frozenset({"all"}))
ALL_NAMES = {speed.value for speed in Speed}


def python_chess_games(text: str) -> list[chess.pgn.Game]:
    stream = io.StringIO(text)
    games = []
    while (game := chess.pgn.read_game(stream)) is not None:
        games.append(game)
    return games


def decided_standard(path: Path) -> int:
    """Games python-chess reads with a decided result and the standard start."""
    return sum(
        1
        for game in python_chess_games(read_text(path))
        if game.headers.get("Result") in ("1-0", "0-1", "1/2-1/2")
        and "FEN" not in game.headers
        and next(iter(game.mainline_moves()), None) is not None
    )


# Speeds and ratings.


@pytest.mark.parametrize(
    "time_control",
    ["300+0", "180+2", "0+1", "-", "180", "*180", "40/240", "40/7200:3600", "1/259200",
     "60/5400+30", "?", "", "abc", "40/0", "0/60", "12+", "+5", "1_000", "٣٠٠"],
)  # fmt: skip
def test_time_controls_read_as_the_pgn_standard_says(time_control: str) -> None:
    found = Speed.from_time_control(time_control.encode())
    assert (found or Speed.OTB).value == speed(time_control)


def test_all_names_every_speed_and_otb_is_one() -> None:
    assert GameFilter(speeds=frozenset({"all"})).speeds == frozenset(Speed)
    assert Speed.parse_many(["otb"]) == {Speed.OTB}
    with pytest.raises(ValueError, match="or all"):
        Speed.parse_many(["over-the-board"])


@pytest.mark.parametrize("name", ["games_2021", "odd_cases"])
def test_the_default_filter_keeps_on_lichess_what_it_kept(
    request: pytest.FixtureRequest, name: str
) -> None:
    """Default settings: the games passed are those docs/ingest.md's rules (written again in
    tests/recount.py, read by python-chess) pass, and no reason is new."""
    path: Path = request.getfixturevalue(name)
    text = read_text(path)
    default = GameFilter()
    stats = ScanStats()
    passed = sum(1 for _ in kept_games(split_games([text.encode()], stats), default, stats))
    stream = io.StringIO(text)
    expected = 0
    while (headers := chess.pgn.read_headers(stream)) is not None:
        expected += keeps(headers, default.min_rating, set(default.speeds), False)
    assert passed == expected > 0
    assert set(stats.dropped) <= {
        "rating_missing", "rating_low", "time_control", "speed", "bot", "variant", "result",
        "malformed",
    }  # fmt: skip


# Collections, their books, duplicates.


@pytest.mark.slow
def test_every_game_of_a_collection_is_kept(tmp_path: Path, capablanca: Path) -> None:
    warehouse = tmp_path / "w"
    proc = run_cli(
        "ingest", str(capablanca), "--month", "1901-01", "--warehouse", str(warehouse),
        "--speeds", "all", "--min-rating", "0", "--quiet",
    )  # fmt: skip
    summary = json.loads(proc.stdout)
    assert summary["games_kept"] == decided_standard(capablanca) == summary["games_read"] - 1
    assert summary["games_dropped"] == {"result": 1}  # the one game with result *
    expected, kept = recount(capablanca, 0, ALL_NAMES)
    assert kept == summary["games_kept"]
    assert stats_counter(warehouse, "1901-01") == expected
    # As the issue found it: the Lichess speeds alone keep none of them, each one counted.
    lichess = run_cli(
        "ingest", str(capablanca), "--month", "1901-02", "--warehouse", str(warehouse),
        "--speeds", "ultrabullet,bullet,blitz,rapid,classical,correspondence",
        "--min-rating", "0", "--quiet", check=False,
    )  # fmt: skip
    assert lichess.returncode == 1 and lichess.stdout == ""  # a run that keeps nothing fails
    [line] = lichess.stderr.splitlines()
    assert "597 of 597 games have no readable time control" in line, line
    assert "nothing published" in line, line
    accepted = run_cli(
        "ingest", str(capablanca), "--month", "1901-02", "--warehouse", str(warehouse),
        "--speeds", "ultrabullet,bullet,blitz,rapid,classical,correspondence",
        "--min-rating", "0", "--quiet", "--allow-empty",
    )  # fmt: skip
    assert json.loads(accepted.stdout)["games_dropped"] == {"time_control": 597}


def pgn_extract(*args: str, cwd: Path) -> Path:
    out = cwd / f"pgn-extract-{len(list(cwd.iterdir()))}.pgn"
    program = need_program("pgn-extract")
    subprocess.run([program, "-s", *args, "-o", str(out)], check=True, cwd=cwd, capture_output=True)
    return out


def decided_games(source: Path, folder: Path) -> Path:
    """The games of `source` pgn-extract finds with a decided result (PolyGlot's make-book
    counts a game with result * as a draw; ingest leaves it out)."""
    tags = folder / "decided.txt"
    tags.write_text('Result "1-0"\nResult "0-1"\nResult "1/2-1/2"\n')
    return pgn_extract("-t", str(tags), str(source), cwd=folder)


def make_book(source: Path, folder: Path, games: int, score: float) -> Path:
    polyglot = need_program("polyglot")
    out = folder / f"polyglot-{source.stem}-{games}-{score}.bin"
    subprocess.run(
        [polyglot, "make-book", "-pgn", str(source), "-bin", str(out), "-max-ply", "20",
         "-min-game", str(games), "-min-score", f"{score * 100:g}"],
        check=True, capture_output=True, cwd=folder,
    )  # fmt: skip
    return out


def entries(path: Path) -> set[tuple[int, int, int]]:
    table = read_entries(path)
    keys = table["key"].tolist()
    return set(zip(keys, table["move"].tolist(), table["weight"].tolist(), strict=True))


def annotated(text: str, seed: int) -> str:
    """The games of `text` as python-chess writes them, with clock and evaluation comments,
    NAGs and nested sidelines (one of them with an illegal move), their main lines unchanged."""
    rng = random.Random(seed)
    out = []
    for number, game in enumerate(python_chess_games(text)):
        node = game
        while node.variations:
            child = node.variations[0]
            child.comment = f"[%clk 0:{rng.randrange(60):02d}:00] [%eval {rng.uniform(-2, 2):.2f}]"
            if rng.random() < 0.2:
                child.nags.add(rng.choice([1, 2, 3, 4, 5, 6]))
            legal = list(node.board().legal_moves)
            if rng.random() < 0.3 and len(legal) > 1:
                side = node.add_variation(rng.choice([m for m in legal if m != child.move]))
                side.comment = "a sideline (with (parentheses) inside)"
                deeper = list(side.board().legal_moves)
                if deeper:
                    side.add_variation(rng.choice(deeper)).add_variation(chess.Move.null())
            node = child
        exported = str(game)
        if number % 7 == 3:  # an illegal move in a sideline: python-chess keeps the main line
            exported = exported.replace(" 2. ", " ( 1... Ke7 2. Kxe8 ) 2. ", 1)
        out.append(exported)
    return "\n\n".join(out) + "\n"


@pytest.mark.slow
def test_books_from_collections_in_every_container_equal_polyglot(
    tmp_path: Path, capablanca: Path, london: Path
) -> None:
    folder = tmp_path / "collections"
    folder.mkdir()
    both = tmp_path / "both.pgn"
    both.write_bytes(capablanca.read_bytes() + b"\r\n" + london.read_bytes())
    (folder / "a.pgn.gz").write_bytes(gzip.compress(capablanca.read_bytes()))
    (folder / "b.zip").write_bytes(
        _zip({"readme.txt": b"not games", "london.pgn": london.read_bytes()})
    )
    truth = decided_games(both, tmp_path)
    sources = {
        "1901-01": capablanca,
        "1901-02": folder,  # a folder of a .gz and a .zip
        "1901-03": tmp_path / "both.pgn.bz2",
        "1901-04": tmp_path / "annotated.pgn",
    }
    sources["1901-03"].write_bytes(bz2.compress(both.read_bytes()))
    sources["1901-04"].write_text(annotated(read_text(both), seed=3))
    warehouse = tmp_path / "w"
    for month, source in sources.items():
        manifest = ingest(
            str(source), month, warehouse, IngestSettings(EVERY_GAME), runtime=Runtime(workers=1)
        )
        assert manifest.games_dropped == {"result": 1}, (month, manifest.games_dropped)
    expected_capablanca = recount(capablanca, 0, ALL_NAMES)[0]
    assert stats_counter(warehouse, "1901-01") == expected_capablanca
    expected_both = recount(both, 0, ALL_NAMES)[0]
    for month in ("1901-02", "1901-03", "1901-04"):
        assert stats_counter(warehouse, month) == expected_both, month
    for games, score in ((1, 0.0), (3, 0.35), (5, 0.5)):
        reference = make_book(truth, tmp_path, games, score)
        assert reference.stat().st_size
        for month in ("1901-02", "1901-03", "1901-04"):
            out = tmp_path / f"ours-{month}-{games}.bin"
            build_book(warehouse, month, out, BookSettings(games, score))
            # Byte for byte: moves of equal points in the order the games first played them.
            assert out.read_bytes() == reference.read_bytes(), (month, games, score)


@pytest.mark.slow
def test_polyglot_orders_moves_of_equal_points_as_the_games_first_played_them(
    tmp_path: Path, capablanca: Path
) -> None:
    """The same games in the other order give PolyGlot another book with the same entries, and
    chesspipe PolyGlot's book each time: the first-play ranks are python-chess's first plays."""
    warehouse = tmp_path / "w"
    ingest(
        str(capablanca),
        "1901-01",
        warehouse,
        IngestSettings(EVERY_GAME),
        runtime=Runtime(workers=1),
    )
    ours = tmp_path / "ours.bin"
    build_book(warehouse, "1901-01", ours, BookSettings(1, 0.0))
    forward = decided_games(capablanca, tmp_path)
    backward = tmp_path / "backward.pgn"
    games = reversed(python_chess_games(read_text(forward)))
    backward.write_text(
        "".join(g.accept(chess.pgn.StringExporter(columns=79)) + "\n\n" for g in games)
    )
    books = {pgn: make_book(pgn, tmp_path, 1, 0.0) for pgn in (forward, backward)}
    ingest(
        str(backward), "1901-02", warehouse, IngestSettings(EVERY_GAME), runtime=Runtime(workers=1)
    )
    reversed_ours = tmp_path / "reversed.bin"
    build_book(warehouse, "1901-02", reversed_ours, BookSettings(1, 0.0))
    assert books[forward].read_bytes() != books[backward].read_bytes()
    assert entries(books[forward]) == entries(books[backward]) == entries(ours)
    assert ours.read_bytes() == books[forward].read_bytes()
    assert reversed_ours.read_bytes() == books[backward].read_bytes()
    for month, pgn in (("1901-01", forward), ("1901-02", backward)):
        ranks = rank_order(partition_file(warehouse, month))
        assert ranks == moves_by_first_play(first_plays(pgn)), month


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.slow
def test_dedupe_keeps_what_pgn_extract_keeps(
    tmp_path: Path, capablanca: Path, london: Path
) -> None:
    """The same games twice, once as another program writes them (comments, sidelines), and
    a collection with a game of its own twice: pgn-extract -D's count of the decided games."""
    text = read_text(london) + "\n" + read_text(capablanca)
    games = python_chess_games(text)
    copies = [str(g) for g in games[::5]]  # python-chess's own writing of every fifth game
    source = tmp_path / "overlap.pgn"
    source.write_text(text + "\n" + annotated("\n\n".join(copies), seed=5))
    unique = pgn_extract("-D", str(source), cwd=tmp_path)
    expected = decided_standard(unique)
    proc = run_cli(
        "ingest", str(source), "--month", "1851-01", "--warehouse", str(tmp_path / "w"),
        "--speeds", "all", "--min-rating", "0", "--dedupe", "--quiet",
    )  # fmt: skip
    summary = json.loads(proc.stdout)
    assert summary["games_kept"] == expected
    dropped = summary["games_dropped"]
    assert dropped["duplicate"] == summary["games_read"] - expected - dropped["result"] > 0


# Dialects: each compared with python-chess's reading of the same games.


def _games(path: Path, count: int) -> list[chess.pgn.Game]:
    return python_chess_games(read_text(path))[:count]


def _lines(game: chess.pgn.Game, tags: dict[str, str]) -> str:
    headers = "".join(f'[{name} "{value}"]\n' for name, value in tags.items())
    return headers + "\n" + str(game.mainline_moves()) + " " + tags.get("Result", "*") + "\n"


def dialects(capablanca: Path) -> dict[str, tuple[bytes, str]]:
    """Each dialect's bytes, with the same games as python-chess reads and writes them plainly."""
    games = [g for g in _games(capablanca, 40) if g.headers["Result"] != "*"]
    plain = "\n".join(str(g) + "\n" for g in games)
    cases: dict[str, tuple[bytes, str]] = {}
    cases["annotated"] = (annotated(plain, seed=1).encode(), plain)
    cases["crlf_and_bom"] = (b"\xef\xbb\xbf" + plain.replace("\n", "\r\n").encode(), plain)
    cases["latin1_names"] = (
        plain.replace("Capablanca, Jose Raul", "Capablanca, Jos\xe9 Ra\xfal").encode("latin-1"),
        plain,
    )
    zeros = plain.replace("O-O-O", "0-0-0").replace("O-O", "0-0")
    assert zeros != plain
    cases["castling_with_zeros"] = (zeros.encode(), plain)
    lowered = "\n".join(
        "".join(f'[{k.lower()} "{v}"]\n' for k, v in g.headers.items())
        + "\n" + str(g.mainline_moves()) + " " + g.headers["Result"] + "\n"
        for g in games
    )  # fmt: skip
    cases["lowercase_tag_names"] = (lowered.encode(), plain)
    # The result in the tag alone (but for the last game, whose end shows the source whole).
    untold = [
        _lines(g, dict(g.headers)).replace(" " + g.headers["Result"] + "\n", "\n")
        for g in games[:-1]
    ]
    cases["result_only_in_the_tag"] = (("\n".join(untold) + "\n" + str(games[-1])).encode(), plain)
    chess_com = "\n".join(
        _lines(g, {"Event": "Live Chess", "Site": "Chess.com", "Date": "2024.01.02",
                   "Round": "-", "White": "a", "Black": "b", "Result": g.headers["Result"],
                   "CurrentPosition": g.end().board().fen(), "Timezone": "UTC",
                   "ECO": "C00", "ECOUrl": "https://www.chess.com/openings/x",
                   "WhiteElo": str(1500 + i), "BlackElo": str(1400 + i),
                   "TimeControl": "180" if i % 2 else "1/259200", "Termination": "a won",
                   "StartTime": "12:00:00", "EndDate": "2024.01.02", "Link": "https://x"})
        .replace(" ", " {[%clk 0:02:59.9]} ", 3)
        for i, g in enumerate(games)
    )  # fmt: skip
    cases["chess_com"] = (chess_com.encode(), chess_com)
    engines = "\n".join(
        _lines(g, {"Event": "CCRL 40/15", "Site": "CCRL", "Date": "2024.01.02",
                   "Round": f"{i}.1", "White": "Engine A 1.0 64-bit", "Black": "Engine B",
                   "Result": g.headers["Result"], "TimeControl": "40/240",
                   "PlyCount": str(g.end().ply())})
        .replace(" ", " {+0.25/18 1.2s} ", 2)
        for i, g in enumerate(games)
    )  # fmt: skip
    cases["engine_match"] = (engines.encode(), engines)
    return cases


@pytest.mark.slow
@pytest.mark.parametrize(
    "dialect",
    ["annotated", "crlf_and_bom", "latin1_names", "castling_with_zeros", "lowercase_tag_names",
     "result_only_in_the_tag", "chess_com", "engine_match"],
)  # fmt: skip
def test_dialects_count_as_python_chess_reads_them(
    tmp_path: Path, capablanca: Path, dialect: str
) -> None:
    data, plain = dialects(capablanca)[dialect]
    source = tmp_path / "games.pgn"
    source.write_bytes(data)
    reference = tmp_path / "plain.pgn"
    reference.write_text(plain)
    manifest = ingest(str(source), "2024-01", tmp_path / "w", IngestSettings(EVERY_GAME))
    expected, kept = recount(reference, 0, ALL_NAMES)
    assert manifest.games_kept == kept == manifest.games_read > 0
    assert stats_counter(tmp_path / "w", "2024-01") == expected


@pytest.mark.slow
def test_games_from_a_position_and_star_results_are_counted_apart(
    tmp_path: Path, capablanca: Path
) -> None:
    games = _games(capablanca, 12)
    texts = []
    for number, game in enumerate(games):
        tags = dict(game.headers)
        if number % 3 == 0:  # from the position after its first three moves
            board = game.board()
            for move in list(game.mainline_moves())[:3]:
                board.push(move)
            tags.update(SetUp="1", FEN=board.fen())
            rest = chess.pgn.Game.from_board(board)  # (the moves after it)
            texts.append(_lines(rest, tags))
            continue
        if number % 3 == 1:
            tags["Result"] = "*"
        if number == 2:
            tags.update(SetUp="1", FEN=chess.STARTING_FEN)  # the standard start: kept
        texts.append(_lines(game, tags))
    source = tmp_path / "games.pgn"
    source.write_text("\n".join(texts))
    manifest = ingest(str(source), "2024-01", tmp_path / "w", IngestSettings(EVERY_GAME))
    assert manifest.games_dropped == {"from_position": 4, "result": 4}
    expected, kept = recount(source, 0, ALL_NAMES)
    assert manifest.games_kept == kept == 4
    assert stats_counter(tmp_path / "w", "2024-01") == expected


# Containers: stdin, globs, and damaged ones.


@pytest.mark.slow
def test_stdin_and_a_glob(tmp_path: Path, london: Path) -> None:
    zipped = _zip({"london.pgn": london.read_bytes()})
    import os
    import sys

    from tests.conftest import ROOT

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for number, data in enumerate((zipped, gzip.compress(london.read_bytes()))):
        done = subprocess.run(
            [sys.executable, "-m", "pipelines", "ingest", "-", "--month", f"1851-0{number + 1}",
             "--warehouse", str(tmp_path / "w"), "--speeds", "all", "--min-rating", "0",
             "--quiet"],
            input=data, capture_output=True, cwd=ROOT, env=env, timeout=300, check=True,
        )  # fmt: skip
        assert json.loads(done.stdout)["games_kept"] == decided_standard(london)
    for name in ("x1.pgn", "x2.pgn.gz"):
        data = london.read_bytes()
        (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    manifest = ingest(str(tmp_path / "x*"), "1851-03", tmp_path / "w", IngestSettings(EVERY_GAME))
    assert manifest.games_kept == 2 * decided_standard(london)
    assert manifest.source_kind == "files"
    # `**` goes down any depth of folders (it did not recurse): the two files and one below.
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    (deep / "x3.pgn").write_bytes(london.read_bytes())
    manifest = ingest(str(tmp_path / "**" / "x*.pgn*"), "1851-04", tmp_path / "w",
                      IngestSettings(EVERY_GAME))  # fmt: skip
    assert manifest.games_kept == 3 * decided_standard(london)


@pytest.mark.parametrize("damage", ["truncated_gz", "corrupt_zip_member", "truncated_bz2"])
def test_damaged_containers_fail_in_one_line(tmp_path: Path, london: Path, damage: str) -> None:
    data = london.read_bytes()
    if damage == "truncated_gz":
        source, damaged = tmp_path / "games.pgn.gz", gzip.compress(data)[:-5000]
    elif damage == "truncated_bz2":
        source, damaged = tmp_path / "games.pgn.bz2", bz2.compress(data)[: len(data) // 8]
    else:
        source = tmp_path / "games.zip"
        archive = bytearray(_zip({"london.pgn": data}))
        middle = len(archive) // 2
        archive[middle : middle + 64] = bytes(64)
        damaged = bytes(archive)
    source.write_bytes(damaged)
    warehouse = tmp_path / "w"
    proc = run_cli(
        "ingest", str(source), "--month", "1851-01", "--warehouse", str(warehouse),
        "--speeds", "all", "--min-rating", "0", "--quiet", check=False,
    )  # fmt: skip
    err = proc.stderr.strip()
    assert proc.returncode == 1 and len(err.splitlines()) == 1, err
    assert "Traceback" not in err and ("truncated" in err or "corrupt" in err), err
    assert not [p for p in warehouse.rglob("*") if p.is_file() and p.parent.name != ".locks"]


def test_drop_reasons_count_every_game(tmp_path: Path, capablanca: Path) -> None:
    """Binary junk between games: after a blank line and "[", a piece counted as malformed;
    after a game's moves, read as python-chess reads it (the games around it kept)."""
    games = read_text(capablanca).replace("\r\n", "\n").split("\n\n[")[:40]
    junk = bytes(random.Random(1).randrange(256) for _ in range(3000)).replace(b"[", b"(")
    data = (
        ("\n\n[".join(games[:20])).encode()
        + b"\n\n["
        + junk
        + b"\n\n["
        + ("\n\n[".join(games[20:40])).encode()
    )
    source = tmp_path / "junk.pgn"
    source.write_bytes(data)
    manifest = ingest(str(source), "2024-01", tmp_path / "w", IngestSettings(EVERY_GAME))
    counted = Counter(manifest.games_dropped)
    assert manifest.games_read == manifest.games_kept + sum(counted.values())
    assert counted == {"malformed": 1}
    expected, kept = recount(source, 0, ALL_NAMES)
    assert manifest.games_kept == 40 == kept
    assert stats_counter(tmp_path / "w", "2024-01") == expected


@pytest.mark.slow
def test_a_run_that_keeps_nothing_names_the_options_that_keep_such_games(
    tmp_path: Path,
) -> None:
    """An over-the-board file failed on its time controls, then, with `--speeds all`, on its
    ratings: the one line names both options at once, and they keep every decided game."""
    london = need(OTB / "London1851.pgn", "the London 1851 collection (otb/)")
    warehouse = str(tmp_path / "wh")
    failed = run_cli("ingest", str(london), "--month", "1851-07", "--warehouse", warehouse,
                     check=False)  # fmt: skip
    assert failed.returncode == 1
    [line] = failed.stderr.splitlines()
    assert "--speeds all --min-rating 0 keep games without ratings or time control" in line
    kept = run_cli("ingest", str(london), "--month", "1851-07", "--warehouse", warehouse,
                   "--speeds", "all", "--min-rating", "0", "--quiet")  # fmt: skip
    summary = json.loads(kept.stdout)
    assert summary["games_kept"] == decided_standard(london) > 0


@pytest.mark.slow
def test_several_sources_are_read_as_one_in_the_order_given(tmp_path: Path) -> None:
    """Two SOURCE arguments were refused: several files, folders or globs are read as one
    source, in the order given, to the same statistics (first-play ranks included) as the
    files joined end to end; a URL, '-' or a Lichess month among them is refused in one line."""
    from tests.sample_tool import make_sample

    first, second = (make_sample.sample_path(m) for m in make_sample.SAMPLE_MONTHS[:2])
    joined = tmp_path / "joined.pgn.zst"
    joined.write_bytes(first.read_bytes() + second.read_bytes())  # zstd frames end to end
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "second.pgn.zst").write_bytes(second.read_bytes())
    options = ("--month", "2024-01", "--min-rating", "0", "--speeds", "all", "--quiet")
    run_cli("ingest", str(joined), "--warehouse", str(tmp_path / "one"), *options)
    for name, sources in (("files", (first, second)), ("file-and-folder", (first, folder))):
        run_cli("ingest", *map(str, sources), "--warehouse", str(tmp_path / name), *options)
        assert (
            tmp_path / name / "move_stats" / "month=2024-01" / "part-0.parquet"
        ).read_bytes() == (
            tmp_path / "one" / "move_stats" / "month=2024-01" / "part-0.parquet"
        ).read_bytes()
    # The other order is another source: the same counts, other first-play ranks.
    run_cli("ingest", str(second), str(first), "--warehouse", str(tmp_path / "swapped"), *options)
    swapped = json.loads((tmp_path / "swapped" / "move_stats" / "month=2024-01.json").read_text())
    assert swapped["games_read"] == 2 * 1500
    explored = run_cli("explorer", "index", str(first), str(second), "--warehouse",
                       str(tmp_path / "one"), *options)  # fmt: skip
    assert json.loads(explored.stdout)["games_read"] == 3000
    for bad in ("-", "https://example.org/x.pgn", "lichess:2024-01"):
        proc = run_cli("ingest", str(first), bad, "--warehouse", str(tmp_path / "bad"), *options,
                       check=False)  # fmt: skip
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1
        assert "several sources are read as one" in proc.stderr
    assert not (tmp_path / "bad").exists()
