"""A book over many distinct months: time, CPU and peak memory as the months grow.

    python bench/book_months.py [--steps 1,4,16,48] [--rows 1000000] [--limits default,256MB]
                                [--previous CHECKOUT] [--bucket] [--dask 1,2]

Writes generated months of about ROWS statistics rows each (bench/book_build.py's shape: a few
popular positions, a long tail; half of each month's positions shared by every month, half its
own, so distinct (key, move) pairs grow with the months) in the warehouse layout, sorted by key
in row groups as ingest writes them, each with its manifest. Then, for each step of months and
each memory limit, runs `chesspipe book build` through bench/measure.py (this version and, with
`--previous`, an earlier checkout in the same run) and checks that every run wrote the same
bytes. `--bucket` also builds from a moto S3 server holding the same months; `--dask 1,2` builds
on a local Dask cluster of that many worker processes (`--dask-address`). Prints a JSON line per
run and the growth exponent of time and memory over the steps.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.book_build import month_of_rows  # noqa: E402
from pipelines.warehouse.layout import ROW_GROUP_ROWS, manifest_path, partition_file  # noqa: E402
from schemas.move_stats import MOVE_STATS_SCHEMA  # noqa: E402

SHARED_SEED = 10_000


def month_table(rows: int, index: int) -> pa.Table:
    """A month's statistics: half its positions shared with every month, half its own, each
    row's counts its own, sorted by key as ingest writes them."""
    rng = np.random.default_rng(index)
    names = {f"{c}_sum": c for c in ("games", "wins", "draws", "losses", "rating_sum")}
    names["first_play_min"] = "first_play"
    names["white_to_move_min"] = "white_to_move"
    parts = []
    for part in (month_of_rows(rows // 2, SHARED_SEED), month_of_rows(rows - rows // 2, index + 1)):
        part = part.rename_columns([names.get(n, n) for n in part.column_names])
        scale = pa.array(rng.integers(1, 4, part.num_rows).astype(np.uint64))
        for name in ("games", "wins", "draws", "losses", "rating_sum"):
            at = part.column_names.index(name)
            part = part.set_column(at, name, pc.multiply(part.column(name), scale))
        parts.append(part)
    table = pa.concat_tables(parts)
    # A shared position's rows and a month's own can meet: one row per group, as ingest writes.
    keys = ["key", "move", "speed", "rating_band", "rating_group"]
    grouped = table.group_by(keys).aggregate(
        [(n, "sum") for n in ("games", "wins", "draws", "losses", "rating_sum")]
        + [("first_play", "min"), ("white_to_move", "min")]
    )
    grouped = grouped.rename_columns([names.get(n, n) for n in grouped.column_names])
    grouped = grouped.select([f.name for f in MOVE_STATS_SCHEMA]).cast(MOVE_STATS_SCHEMA)
    return grouped.sort_by([("key", "ascending"), ("move", "ascending")])


def write_month(warehouse: Path, month: str, table: pa.Table) -> None:
    path = partition_file(warehouse, month)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", row_group_size=ROW_GROUP_ROWS)
    stat = path.stat()
    manifest = {
        "month": month,
        "rows": table.num_rows,
        "output_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "output_size": stat.st_size,
        "output_mtime_ns": stat.st_mtime_ns,
        "settings": {"plies": 20},
    }
    manifest_path(warehouse, month).write_text(json.dumps(manifest))


def months_of(count: int) -> list[str]:
    return [f"{2000 + n // 12}-{n % 12 + 1:02d}" for n in range(count)]


def measure(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    line = " ".join(f"'{part}'" for part in command)
    out = subprocess.run(
        [sys.executable, str(HERE / "measure.py"), line],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout)
    if result["returncode"] != 0:
        raise SystemExit(f"{line} failed: {result['stderr'][-2000:]}")
    return result


def exponent(points: list[tuple[float, float]]) -> float | None:
    """The slope of log(y) over log(x): how y grows with x."""
    usable = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(usable) < 2:
        return None
    xs, ys = zip(*usable, strict=True)
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in usable) / sum((x - mx) ** 2 for x in xs)


def moto_server(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """moto's S3 server in a process of its own on a free port; returns it and its URL."""
    import socket
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    folder.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
            return server, url
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("moto's server did not start")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", default="1,4,16,48")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--limits", default="default,256MB")
    parser.add_argument("--previous", type=Path)
    parser.add_argument("--bucket", action="store_true")
    parser.add_argument("--dask", default="")
    parser.add_argument("--work", type=Path, default=HERE / "work" / "book-months")
    args = parser.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    limits = args.limits.split(",")
    warehouse = args.work / "wh"
    months = months_of(max(steps))
    made = time.monotonic()
    for n, month in enumerate(months):
        if not manifest_path(warehouse, month).exists():
            write_month(warehouse, month, month_table(args.rows, n))
    rows = {m: json.loads(manifest_path(warehouse, m).read_text())["rows"] for m in months}
    print(json.dumps({"made_seconds": round(time.monotonic() - made, 1)}), flush=True)
    versions = {"now": ROOT}
    if args.previous:
        versions["previous"] = args.previous
    stores = {"local": str(warehouse)}
    stack: list[subprocess.Popen[bytes]] = []
    env_base = dict(os.environ)
    if args.bucket:
        server, endpoint = moto_server(args.work / "moto")
        stack.append(server)
        aws = {
            "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }  # fmt: skip
        env_base.update(aws)
        os.environ.update(aws)  # (the Dask workers this process starts read the bucket too)
        import boto3

        client = boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id="bench",
            aws_secret_access_key="bench", region_name="us-east-1",
        )  # fmt: skip
        client.create_bucket(Bucket="book-months")
        for path in sorted((warehouse / "move_stats").rglob("*")):
            if path.is_file():
                key = f"wh/{path.relative_to(warehouse).as_posix()}"
                client.upload_file(str(path), "book-months", key)
        stores["bucket"] = "s3://book-months/wh"
    cluster = None
    results: list[dict[str, Any]] = []
    try:
        books: dict[int, set[str]] = {}
        for version, checkout in versions.items():
            env = dict(env_base, PYTHONPATH=str(checkout))
            for store, where in stores.items():
                if version != "now" and store != "local":
                    continue  # (the previous version reads local folders only)
                for limit in limits:
                    for step in steps:
                        out = args.work / f"{version}-{store}-{limit}-{step}.bin"
                        chosen = f"{months[0]}..{months[step - 1]}"
                        command = [sys.executable, "-m", "pipelines", "book", "build",
                                   "--warehouse", where, "--months", chosen, "--out", str(out)]  # fmt: skip
                        if limit != "default":
                            command += ["--memory-limit", limit]
                        result = measure(command, env)
                        digest = hashlib.sha256(out.read_bytes()).hexdigest()
                        books.setdefault(step, set()).add(digest)
                        row = {
                            "version": version, "store": store, "limit": limit,
                            "months": step, "rows": sum(rows[m] for m in months[:step]),
                            "wall": result["wall"], "cpu": result["cpu"],
                            "peak_rss_mb": result["peak_total_rss_mb"],
                            "entries": out.stat().st_size // 16,
                        }  # fmt: skip
                        results.append(row)
                        print(json.dumps(row), flush=True)
        for workers in [int(w) for w in args.dask.split(",") if w]:
            from distributed import LocalCluster

            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None)  # fmt: skip
            env = dict(env_base, PYTHONPATH=str(ROOT))
            for store, where in stores.items():
                step = max(steps)
                out = args.work / f"dask-{workers}-{store}.bin"
                command = [sys.executable, "-m", "pipelines", "book", "build",
                           "--warehouse", where, "--months", f"{months[0]}..{months[step - 1]}",
                           "--out", str(out), "--dask-address", cluster.scheduler_address]  # fmt: skip
                result = measure(command, env)
                books.setdefault(step, set()).add(hashlib.sha256(out.read_bytes()).hexdigest())
                row = {"version": "now", "store": store, "dask_workers": workers,
                       "months": step, "wall": result["wall"], "cpu": result["cpu"],
                       "peak_rss_mb": result["peak_total_rss_mb"]}  # fmt: skip
                results.append(row)
                print(json.dumps(row), flush=True)
            cluster.close()
            cluster = None
        same = all(len(found) == 1 for found in books.values())
        print(json.dumps({"same_bytes_every_run": same}))
        for version in versions:
            for store in stores:
                for limit in limits:
                    chosen = [r for r in results if r.get("limit") == limit
                              and r["version"] == version and r["store"] == store]  # fmt: skip
                    if len(chosen) < 2:
                        continue
                    print(json.dumps({
                        "version": version, "store": store, "limit": limit,
                        "time_exponent": round(exponent([(r["rows"], r["wall"]) for r in chosen]) or 0, 3),
                        "rss_exponent": round(exponent([(r["rows"], r["peak_rss_mb"]) for r in chosen]) or 0, 3),
                    }))  # fmt: skip
        return 0 if same else 1
    finally:
        if cluster is not None:
            cluster.close()
        for server in stack:
            server.kill()
            server.wait()
        shutil.rmtree(args.work / "moto", ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
