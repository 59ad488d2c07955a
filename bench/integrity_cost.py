"""What checking a month against its manifest costs readers, on a 1 GB month.

    python bench/integrity_cost.py [--gigabytes 1] [--repeat 5]

Every open compares the partition's size and modification time with its manifest's (a stat and
a JSON read); a book build hashes the whole partition (sha256) on threads beside its query.
The check does not look inside the file, so a file of random bytes of a real month's size
measures it. Prints the medians, in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from pipelines.warehouse.integrity import check_contents, check_opened, month_expected
from pipelines.warehouse.layout import manifest_path, partition_file

MONTH = "2024-01"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="integrity-") as folder:
        warehouse = Path(folder)
        part = partition_file(warehouse, MONTH)
        part.parent.mkdir(parents=True)
        size = int(args.gigabytes * (1 << 30))
        with open(part, "wb") as handle:
            block = os.urandom(1 << 24)
            for _ in range(size // len(block)):
                handle.write(block)
        import hashlib

        with open(part, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        found = part.stat()
        manifest_path(warehouse, MONTH).write_text(
            json.dumps(
                {
                    "output_sha256": digest,
                    "output_size": found.st_size,
                    "output_mtime_ns": found.st_mtime_ns,
                }
            )  # fmt: skip
        )
        opened, hashed_1, hashed_2 = [], [], []
        for _ in range(args.repeat):
            started = time.perf_counter()
            check_opened(warehouse, [MONTH])
            opened.append(time.perf_counter() - started)
            for threads, times in ((1, hashed_1), (2, hashed_2)):
                started = time.perf_counter()
                check_contents(warehouse, [month_expected(warehouse, MONTH)], threads=threads)
                times.append(time.perf_counter() - started)
        gib = found.st_size / (1 << 30)
        print(f"month of {gib:.2f} GiB, medians of {args.repeat} (file in the page cache):")
        print(f"  every open (size and time): {statistics.median(opened) * 1e3:.3f} ms")
        sha = statistics.median(hashed_1)
        print(f"  book build (sha256): {sha * 1e3:.0f} ms ({gib / sha:.2f} GiB/s)")
        print(f"  one month on 2 threads: {statistics.median(hashed_2) * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
