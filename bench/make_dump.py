"""Make a large month-like dump for benchmarks from real games, with a realistic filter mix.

Each copy of a real game gets fresh ratings (so that about 2% of all games pass the default
filter), a fresh Site and nothing else changed, and the text is written as pzstd frames, like the
Lichess dumps. Usage: python bench/make_dump.py OUT.pgn.zst --mb 300 [--seed 1]
"""

from __future__ import annotations

import argparse
import io
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import zstandard

ELO = re.compile(rb'\[(White|Black)Elo "[^"]*"\]')
SITE = re.compile(rb'\[Site "[^"]*"\]')


def real_games(folder: Path) -> list[bytes]:
    """Return the real games of the shared samples, one bytes object each."""
    games: list[bytes] = []
    for path in sorted(folder.glob("*.pgn.zst")):
        reader = zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(path.read_bytes()), read_across_frames=True
        )
        text = reader.read().strip(b"\n")
        games += [
            (g if g.startswith(b"[") else b"[" + g).strip(b"\n") + b"\n\n"
            for g in text.split(b"\n\n[")
        ]
    return games


def rated(game: bytes, rng: random.Random) -> bytes:
    strong = rng.random() < 0.025
    ratings = iter(
        [rng.randrange(2200, 2800) if strong else rng.randrange(800, 2300) for _ in range(2)]
    )
    game = ELO.sub(
        lambda m: b"[" + m.group(1) + b'Elo "' + str(next(ratings)).encode() + b'"]', game, count=2
    )
    return SITE.sub(
        b'[Site "https://lichess.org/' + f"{rng.getrandbits(48):012x}".encode() + b'"]',
        game,
        count=1,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=int, default=300, help="decompressed size in MB")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--lichess",
        type=Path,
        default=Path(__file__).resolve().parents[2] / "shared" / "data" / "lichess",
    )
    args = parser.parse_args()
    games = real_games(args.lichess)
    if not games:
        print(f"no games under {args.lichess}", file=sys.stderr)
        return 1
    rng = random.Random(args.seed)
    pzstd = shutil.which("pzstd")
    if pzstd is None:
        print("pzstd (Debian package zstd) is needed", file=sys.stderr)
        return 1
    target = args.mb * 1_000_000
    tmp = args.out.with_name(args.out.name + ".tmp")
    with open(tmp, "wb") as out:
        proc = subprocess.Popen(
            [pzstd, "-q", "-3", "-p", "2", "-c"], stdin=subprocess.PIPE, stdout=out
        )
        assert proc.stdin is not None
        written = 0
        batch: list[bytes] = []
        while written < target:
            game = rated(rng.choice(games), rng)
            batch.append(game)
            written += len(game)
            if len(batch) >= 5000:
                proc.stdin.write(b"".join(batch))
                batch = []
        proc.stdin.write(b"".join(batch))
        proc.stdin.close()
        if proc.wait() != 0:
            return 1
    tmp.replace(args.out)
    print(
        f"{args.out}: {written / 1e6:.0f} MB of PGN, "
        f"{args.out.stat().st_size / 1e6:.1f} MB compressed"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
