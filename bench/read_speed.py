"""Reading games against decompression alone: the default filter on multi-frame dumps of real
games, side by side with `pzstd -d -p 2` on the same files, in one run.

    python bench/read_speed.py [--times 4,12] [--repeat 3] [--before CHECKOUT]

The shared real samples are concatenated `--times` times over and written as pzstd frames (as
Lichess writes its dumps). For each: `chesspipe ingest` with the default filter (both players
>= 2200, blitz or slower, no bots) on every core, and `pzstd -d -p 2` to /dev/null. Start-up
is apart in the margin: the time the bigger input adds over the smaller one, chesspipe's
against pzstd's (the share of decompression's throughput chesspipe reads at). With --before,
another checkout's chesspipe is measured beside, taking turns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.run_benchmarks import PY, WORK, measure  # noqa: E402


def real_text(lichess: Path) -> bytes:
    """The shared samples' games, decompressed, one after the other."""
    import zstandard

    parts = []
    for path in sorted(lichess.glob("standard-*.pgn.zst")):
        with path.open("rb") as handle:
            reader = zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True)
            parts.append(reader.read().strip(b"\n") + b"\n\n")
    return b"".join(parts)


def pzstd_dump(text: bytes, times: int) -> Path:
    """The text `times` over, written by pzstd (many frames)."""
    out = WORK / f"real-x{times}.pgn.zst"
    if not out.exists():
        plain = WORK / f"real-x{times}.pgn"
        with plain.open("wb") as handle:
            for _ in range(times):
                handle.write(text)
        subprocess.run(
            ["pzstd", "-q", "-3", "-p", "2", "-f", str(plain), "-o", str(out)], check=True
        )
        plain.unlink()
    return out


def ingest(dump: Path, warehouse: Path, checkout: Path) -> str:
    """The command line of a default-filter ingest of `dump` by the chesspipe of `checkout`."""
    return (
        f"cd '{checkout}' && PYTHONPATH='{checkout}' {PY} -m pipelines ingest '{dump}' "
        f"--month 2000-01 --warehouse '{warehouse}' --quiet --force --allow-empty > /dev/null"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--times", default="4,12")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout, measured beside")
    shared = Path(os.environ.get("CHESSPIPE_SHARED_DATA", ROOT.parent / "shared" / "data"))
    parser.add_argument("--lichess", type=Path, default=shared / "lichess")
    args = parser.parse_args()
    if shutil.which("pzstd") is None:
        raise SystemExit("pzstd is needed (Debian package zstd)")
    WORK.mkdir(exist_ok=True)
    text = real_text(args.lichess)
    figures: dict = {}
    for times in (int(t) for t in args.times.split(",")):
        dump = pzstd_dump(text, times)
        commands = {
            "pzstd": f"pzstd -d -p 2 -c -q '{dump}' > /dev/null",
            "chesspipe": ingest(dump, WORK / f"read-x{times}", ROOT),
        }
        if args.before is not None:
            commands["before"] = ingest(dump, WORK / f"read-x{times}-before", args.before)
        runs = measure(commands, args.repeat)
        figures[times] = {name: run["wall"] for name, run in runs.items()}  # medians
        figures[times]["cpu"] = {name: run["cpu"] for name, run in runs.items()}
        figures[times]["pgn_mb"] = round(len(text) * times / 2**20)
    small, big = sorted(figures)
    margin = {
        name: round((figures[big]["pzstd"] - figures[small]["pzstd"])
                    / (figures[big][name] - figures[small][name]), 3)
        for name in figures[big] if name not in ("pzstd", "cpu", "pgn_mb")
    }  # fmt: skip
    result = {"by_times": figures, "margin_share_of_pzstd": margin}
    (WORK / "read_speed.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
