"""The monthly build's fixed cost: `build-month` minus the same work by `ingest` + `book build`.

    python bench/build_month_fixed_cost.py [--rounds 3] [--before /path/to/other/checkout]
                                           [--persistent]

On the bundled sample month, each round runs, side by side in this order: `chesspipe
build-month` (the Prefect flow, its local server included), then `chesspipe ingest` and
`chesspipe book build` of the same month (the work without Prefect), into fresh folders. With
`--before`, the same build-month also runs from another checkout (e.g. the previous release);
with `--persistent`, also against one Prefect server started beforehand (PREFECT_API_URL), the
way to skip the server's start-up. Prints the median wall seconds of each and the fixed costs
(build-month minus the work) as JSON. The machine may be shared: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SAMPLE = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"
MONTH = "2024-01"


def timed(command: list[str], checkout: Path, env: dict[str, str] | None = None) -> float:
    """Run `chesspipe COMMAND` from a checkout; return its wall seconds."""
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(checkout)}
    if env is None:
        full.pop("PREFECT_API_URL", None)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pipelines", *command],
        cwd=checkout,
        env=full,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def build_month(folder: Path, checkout: Path, env: dict[str, str] | None = None) -> float:
    return timed(
        ["build-month", str(SAMPLE), "--month", MONTH, "--warehouse", str(folder / "wh"),
         "--books", str(folder / "books"), "--quiet"],
        checkout, env,
    )  # fmt: skip


def work(folder: Path) -> float:
    wh = str(folder / "wh")
    ingest = ["ingest", str(SAMPLE), "--month", MONTH, "--warehouse", wh, "--quiet"]
    book = ["book", "build", "--warehouse", wh, "--months", MONTH, "--out", str(folder / "b.bin")]
    return timed(ingest, ROOT) + timed(book, ROOT)


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    """Start a Prefect server (as `prefect server start` would, without its UI)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "error"],
        env={**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT_SERVER_ANALYTICS_ENABLED": "0"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/api"
    for _ in range(1200):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                return server, url
        except OSError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the Prefect server did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout's build-month, side by side")
    parser.add_argument("--persistent", action="store_true", help="also with a running server")
    args = parser.parse_args()
    times: dict[str, list[float]] = {"build_month": [], "work": []}
    if args.before:
        times["build_month_before"] = []
    server = None
    if args.persistent:
        server, url = start_server()
        times["build_month_persistent_server"] = []
    try:
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory(prefix="chesspipe-bench-") as tmp:
                folder = Path(tmp)
                times["build_month"].append(build_month(folder / "a", ROOT))
                times["work"].append(work(folder / "w"))
                if args.before:
                    before = build_month(folder / "b", args.before.resolve())
                    times["build_month_before"].append(before)
                if server is not None:
                    env = {"PREFECT_API_URL": url}
                    times["build_month_persistent_server"].append(
                        build_month(folder / "p", ROOT, env)
                    )
    finally:
        if server is not None:
            server.terminate()
            server.wait()
    medians = {name: round(statistics.median(values), 2) for name, values in times.items()}
    fixed = {
        f"fixed_cost_{name.removeprefix('build_month').strip('_') or 'now'}": round(
            value - medians["work"], 2
        )
        for name, value in medians.items()
        if name.startswith("build_month")
    }
    print(json.dumps({"rounds": args.rounds, "median_seconds": medians, **fixed}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
