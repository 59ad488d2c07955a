"""The bundled sample: small month-like Lichess dumps, generated deterministically.

A tool, not runtime code: run `python data/make_sample.py` from the repository root to regenerate
`data/sample/`; the same seed gives the same PGN text, byte for byte.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

import chess

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: import the checkout's pipelines
    sys.path.insert(0, str(ROOT))

from pipelines.games.frames import write_framed_zstd  # noqa: E402

SAMPLE_DIR = ROOT / "data" / "sample"
SAMPLE_MONTHS = ("2024-01", "2024-02")
GAMES_PER_MONTH = 1500

#: Opening lines (SAN from the start) and how often players choose them.
OPENINGS: tuple[tuple[str, str, str, int], ...] = (
    ("C50", "Italian Game", "e4 e5 Nf3 Nc6 Bc4 Bc5 c3 Nf6 d3 d6 O-O O-O", 9),
    ("C65", "Ruy Lopez: Berlin Defense", "e4 e5 Nf3 Nc6 Bb5 Nf6 O-O Nxe4 d4 Nd6 Bxc6 dxc6", 8),
    ("C84", "Ruy Lopez: Closed", "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 d6", 7),
    ("B90", "Sicilian Defense: Najdorf", "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6 Be3 e5 Nb3 Be6", 8),
    ("B33", "Sicilian Defense: Sveshnikov", "e4 c5 Nf3 Nc6 d4 cxd4 Nxd4 Nf6 Nc3 e5 Ndb5 d6", 5),
    ("B22", "Sicilian Defense: Alapin", "e4 c5 c3 Nf6 e5 Nd5 d4 cxd4 Nf3 Nc6", 4),
    ("C11", "French Defense: Classical", "e4 e6 d4 d5 Nc3 Nf6 e5 Nfd7 f4 c5 Nf3 Nc6", 5),
    ("B12", "Caro-Kann Defense: Advance", "e4 c6 d4 d5 e5 Bf5 Nf3 e6 Be2 c5 Be3", 5),
    ("B01", "Scandinavian Defense", "e4 d5 exd5 Qxd5 Nc3 Qa5 d4 Nf6 Nf3 Bf5", 3),
    ("C42", "Petrov's Defense", "e4 e5 Nf3 Nf6 Nxe5 d6 Nf3 Nxe4 d4 d5 Bd3", 3),
    ("D37", "Queen's Gambit Declined", "d4 d5 c4 e6 Nc3 Nf6 Nf3 Be7 Bf4 O-O e3 c5", 7),
    ("D43", "Semi-Slav Defense", "d4 d5 c4 c6 Nf3 Nf6 Nc3 e6 Bg5 h6 Bh4 dxc4", 4),
    ("D27", "Queen's Gambit Accepted", "d4 d5 c4 dxc4 Nf3 Nf6 e3 e6 Bxc4 c5 O-O a6", 3),
    ("E60", "King's Indian Defense", "d4 Nf6 c4 g6 Nc3 Bg7 e4 d6 Nf3 O-O Be2 e5 O-O Nc6", 5),
    ("E20", "Nimzo-Indian Defense", "d4 Nf6 c4 e6 Nc3 Bb4 Qc2 O-O a3 Bxc3+ Qxc3 d5", 4),
    ("D85", "Grunfeld Defense", "d4 Nf6 c4 g6 Nc3 d5 cxd5 Nxd5 e4 Nxc3 bxc3 Bg7", 3),
    ("D02", "London System", "d4 d5 Nf3 Nf6 Bf4 e6 e3 c5 c3 Nc6 Nbd2 Bd6", 5),
    ("A07", "King's Indian Attack", "Nf3 d5 g3 Nf6 Bg2 e6 O-O Be7 d3 O-O Nbd2 c5", 3),
    ("A29", "English Opening: Four Knights", "c4 e5 Nc3 Nf6 Nf3 Nc6 g3 d5 cxd5 Nxd5 Bg2 Nb6", 4),
    ("A45", "Trompowsky Attack", "d4 Nf6 Bg5 Ne4 Bf4 c5 f3 Qa5+ c3 Nf6", 2),
    ("A80", "Dutch Defense", "d4 f5 g3 Nf6 Bg2 g6 Nf3 Bg7 O-O O-O c4 d6", 2),
    ("C45", "Scotch Game", "e4 e5 Nf3 Nc6 d4 exd4 Nxd4 Nf6 Nxc6 bxc6 e5 Qe7", 3),
    ("B07", "Pirc Defense", "e4 d6 d4 Nf6 Nc3 g6 f4 Bg7 Nf3 O-O", 2),
    ("A40", "Englund Gambit", "d4 e5 dxe5 Nc6 Nf3 Qe7 Bf4 Qb4+", 1),
    ("C00", "French Defense: Exchange", "e4 e6 d4 d5 exd5 exd5 Nf3 Nf6 Bd3 Bd6 O-O O-O", 2),
)

#: Time controls by speed category, as Lichess writes them.
TIME_CONTROLS: tuple[tuple[str, str, int], ...] = (
    ("UltraBullet", "15+0", 1),
    ("Bullet", "60+0", 10),
    ("Bullet", "120+1", 6),
    ("Blitz", "180+0", 14),
    ("Blitz", "180+2", 12),
    ("Blitz", "300+0", 10),
    ("Blitz", "300+3", 10),
    ("Rapid", "600+0", 8),
    ("Rapid", "600+5", 5),
    ("Rapid", "900+10", 5),
    ("Classical", "1800+0", 3),
    ("Classical", "1800+20", 3),
    ("Correspondence", "-", 2),
)

_NAMES = (
    "Magnus_fan",
    "tactician99",
    "EndgameEnjoyer",
    "knightmare",
    "Zugzwang_Zoe",
    "pawnstorm",
    "bishop_pair",
    "RookLift",
    "Caissa42",
    "sicilian_dragon",
    "GrünfeldGuru",
    "Jürgen_ß",
    "Ólafur",
    "queen_sac",
    "timeTrouble",
    "fianchetto",
    "PetrovFan",
    "KID_player",
    "blunder_bus",
    "opposite_colors",
    "deep_think",
    "backrank",
    "outpost_d5",
    "isolani",
    "minority_attack",
)


def _players(rng: random.Random) -> list[tuple[str, int, str | None]]:
    players = []
    for index in range(240):
        name = f"{rng.choice(_NAMES)}{index}"
        strong = index % 4 == 0
        rating = int(rng.gauss(2380, 140)) if strong else int(rng.gauss(1650, 330))
        rating = max(800, min(3100, rating))
        title = None
        if index % 37 == 5:
            title = "BOT"
        elif strong and rating > 2450 and index % 3 == 0:
            title = rng.choice(("GM", "IM", "FM", "CM"))
        players.append((name, rating, title))
    return players


def _pick_weighted(rng: random.Random, items: tuple[tuple, ...], weight_index: int) -> tuple:
    total = sum(item[weight_index] for item in items)
    pick = rng.uniform(0, total)
    for item in items:
        pick -= item[weight_index]
        if pick <= 0:
            return item
    return items[-1]


def _play(rng: random.Random, opening: str, length: int) -> tuple[chess.Board, list[str]]:
    board = chess.Board()
    sans: list[str] = []
    for san in opening.split():
        if len(sans) >= length:
            break
        move = board.parse_san(san)
        sans.append(board.san(move))
        board.push(move)
    while len(sans) < length and not board.is_game_over(claim_draw=False):
        moves = list(board.legal_moves)
        captures = [m for m in moves if board.is_capture(m)]
        move = rng.choice(captures) if captures and rng.random() < 0.6 else rng.choice(moves)
        sans.append(board.san(move))
        board.push(move)
    return board, sans


def _clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _movetext(
    rng: random.Random, sans: list[str], base: int, inc: int, evals: bool, result: str
) -> str:
    parts: list[str] = []
    clocks = [float(base or 86400), float(base or 86400)]
    score = rng.uniform(-0.3, 0.5)
    for ply, san in enumerate(sans):
        side = ply % 2
        clocks[side] = clocks[side] - rng.uniform(0, max(1.0, (base or 600) / 40)) + inc
        comment = []
        if evals:
            score += rng.gauss(0, 0.4)
            comment.append(f"[%eval {score:.2f}]")
        comment.append(f"[%clk {_clock(clocks[side])}]")
        number = f"{ply // 2 + 1}." if side == 0 else f"{ply // 2 + 1}..."
        parts.append(f"{number} {san} {{ {' '.join(comment)} }}")
    parts.append(result)
    return " ".join(parts)


def generate_month(month: str, games: int = GAMES_PER_MONTH, seed: int = 2024) -> str:
    """Return a month-like dump of PGN games as text, the same for the same arguments."""
    rng = random.Random(f"{seed}-{month}")
    players = _players(rng)
    start = datetime(int(month[:4]), int(month[5:]), 1)
    out: list[str] = []
    for number in range(games):
        when = start + timedelta(seconds=number * 1200 + rng.randrange(1200))
        speed, time_control, _ = _pick_weighted(rng, TIME_CONTROLS, 2)
        white, black = rng.sample(players, 2)
        if rng.random() < 0.35:  # strong players meet strong players more often
            strong = [p for p in players if p[1] >= 2200]
            white, black = rng.sample(strong, 2)
        eco, name, line, _ = _pick_weighted(rng, OPENINGS, 3)
        abandoned = rng.random() < 0.01
        length = 0 if abandoned else rng.randrange(14, 130)
        board, sans = _play(rng, line, length)
        if board.is_checkmate():
            result, termination = ("0-1" if board.turn == chess.WHITE else "1-0"), "Normal"
        elif board.is_game_over():
            result, termination = "1/2-1/2", "Normal"
        elif abandoned:
            result, termination = rng.choice(("1-0", "0-1")), "Abandoned"
        else:
            result = rng.choices(("1-0", "0-1", "1/2-1/2"), (46, 43, 11))[0]
            termination = "Time forfeit" if rng.random() < 0.2 and result != "1/2-1/2" else "Normal"
        white_elo, black_elo = str(white[1]), str(black[1])
        if rng.random() < 0.004:
            white_elo = "?"
        diff = rng.randrange(1, 12)
        white_diff, black_diff = {"1-0": (diff, -diff), "0-1": (-diff, diff)}.get(result, (0, 0))
        base, _, inc = time_control.partition("+")
        event = f"Rated {speed} game"
        if speed != "Correspondence" and rng.random() < 0.15:
            event = f"Rated {speed} tournament https://lichess.org/tournament/{rng.randrange(16**8):08x}"
        site = "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            for _ in range(8)
        )
        tags = [
            ("Event", event),
            ("Site", f"https://lichess.org/{site}"),
            ("Date", when.strftime("%Y.%m.%d")),
            ("Round", "-"),
            ("White", white[0]),
            ("Black", black[0]),
            ("Result", result),
            ("UTCDate", when.strftime("%Y.%m.%d")),
            ("UTCTime", when.strftime("%H:%M:%S")),
            ("WhiteElo", white_elo),
            ("BlackElo", black_elo),
            ("WhiteRatingDiff", f"{white_diff:+d}"),
            ("BlackRatingDiff", f"{black_diff:+d}"),
        ]
        if white[2]:
            tags.append(("WhiteTitle", white[2]))
        if black[2]:
            tags.append(("BlackTitle", black[2]))
        opening = name if sans[:4] == line.split()[:4] else "?"
        tags += [
            ("ECO", eco if opening != "?" else "?"),
            ("Opening", opening),
            ("TimeControl", time_control),
            ("Termination", termination),
        ]
        header = "\n".join(f'[{key} "{value}"]' for key, value in tags)
        evals = rng.random() < 0.08
        if sans:
            movetext = _movetext(
                rng,
                sans,
                int(base) if base.isdigit() else 0,
                int(inc) if inc.isdigit() else 0,
                evals,
                result,
            )
        else:
            movetext = result
        out.append(f"{header}\n\n{movetext}\n\n")
    return "".join(out)


def sample_path(month: str) -> Path:
    """Return the path of a bundled sample month."""
    return SAMPLE_DIR / f"lichess_sample_{month}.pgn.zst"


def write_samples(directory: Path = SAMPLE_DIR) -> list[Path]:
    """Regenerate the bundled sample months as framed zstd files, like the real dumps."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for month in SAMPLE_MONTHS:
        path = directory / f"lichess_sample_{month}.pgn.zst"
        write_framed_zstd(path, generate_month(month).encode("utf-8"), frame_size=256 * 1024)
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_samples():
        print(written_path)
