"""`chesspipe training from-games`: whole games as training records, rescored by the tablebases.

Truths: the Stockfish fixture (the same samples' fully evaluated games), and a plain python-chess
replay with python-chess's own Syzygy prober, written here without chesspipe's code.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import chess
import chess.pgn
import chess.syzygy
import pytest
import zstandard

from pipelines.games.eval_comments import parse_eval
from pipelines.training.files import read_training
from pipelines.training.lineage import iter_lineage
from pipelines.training.manifest import FromGamesManifest, read_manifest
from schemas.plain import PlainRecord, read_records
from tests.conftest import GAMES_2013, GAMES_2021, SHARED_DATA, SYZYGY_DIR, need, run_cli
from tests.recount import ratings

FIXTURE = SHARED_DATA / "stockfish" / "games-eval.plain"
ALL_GAMES = ("--min-rating", "0", "--speeds",
             "ultrabullet,bullet,blitz,rapid,classical,correspondence", "--allow-bots")  # fmt: skip
RESULTS = {"1-0": 1, "1/2-1/2": 0, "0-1": -1}


def export(source: Path, month: str, out: Path, *options: str) -> FromGamesManifest:
    run_cli("training", "from-games", str(source), "--month", month, "--out", str(out),
            "--quiet", *ALL_GAMES, *options)  # fmt: skip
    return read_manifest(out.with_name(out.name + ".json"))


# --- the independent truth: python-chess replay and prober ---------------------------------


@dataclass
class Replayed:
    """A game replayed by python-chess: its id, PGN result and positions with their outcome."""

    game_id: str
    white_result: int
    fens: list[str]  # FEN before each move, fullmove number = ply // 2 + 1
    moves: list[str]
    rescored: list[int]  # result from the side to move at each position before a move
    first_covered: int | None
    first_white: int | None  # the first covered position's outcome, White's view


def games_text(path: Path) -> list[str]:
    with open(path, "rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read().decode()
    return ["[Event " + part for part in text.split("\n\n[Event ")[1:]] + (
        [text.split("\n\n[Event ")[0]]
    )


def outcome(tablebase: chess.syzygy.Tablebase, board: chess.Board) -> int:
    """Result of a covered position from its side to move under the 50-move rule."""
    if board.is_checkmate():
        return -1
    dtz = tablebase.probe_dtz(board)
    if dtz > 0 and dtz + board.halfmove_clock <= 100:
        return 1
    if dtz < 0 and -dtz + board.halfmove_clock <= 100:
        return -1
    return 0


def replay(text: str, tablebase: chess.syzygy.Tablebase) -> Replayed | None:
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    headers = game.headers
    # docs/ingest.md: at --min-rating 0 a missing rating counts as 0
    if ratings(headers, 0) is None:
        return None
    white_result = RESULTS[headers["Result"]]
    board = game.board()
    fens, moves, outcomes = [], [], []
    first = None
    for ply, move in enumerate([*game.mainline_moves(), None]):
        covered = not board.castling_rights and chess.popcount(board.occupied) <= 4
        value = outcome(tablebase, board) if covered else None
        if value is not None and first is None:
            first = (ply, value if board.turn == chess.WHITE else -value)
        outcomes.append(value)
        if move is None:
            break
        fens.append(board.fen())
        moves.append(move.uci())
        board.push(move)
    rescored = []
    for ply, value in enumerate(outcomes[:-1]):
        white_to_move = ply % 2 == 0
        if value is None:
            white = first[1] if first is not None else white_result
            value = white if white_to_move else -white
        rescored.append(value)
    return Replayed(
        headers["Site"].rsplit("/", 1)[-1], white_result, fens, moves, rescored,
        first[0] if first else None, first[1] if first else None,
    )  # fmt: skip


@pytest.fixture(scope="module")
def truth() -> dict[str, dict[str, Replayed]]:
    """Every kept game of both samples that has evals or can reach 4 pieces, replayed."""
    need(GAMES_2021, "real Lichess games")
    need(GAMES_2013, "real Lichess games")
    need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables")
    found: dict[str, dict[str, Replayed]] = {}
    with chess.syzygy.open_tablebase(str(SYZYGY_DIR)) as tablebase:
        for month, path in (("2021-10", GAMES_2021), ("2013-01", GAMES_2013)):
            games = {}
            for text in games_text(path):
                movetext = text.partition("\n\n")[2]
                if "%eval" not in movetext and movetext.count("x") < 28:
                    continue  # no eval, and too few captures to reach four pieces
                replayed = replay(text, tablebase)
                if replayed is not None:
                    games[replayed.game_id] = replayed
            found[month] = games
    return found


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, FromGamesManifest]]:
    """Both samples exported with tables, every position that has a score."""
    need(SYZYGY_DIR / "KQvK.rtbw", "Syzygy 3-4-piece tables")
    folder = tmp_path_factory.mktemp("from-games")
    done = {}
    for month, path in (("2021-10", GAMES_2021), ("2013-01", GAMES_2013)):
        out = folder / f"{month}.binpack"
        manifest = export(need(path, "real Lichess games"), month, out, "--syzygy",
                          str(SYZYGY_DIR), "--no-require-eval")  # fmt: skip
        done[month] = (out, manifest)
    return done


@pytest.mark.slow
def test_every_record_matches_a_python_chess_replay_with_its_prober(
    exports: dict[str, tuple[Path, FromGamesManifest]], truth: dict[str, dict[str, Replayed]]
) -> None:
    checked_changed = 0
    for month, (out, manifest) in exports.items():
        records = list(read_training(out))
        rows = list(iter_lineage(Path(manifest.lineage)))
        assert len(rows) == len(records) == manifest.records > 0
        for record, row in zip(records, rows, strict=True):
            game = truth[month][row["game_id"]]
            ply = row["ply"]
            assert (row["month"], record.ply) == (month, ply)
            # fen (with the halfmove clock), move legality, ply: from python-chess's replay
            board = chess.Board(game.fens[ply])
            board.fullmove_number = ply // 2 + 1
            assert record.fen == board.fen(en_passant="legal")
            assert record.move == game.moves[ply]
            assert chess.Move.from_uci(record.move) in chess.Board(record.fen).legal_moves
            assert record.result == game.rescored[ply], (row, record)
            assert row["first_covered_ply"] == game.first_covered
            own = game.white_result if ply % 2 == 0 else -game.white_result
            assert row["result_changed"] == (record.result != own)
            checked_changed += row["result_changed"]
    assert checked_changed > 0


@pytest.mark.slow
def test_games_reaching_the_tables_and_their_changes_are_counted(
    exports: dict[str, tuple[Path, FromGamesManifest]], truth: dict[str, dict[str, Replayed]]
) -> None:
    words = {1: "win", 0: "draw", -1: "loss"}
    for month, (_, manifest) in exports.items():
        games = truth[month].values()
        reaching = [g for g in games if g.first_covered is not None]
        changed = Counter(
            f"{words[g.white_result]}_to_{words[g.first_white]}"  # type: ignore[index]
            for g in reaching
            if g.first_white != g.white_result
        )
        assert manifest.games_reaching_tables == len(reaching)
        assert manifest.results_changed == dict(sorted(changed.items()))
    assert sum(sum(m.results_changed.values()) for _, m in exports.values()) > 50


def fixture_games() -> list[list[PlainRecord]]:
    games: list[list[PlainRecord]] = []
    for record in read_records(need(FIXTURE, "Stockfish whole-game fixture")):
        if record.ply == 0:
            games.append([])
        games[-1].append(record)
    return games


def test_without_tables_the_records_are_the_stockfish_fixture(tmp_path: Path) -> None:
    outs = []
    for month, path in (("2021-10", GAMES_2021), ("2013-01", GAMES_2013)):
        out = tmp_path / f"{month}.plain"
        manifest = export(need(path, "real Lichess games"), month, out, "--no-tables")
        assert manifest.games_skipped["missing_eval"] > 0
        assert manifest.results_changed == {} and manifest.tables == []
        outs.append(out.read_bytes())
    assert b"".join(outs) == FIXTURE.read_bytes()


@pytest.mark.slow
def test_with_tables_uncovered_games_are_the_fixture_and_covered_ones_rescored(
    tmp_path: Path, syzygy_dir: Path, truth: dict[str, dict[str, Replayed]]
) -> None:
    records: list[PlainRecord] = []
    rows: list[dict[str, object]] = []
    for month, path in (("2021-10", GAMES_2021), ("2013-01", GAMES_2013)):
        out = tmp_path / f"{month}.plain"
        manifest = export(path, month, out, "--syzygy", str(syzygy_dir))
        records += read_records(out)
        rows += [{**row, "month": month} for row in iter_lineage(Path(manifest.lineage))]
    expected = [r for game in fixture_games() for r in game]
    assert len(records) == len(expected) == len(rows)
    covered_games = 0
    for record, want, row in zip(records, expected, rows, strict=True):
        first = row["first_covered_ply"]
        assert (record.fen, record.move, record.ply) == (want.fen, want.move, want.ply)
        if first is None:
            assert record == want
            continue
        covered_games += record.ply == 0
        game = truth[str(row["month"])][str(row["game_id"])]
        assert record.result == game.rescored[record.ply]
        if record.ply < first:  # type: ignore[operator]
            assert record.score == want.score  # the eval; only the result may change
        else:
            assert abs(record.score) in range(31507, 31753) or record.score == 0
    assert covered_games > 0


@pytest.mark.slow
def test_plain_and_binpack_hold_the_same_records(tmp_path: Path, syzygy_dir: Path) -> None:
    games = need(GAMES_2021, "real Lichess games")
    options = ("--syzygy", str(syzygy_dir), "--no-require-eval")
    plain = export(games, "2021-10", tmp_path / "a.plain", *options)
    binpack = export(games, "2021-10", tmp_path / "a.binpack", *options)
    assert list(read_training(tmp_path / "a.plain")) == list(read_training(tmp_path / "a.binpack"))
    assert plain.records == binpack.records
    assert (tmp_path / "a.binpack").stat().st_size * 10 < (tmp_path / "a.plain").stat().st_size


def test_position_filters_are_counted_as_python_chess_counts_them(tmp_path: Path) -> None:
    games = need(GAMES_2021, "real Lichess games")
    out = tmp_path / "f.plain"
    manifest = export(games, "2021-10", out, "--no-tables", "--skip-in-check",
                      "--skip-captures", "--from-ply", "10", "--min-pieces", "6",
                      "--max-pieces", "30")  # fmt: skip
    # the fixture's first 63 games are 2021-10's
    first = fixture_games()[:63]
    month_counts: Counter[str] = Counter()
    month_kept = []
    last_ply, last_score = -1, 32002  # the loader's placeholder test, asked with any skip set
    for game in first:
        for record in game:
            board = chess.Board(record.fen)
            move = chess.Move.from_uci(record.move)
            if record.ply < 10:
                month_counts["before_from_ply"] += 1
            elif board.is_check():
                month_counts["in_check"] += 1
            elif board.is_capture(move) or move.promotion:
                month_counts["capture_or_promotion"] += 1
            else:  # the skips, asked of the records made
                placeholder = (record.ply > last_ply and abs(last_score) > 100
                               and last_score != 32002 and record.result != 0
                               and record.score == 0)  # fmt: skip
                last_ply = record.ply
                if placeholder:
                    month_counts["placeholder_zero"] += 1
                    continue
                last_score = record.score
                if not 6 <= chess.popcount(board.occupied) <= 30:
                    month_counts["piece_count"] += 1
                else:
                    month_kept.append((record.fen, record.ply))
    assert sum(len(g) for g in first) == manifest.positions
    assert manifest.positions_skipped == {
        "before_from_ply": month_counts["before_from_ply"],
        "in_check": month_counts["in_check"],
        "capture_or_promotion": month_counts["capture_or_promotion"],
        "no_score": 0,
    }
    assert manifest.records_skipped == {
        "placeholder_zero": month_counts["placeholder_zero"],
        "piece_count": month_counts["piece_count"],
    }
    assert all(month_counts.values()) and len(month_counts) == 5
    written = [(r.fen, r.ply) for r in read_records(out)]
    assert written == month_kept
    rows = list(iter_lineage(Path(manifest.lineage)))
    assert [row["ply"] for row in rows] == [ply for _, ply in written]
    assert manifest.records == len(written)


#: Skips as a trainer would move them from training time (each set asks several at once).
SKIPS = {
    "loader": ("--filtered", "--early-fen-skipping", "8", "--simple-eval-skipping", "300"),
    "random": ("--random-fen-skipping", "2", "--wld-filtered", "--seed", "7"),
    "ranges": ("--min-score", "-600", "--max-score", "600", "--min-pieces", "5",
               "--max-pieces", "30", "--early-fen-skipping", "3"),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    ("skips", "suffix"), [("loader", "binpack"), ("random", "binpack"), ("ranges", "plain")]
)
def test_skips_given_to_from_games_are_filter_after_it_byte_for_byte(
    tmp_path: Path, syzygy_dir: Path, skips: str, suffix: str
) -> None:
    games = need(GAMES_2021, "real Lichess games")
    tables = ("--syzygy", str(syzygy_dir), "--no-require-eval", "--from-ply", "2")
    whole = export(games, "2021-10", tmp_path / f"whole.{suffix}", *tables)
    proc = run_cli("training", "filter", str(tmp_path / f"whole.{suffix}"),
                   str(tmp_path / f"filtered.{suffix}"), *SKIPS[skips])  # fmt: skip
    filtered = json.loads(proc.stdout)
    skipped = export(games, "2021-10", tmp_path / f"skipped.{suffix}", *tables, *SKIPS[skips])
    out = (tmp_path / f"skipped.{suffix}").read_bytes()
    assert out == (tmp_path / f"filtered.{suffix}").read_bytes()
    assert skipped.records == filtered["records_kept"] < whole.records
    assert skipped.records_skipped == filtered["skipped"] != {}
    assert sum(skipped.records_skipped.values()) + skipped.records == whole.records
    # The lineage: the whole run's rows of the records kept, in order.
    kept = list(read_training(tmp_path / f"skipped.{suffix}"))
    rows = list(iter_lineage(Path(whole.lineage)))
    chosen, index = [], 0
    for record, row in zip(read_training(tmp_path / f"whole.{suffix}"), rows, strict=True):
        if index < len(kept) and record == kept[index]:
            chosen.append(row)
            index += 1
    assert index == len(kept)
    assert list(iter_lineage(Path(skipped.lineage))) == chosen
    assert skipped.games_exported == len({row["game_id"] for row in chosen})
    assert skipped.records_result_changed == sum(row["result_changed"] for row in chosen)
    assert skipped.positions_skipped == whole.positions_skipped
    assert skipped.settings.skips != whole.settings.skips


def test_lineage_names_the_games(tmp_path: Path) -> None:
    out = tmp_path / "g.plain"
    manifest = export(need(GAMES_2021, "real Lichess games"), "2021-10", out, "--no-tables")
    rows = list(iter_lineage(Path(manifest.lineage)))
    records = list(read_records(out))
    assert len(rows) == len(records)
    assert {row["month"] for row in rows} == {"2021-10"}
    assert all(len(str(row["game_id"])) == 8 for row in rows)
    assert len({row["game_id"] for row in rows}) == manifest.games_exported == 63
    assert {row["speed"] for row in rows} <= {"ultrabullet", "bullet", "blitz", "rapid",
                                                "classical", "correspondence"}  # fmt: skip
    assert all(row["rating_band"] % 100 == 0 for row in rows)
    assert all(row["first_covered_ply"] is None and not row["result_changed"] for row in rows)
    data = json.loads(out.with_name(out.name + ".json").read_text())
    assert FromGamesManifest.from_json(data) == manifest
    assert FromGamesManifest.from_json(manifest.to_json()).to_json() == data


GAME = """[Event "Rated Blitz game"]
[Site "https://lichess.org/{id}"]
[Result "1-0"]
[WhiteElo "2300"]
[BlackElo "2300"]
[TimeControl "300+0"]

