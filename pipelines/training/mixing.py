"""Shuffling a training file and interleaving several, in bounded memory, reproducibly by seed.

Shuffle: every record goes to one of K temporary bucket files chosen at random, then each bucket
in turn is read into memory, shuffled and written out, so memory holds one bucket. With buckets
chosen uniformly, every order of the records is equally likely.

Interleave: records are drawn from the inputs one at a time, from each with probability its
remaining records / all remaining records: every merge of the inputs is equally likely, each
input keeps its own order, and a source's share of any stretch of the output follows its size.
"""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError
from pipelines.progress import ReadCallback
from pipelines.training.files import (
    count_records,
    read_training,
    training_format,
    write_training,
)
from schemas.plain import PlainRecord

#: Records per bucket the automatic bucket count aims at (about 50 MB of memory in Python).
BUCKET_RECORDS = 250_000
MAX_BUCKETS = 512
#: Most buckets --buckets may ask for (each is an open file while records are dealt out).
MAX_BUCKETS_OPTION = 1000
#: Bytes per record, for estimating a file's records from its size (binpack: chained plies).
BYTES_PER_RECORD = {"plain": 90, "binpack": 2}


def bucket_count(path: Path) -> int:
    """Return how many buckets shuffling a file takes, from its size."""
    estimate = path.stat().st_size // BYTES_PER_RECORD[training_format(path)]
    return max(1, min(MAX_BUCKETS, -(-estimate // BUCKET_RECORDS)))


def _line(record: PlainRecord) -> str:
    return f"{record.fen}\t{record.move}\t{record.score}\t{record.ply}\t{record.result}\n"


def _record(line: str) -> PlainRecord:
    fen, move, score, ply, result = line.rstrip("\n").split("\t")
    return PlainRecord(fen, move, int(score), int(ply), int(result))


def shuffle_file(
    source: Path,
    out: Path,
    seed: int,
    buckets: int | None = None,
    *,
    progress: ReadCallback | None = None,
) -> dict[str, Any]:
    """Write the records of `source` to `out` in a random order fixed by `seed`; summarise.

    `progress` hears of the read that deals the records out (read_training).
    """
    started = time.monotonic()
    training_format(out)
    count = buckets if buckets is not None else bucket_count(source)
    if not 1 <= count <= MAX_BUCKETS_OPTION:
        raise ChesspipeError(f"buckets must be 1..{MAX_BUCKETS_OPTION}, not {count}")
    rng = random.Random(seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp:
        paths = [Path(tmp) / f"{i}.tsv" for i in range(count)]
        handles = [open(p, "w", encoding="ascii", newline="\n") for p in paths]  # noqa: SIM115
        try:
            for record in read_training(source, legal=True, progress=progress):
                handles[rng.randrange(count)].write(_line(record))
        finally:
            for handle in handles:
                handle.close()

        def shuffled() -> Iterator[PlainRecord]:
            for path in paths:
                lines = path.read_text(encoding="ascii").splitlines()
                path.unlink()
                rng.shuffle(lines)
                for line in lines:
                    yield _record(line)

        records = write_training(shuffled(), out, lambda n: f"{source}: a record")
    return {
        "input": str(source),
        "output": str(out),
        "records": records,
        "seed": seed,
        "buckets": count,
        "seconds": round(time.monotonic() - started, 3),
    }


def interleave_files(sources: Sequence[Path], out: Path, seed: int) -> dict[str, Any]:
    """Mix the records of `sources` into `out`, each drawn in proportion to what remains."""
    started = time.monotonic()
    if not sources:
        raise ChesspipeError("interleave needs at least one input")
    training_format(out)
    counts = [count_records(path) for path in sources]
    remaining = list(counts)
    total = sum(counts)
    streams = [read_training(path, legal=True) for path in sources]
    rng = random.Random(seed)
    taken = [0] * len(sources)
    last = [0]

    def mixed() -> Iterator[PlainRecord]:
        nonlocal total
        while total:
            draw = rng.randrange(total)
            index = 0
            while draw >= remaining[index]:
                draw -= remaining[index]
                index += 1
            record = next(streams[index], None)
            if record is None:
                raise ChesspipeError(f"{sources[index]}: fewer records than counted (changed?)")
            remaining[index] -= 1
            total -= 1
            taken[index] += 1
            last[0] = index
            yield record
        for path, stream in zip(sources, streams, strict=True):
            if next(stream, None) is not None:
                raise ChesspipeError(f"{path}: more records than counted (changed?)")

    def where(_: int) -> str:
        return f"{sources[last[0]]}: record {taken[last[0]]}"

    records = write_training(mixed(), out, where)
    return {
        "inputs": {str(path): n for path, n in zip(sources, counts, strict=True)},
        "output": str(out),
        "records": records,
        "seed": seed,
        "seconds": round(time.monotonic() - started, 3),
    }
