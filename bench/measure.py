"""Run one shell command and print its wall time, CPU time and peak memory as JSON.

Usage: python bench/measure.py 'COMMAND'
CPU time and peak memory cover every process of the command that was waited for; peak memory
is the largest single process's (the kernel's ru_maxrss), not the sum.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time


def main() -> int:
    command = sys.argv[1]
    started = time.perf_counter()
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True)
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
                "stdout": proc.stdout[-4000:],
                "stderr": proc.stderr[-2000:],
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