1. e4 {{ [%eval {a}] }} 1... e5 {{ [%eval #-3] }} 2. Qh5 {{ [%eval 0.1] }} 1-0

"""


def test_a_bad_eval_skips_the_game_and_is_counted(tmp_path: Path) -> None:
    pgn = tmp_path / "g.pgn"
    pgn.write_text(GAME.format(id="AbCdEfGh", a="0.25") + GAME.format(id="Xx", a="abc"))
    out = tmp_path / "g.plain"
    manifest = export(pgn, "2021-10", out, "--no-tables")
    assert manifest.games_skipped == {"bad_eval": 1}
    assert manifest.games_exported == 1 and manifest.records == 3
    assert [(r.move, r.score) for r in read_records(out)] == [
        ("e2e4", 25), ("e7e5", 31997), ("d1h5", 10)]  # fmt: skip
    assert [row["game_id"] for row in iter_lineage(Path(manifest.lineage))] == ["AbCdEfGh"] * 3


def test_eval_values() -> None:
    assert parse_eval(b"0.17", True) == 17
    assert parse_eval(b"-0.3", True) == -30
    assert parse_eval(b"-0.29", False) == 29
    assert parse_eval(b"#3", True) == 31997
    assert parse_eval(b"#3", False) == -31997
    assert parse_eval(b"#-2", False) == 31998
    assert parse_eval(b"1.5,20", True) == 150
    for bad in (b"abc", b"", b"1e5", b"#", b"400.00"):
        with pytest.raises(ValueError):
            parse_eval(bad, True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("missing.pgn.zst", "--month", "2021-10", "--no-tables"), "missing.pgn.zst"),
        (("{games}", "--month", "2021-13", "--no-tables"), "2021-13"),
        (("{games}", "--month", "2021-10", "--syzygy", "{tmp}/nope"), "does not exist"),
        (("{games}", "--month", "2021-10", "--syzygy", "{tmp}"), "no Syzygy tables"),
        (("{games}", "--month", "2021-10", "--no-tables", "--min-pieces", "9", "--max-pieces",
          "8"), "--min-pieces <= --max-pieces"),
        (("{games}", "--month", "2021-10", "--no-tables", "--variant", "chess960"), "Standard"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_writes_nothing(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    games = need(GAMES_2021, "real Lichess games")
    out = tmp_path / "out" / "x.plain"
    argv = [a.format(games=games, tmp=tmp_path) for a in args]
    proc = run_cli("training", "from-games", *argv, "--out", str(out), check=False,
                   env={"SYZYGY_PATH": ""})  # fmt: skip
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr
    # Nothing written but the output's lock file (`.NAME.lock`, empty, as a book's).
    left = list((tmp_path / "out").iterdir()) if (tmp_path / "out").exists() else []
    assert [p.name for p in left] in ([], [f".{out.name}.lock"])


def test_a_bad_output_name_is_refused(tmp_path: Path) -> None:
    games = need(GAMES_2021, "real Lichess games")
    proc = run_cli("training", "from-games", str(games), "--month", "2021-10", "--no-tables",
                   "--out", str(tmp_path / "x.txt"), check=False)  # fmt: skip
    assert proc.returncode == 1 and ".plain or .binpack" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_progress_ends_with_the_manifests_counts(tmp_path: Path) -> None:
    source = need(GAMES_2021, "real Lichess games (2021-10 sample)")
    out = tmp_path / "p.plain"
    proc = run_cli("training", "from-games", str(source), "--month", "2021-10", "--out",
                   str(out), "--no-tables", "--progress")  # fmt: skip
    manifest = read_manifest(out.with_name(out.name + ".json"))
    last = proc.stderr.strip().splitlines()[-1]
    assert f"{manifest.games_read:,} games" in last
    assert f"{manifest.games_kept:,} kept" in last  # kept as ingest counts it, not exported
    quiet = run_cli("training", "from-games", str(source), "--month", "2021-10", "--out",
                    str(tmp_path / "q.plain"), "--no-tables", "--quiet")  # fmt: skip
    assert quiet.stderr == ""


@pytest.mark.slow
@pytest.mark.parametrize("suffix", ["binpack", "plain"])
def test_units_of_frames_in_workers_write_the_same_bytes(
    tmp_path: Path, syzygy_dir: Path, suffix: str
) -> None:
    """A pzstd-style dump exported by worker processes, a unit of frames each, is the same."""
    from pipelines.commands.training import TableOutcomes
    from pipelines.games.frames import frame_index, write_framed_zstd
    from pipelines.games.game_filter import GameFilter
    from pipelines.training.from_games import export_games
    from pipelines.training.settings import FromGamesSettings
    from schemas.speed import Speed
    from tests.recount import read_text

    framed = tmp_path / "framed.pgn.zst"
    text = read_text(need(GAMES_2021, "real Lichess games")).encode()
    write_framed_zstd(framed, text, frame_size=150_000, level=1)
    with open(framed, "rb") as handle:
        frames = frame_index(handle, framed.stat().st_size)
    assert frames is not None and len(frames) > 10
    from pipelines.training.skip_settings import SkipSettings

    # skips asked in this process, of the games the workers export, in order
    skips = SkipSettings(random_fen_skipping=1, filtered=True, seed=3)
    settings = FromGamesSettings(GameFilter(0, frozenset(Speed), allow_bots=True),
                                 require_eval=False, skips=skips)  # fmt: skip
    outcomes = TableOutcomes([syzygy_dir])
    runs = []
    for workers in (1, 2):
        out = tmp_path / f"{workers}.{suffix}"
        manifest = export_games(str(framed), "2021-10", out, settings, outcomes,
                                workers=workers, parallel_min_bytes=0)  # fmt: skip
        runs.append((out.read_bytes(), Path(manifest.lineage).read_bytes(), manifest))
    outcomes.close()
    (ordered, lineage, manifest), (by_units, unit_lineage, unit_manifest) = runs
    assert by_units == ordered and unit_lineage == lineage
    assert (manifest.workers, unit_manifest.workers) == (1, 2)
    different = {"output", "lineage", "output_sha256", "seconds", "finished_at", "workers"}
    assert {k: v for k, v in manifest.to_json().items() if k not in different} == {
        k: v for k, v in unit_manifest.to_json().items() if k not in different
    }
    assert manifest.records > 1000 and manifest.games_read == 999
    assert {"random_fen_skipping", "filtered"} <= set(manifest.records_skipped)
    assert not list(tmp_path.glob(".from-games-*"))  # the units' spool files are gone


def test_a_cut_dump_read_by_units_fails_and_leaves_nothing(tmp_path: Path) -> None:
    from pipelines.errors import CorruptInput
    from pipelines.games.frames import frame_index, write_framed_zstd
    from pipelines.training.from_games import export_games
    from pipelines.training.settings import FromGamesSettings
    from tests.recount import read_text

    framed = tmp_path / "framed.pgn.zst"
    text = read_text(need(GAMES_2021, "real Lichess games")).encode()
    write_framed_zstd(framed, text, frame_size=150_000, level=1)
    with open(framed, "rb") as handle:
        frames = frame_index(handle, framed.stat().st_size)
    assert frames is not None
    cut = tmp_path / "cut.pgn.zst"
    middle = frames[len(frames) // 2]
    data = framed.read_bytes()
    # The middle frame's compressed bytes garbled: its unit's worker fails.
    cut.write_bytes(data[: middle.offset + 20] + b"\xff" * 64 + data[middle.offset + 84 :])
    out = tmp_path / "out" / "x.binpack"
    out.parent.mkdir()
    with pytest.raises(CorruptInput, match="corrupt zstd"):
        export_games(str(cut), "2021-10", out, FromGamesSettings(), workers=2,
                     parallel_min_bytes=0)  # fmt: skip
    # Nothing written but the output's lock file (`.NAME.lock`, empty, as a book's).
    assert [p.name for p in out.parent.iterdir()] in ([], [f".{out.name}.lock"])
