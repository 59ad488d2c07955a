"""Run one shell command and print its wall time, CPU time and memory as JSON.

Usage: python bench/measure.py 'COMMAND'
In-process benchmarks take `Clock` from here for the wall and CPU time of a block.
`cpu` and `max_rss_mb` come from the kernel for every process of the command that was waited
for (`max_rss_mb` is the largest single process's peak). `peak_total_rss_mb` samples, every
0.1 s, the summed resident memory of every process in the command's process group, worker
processes included.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
import time


class Clock:
    """Wall and CPU seconds of a block: CPU time gives the per-core rate on a busy machine."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def group_rss_mb(group: int) -> float:
    """Return the summed resident memory (MB) of the processes in a process group."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:  # field 5 (pgrp), counted after the command name
                total += int(fields[21]) * page  # field 24 (rss, pages)
        except (OSError, ValueError, IndexError):
            continue
    return total / 2**20


def main() -> int:
    command = sys.argv[1]
    started = time.perf_counter()
    proc = subprocess.Popen(
        ["bash", "-o", "pipefail", "-c", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    peak = 0.0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, group_rss_mb(proc.pid))
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        json.dumps(
            {
                "command": command,
                "returncode": proc.returncode,
                "wall": wall,
                "cpu": usage.ru_utime + usage.ru_stime,
                "max_rss_mb": usage.ru_maxrss / 1024,
                "peak_total_rss_mb": peak,
                "stdout": stdout[-4000:],
                "stderr": stderr[-2000:],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
