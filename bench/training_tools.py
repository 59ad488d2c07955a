"""Records per second and memory of `chesspipe training filter|rescore|dedupe|to-pgn`.

    python bench/training_tools.py [--copies 10] [--syzygy DIR] [--stockfish-tools PATH]

Input: Stockfish's fixture (`games-eval.plain` and the `games-eval.binpack` Stockfish's tools
wrote: 9,958 records of whole games) repeated `--copies` times. Each tool runs as a process of
its own through `bench/measure.py` (wall and CPU seconds, peak memory), one after another in
the same run, beside `training convert` of the same input for scale.

With `--stockfish-tools PATH`, a Stockfish built from the `tools` branch (Debian's is built
without them; bench/RESULTS.md says how it was built), its `convert` runs on the same inputs
both ways beside `training convert`, and the outputs are compared: the `.binpack` each writes
from the `.plain` must be the same bytes, and so must the `.plain` each writes back. Then the
`.binpack` files `training rescore` and `training filter` write are read back by Stockfish's
`convert`, which must give the `.plain` chesspipe's `convert` gives.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"


def measure(command: list[str]) -> dict[str, float]:
    line = " ".join(shlex.quote(word) for word in command)
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "measure.py"), line],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    if result.get("returncode", 0):
        raise SystemExit(f"failed: {line}\n{result}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--syzygy", type=Path, default=SHARED / "syzygy" / "3-4")
    parser.add_argument("--stockfish", type=Path, default=SHARED / "stockfish")
    parser.add_argument("--stockfish-tools", type=Path, help="a Stockfish built with its tools")
    args = parser.parse_args()
    chesspipe = [sys.executable, "-m", "pipelines", "training"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = {}
        for kind in ("plain", "binpack"):
            data = (args.stockfish / f"games-eval.{kind}").read_bytes()
            path = work / f"in.{kind}"
            path.write_bytes(data * args.copies)
            inputs[kind] = path
        records = 9958 * args.copies
        steps = []
        for kind, source in inputs.items():
            out = str(work / f"out.{kind}")
            steps += [
                (f"convert {kind} -> plain", [*chesspipe, "convert", str(source), out + ".c.plain"]),
                (f"filter {kind} (--filtered --wld-filtered)",
                 [*chesspipe, "filter", str(source), out, "--filtered", "--wld-filtered"]),
                (f"rescore {kind} (3-4 pieces)",
                 [*chesspipe, "rescore", str(source), out, "--syzygy", str(args.syzygy)]),
                (f"dedupe {kind}", [*chesspipe, "dedupe", str(source), out]),
                (f"to-pgn {kind}", [*chesspipe, "to-pgn", str(source), out + ".pgn"]),
            ]  # fmt: skip
        print(f"{records:,} records ({args.copies} copies of the fixture); "
              f".plain {inputs['plain'].stat().st_size:,} bytes, "
              f".binpack {inputs['binpack'].stat().st_size:,} bytes")  # fmt: skip
        if args.stockfish_tools is not None:
            steps = _conversions(args.stockfish_tools, chesspipe, inputs, work)
        print("| tool | records/s (CPU) | records/s (wall) | peak memory |")
        print("|---|---|---|---|")
        for name, command in steps:
            got = measure(command)
            print(f"| {name} | {records / got['cpu']:,.0f} | {records / got['wall']:,.0f} | "
                  f"{got['max_rss_mb']:.0f} MB |", flush=True)  # fmt: skip
        if args.stockfish_tools is not None:
            for ours, theirs in (("c.binpack", "s.binpack"), ("c.plain", "s.plain")):
                same = (work / ours).read_bytes() == (work / theirs).read_bytes()
                print(f"{ours} and {theirs}: {'the same bytes' if same else 'DIFFERENT'}")
                if not same:
                    raise SystemExit(1)
            _tools_read_ours(args.stockfish_tools, chesspipe, inputs["binpack"], work, args.syzygy)


def _conversions(
    tools: Path, chesspipe: list[str], inputs: dict[str, Path], work: Path
) -> list[tuple[str, list[str]]]:
    """Stockfish's `convert` and chesspipe's, both ways, taking turns on the same inputs (the
    `.binpack` back to `.plain` is each one's own `.binpack`, so that both read the same)."""
    plain, binpack = inputs["plain"], inputs["binpack"]
    sf = [str(tools.resolve())]
    return [
        ("Stockfish convert plain -> binpack", [*sf, "convert", str(plain), str(work / "s.binpack")]),
        ("chesspipe convert plain -> binpack",
         [*chesspipe, "convert", str(plain), str(work / "c.binpack")]),
        ("Stockfish convert binpack -> plain", [*sf, "convert", str(binpack), str(work / "s.plain")]),
        ("chesspipe convert binpack -> plain",
         [*chesspipe, "convert", str(binpack), str(work / "c.plain")]),
    ]  # fmt: skip


def _tools_read_ours(
    tools: Path, chesspipe: list[str], binpack: Path, work: Path, syzygy: Path
) -> None:
    """The `.binpack` files chesspipe's rescore and filter write (chains rescored, chains
    broken where records were dropped), read back by Stockfish's `convert`: the `.plain` it
    writes must be the bytes of chesspipe's own `convert` of them."""
    made = {
        "rescore": [*chesspipe, "rescore", str(binpack), str(work / "rescored.binpack"),
                    "--syzygy", str(syzygy)],
        "filter": [*chesspipe, "filter", str(binpack), str(work / "filtered.binpack"),
                   "--filtered", "--early-fen-skipping", "16"],
    }  # fmt: skip
    for name, command in made.items():
        subprocess.run(command, check=True, capture_output=True)
        out = Path(command[6])
        theirs, ours = out.with_suffix(".s.plain"), out.with_suffix(".c.plain")
        subprocess.run([str(tools.resolve()), "convert", str(out), str(theirs)], check=True,
                       capture_output=True)  # fmt: skip
        subprocess.run([*chesspipe, "convert", str(out), str(ours)], check=True,
                       capture_output=True)  # fmt: skip
        same = theirs.read_bytes() == ours.read_bytes()
        lines = theirs.read_bytes().count(b"\ne\n")
        print(
            f"Stockfish's convert of chesspipe's {name} output ({lines:,} records): "
            f"{'the bytes of chesspipe convert' if same else 'DIFFERENT'}"
        )
        if not same or not lines:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
