"""A monthly build stops when asked: promptly, leaving the month as it was and no helper behind.

Each case runs the real `chesspipe build-month` (or `backfill`) in a session of its own,
reading the sample month from a slow local HTTP server, and stops it mid-ingest: Ctrl-C to its
process group, SIGTERM to the command alone, or SIGKILL to the command alone. Every process
descended from the command (the Prefect server, the fork server, the counting and worker
processes) is recorded from /proc while it runs, and must be gone once it ended.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipelines.warehouse.layout import manifest_path, partition_file
from pipelines.warehouse.locks import month_lock
from tests.conftest import ROOT, run_cli
from tests.loopback_http import LoopbackServer

SAMPLE = ROOT / "data" / "sample" / "lichess_sample_2024-01.pgn.zst"
MONTH = "2024-01"
#: A hang check, not a timing assertion: today's stop takes minutes.
PROMPT = 30.0


def _stat(pid: int) -> tuple[int, str, int] | None:
    """Return (parent pid, state, start time) of a process, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], int(fields[19])


def descendants(root: int) -> set[tuple[int, int]]:
    """Return (pid, start time) of every live process whose parent chain leads to `root`."""
    parents: dict[int, tuple[int, str, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            parents[int(entry)] = stat
    found = set()
    for pid, (ppid, state, started) in parents.items():
        chain, seen = ppid, 0
        while chain > 1 and seen < 64:
            if chain == root:
                if state != "Z":
                    found.add((pid, started))
                break
            chain, seen = parents.get(chain, (0, "", 0))[0], seen + 1
    return found


def alive(processes: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Return those of `processes` still running (same pid and start time, not a zombie)."""
    left = set()
    for pid, started in processes:
        stat = _stat(pid)
        if stat is not None and stat[2] == started and stat[1] != "Z":
            left.add((pid, started))
    return left


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command_name", "target", "signum", "status"),
    [
        ("build-month", "group", signal.SIGINT, 130),  # Ctrl-C in a terminal
        ("build-month", "command", signal.SIGTERM, 143),
        ("build-month", "command", signal.SIGKILL, -signal.SIGKILL),
        # A month ingesting on a thread cannot be interrupted: the command ends anyway (while
        # the flow runs, the SIGTERM meets Prefect's handler).
        ("backfill", "group", signal.SIGTERM, 143),
    ],
)
def test_a_monthly_build_stops_when_asked(
    tmp_path: Path, command_name: str, target: str, signum: signal.Signals, status: int
) -> None:
    warehouse, books = tmp_path / "wh", tmp_path / "books"
    # A published month the stopped (forced) rebuild must leave as it was.
    run_cli("ingest", str(SAMPLE), "--month", MONTH, "--warehouse", str(warehouse), "--quiet")
    published = partition_file(warehouse, MONTH).read_bytes()
    manifest = manifest_path(warehouse, MONTH).read_bytes()
    data = SAMPLE.read_bytes()
    with LoopbackServer() as server:
        url = server.add_dump("/2024-01", SAMPLE.name, data, chunk=8192, delay=0.25)
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        env.pop("PREFECT_API_URL", None)
        where = ["--warehouse", str(warehouse), "--books", str(books), "--force", "--quiet"]
        if command_name == "build-month":
            what = ["build-month", url, "--month", MONTH]
        else:
            what = ["backfill", "--months", f"{MONTH}..{MONTH}", "--source", url]
        command = subprocess.Popen(
            [sys.executable, "-m", "pipelines", *what, *where],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        seen: set[tuple[int, int]] = set()
        try:
            deadline = time.monotonic() + 300
            # Mid-ingest: the game file is being read, well before its end.
            while server.bytes_sent < 64 * 1024 and command.poll() is None:
                assert time.monotonic() < deadline, "the build never started reading"
                seen |= descendants(command.pid)
                time.sleep(0.1)
            assert command.poll() is None, command.communicate()
            seen |= descendants(command.pid)
            assert seen, "no helper process seen"
            asked = time.monotonic()
            if target == "group":
                os.killpg(command.pid, signum)
            else:
                os.kill(command.pid, signum)
            _, err = command.communicate(timeout=PROMPT)
            stopped = time.monotonic() - asked
        finally:
            if command.poll() is None:
                os.killpg(command.pid, signal.SIGKILL)
                command.wait()
        assert command.returncode == status, err
        assert stopped < PROMPT
        if signum != signal.SIGKILL:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("chesspipe: "), err
        # Nothing it started outlives it (the kernel takes a moment after a SIGKILL).
        wait_until = time.monotonic() + 10
        while alive(seen) and time.monotonic() < wait_until:
            time.sleep(0.1)
        assert not alive(seen), f"left running: {sorted(alive(seen))}"
    # The month is as it was, no book was published, and the month's locks are free.
    assert partition_file(warehouse, MONTH).read_bytes() == published
    assert manifest_path(warehouse, MONTH).read_bytes() == manifest
    assert not list(books.glob("lichess-*"))
    with month_lock(warehouse, MONTH), month_lock(books, f"build-{MONTH}", clean=False):
        pass
    if signum != signal.SIGKILL:  # what a SIGKILL leaves, the month's next run removes
        assert not list((warehouse / ".staging").glob("*"))
        assert not list((books / ".staging").glob("*"))


#: A command whose work turns the stop it is sent into an error of another kind, as pydantic
#: wraps one in a PydanticSerializationError during Prefect's start-up.
WRAPPED_STOP = """
import os, signal, sys
import pipelines.commands.build_month as build_month
from pipelines.commands.stopping import stop_on_signals

def run(args):
    stop_on_signals()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
    except BaseException as exc:
        raise RuntimeError(f"Error calling function: {exc}") from None
    return 0

build_month.run = run
from pipelines.cli import main
sys.exit(main(["build-month", "x.pgn", "--month", "2024-01", "--warehouse", "w", "--books", "b"]))
"""


def test_a_stop_a_library_wraps_still_ends_in_one_line(tmp_path: Path) -> None:
    """SIGTERM during build-month's Prefect start-up ended in exit 1 and a 43-line traceback
    (a PydanticSerializationError around the stop): any error after a stop is asked says
    that the command stopped, with the signal's exit status."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", WRAPPED_STOP], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 143, proc.stderr
    assert proc.stderr == "chesspipe: stopped by SIGTERM\n"
