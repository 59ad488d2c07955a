"""Month locks: a killed run leaves its month unlocked, though a helper it forked lives on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipelines.errors import ChesspipeError

#: A run holding a month's lock forks a helper, and says the helper's pid once the helper runs:
#: a forked child lets go of its copy of the lock as it starts, not at the fork.
HOLD_LOCK_AND_FORK = """
import multiprocessing, sys, time
from pipelines.warehouse.locks import month_lock
def helper_runs(started):
    started.set()
    time.sleep(60)
with month_lock(sys.argv[1], "2024-01"):
    fork = multiprocessing.get_context("fork")
    started = fork.Event()
    helper = fork.Process(target=helper_runs, args=(started,))
    helper.start()
    if not started.wait(60):
        sys.exit("the helper did not start")
    print(helper.pid, flush=True)
    time.sleep(60)
"""


def test_a_killed_run_leaves_its_month_unlocked_though_its_helper_lives(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    from pipelines.warehouse.locks import month_lock

    root = Path(__file__).resolve().parent.parent
    run_ = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK_AND_FORK, str(tmp_path)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert run_.stdout is not None
    helper = int(run_.stdout.readline())
    try:
        with pytest.raises(ChesspipeError, match="another run"), month_lock(tmp_path, "2024-01"):
            pass
        run_.kill()
        run_.wait()
        os.kill(helper, 0)  # the forked helper still runs
        with month_lock(tmp_path, "2024-01"):  # yet the month is free
            pass
    finally:
        run_.kill()
        os.kill(helper, signal.SIGKILL)


#: A run holding a month's lock whose helper still holds a copy of it when the run dies: the
#: helper was forked and has not yet run (a loaded machine). It is modelled by a helper handed
#: the lock's descriptor that lets go of it only after a pause.
HOLD_LOCK_AND_HAND_IT_ON = """
import subprocess, sys, time
from pipelines.warehouse.locks import _HELD_LOCKS, month_lock
with month_lock(sys.argv[1], "2024-01"):
    (fd,) = _HELD_LOCKS
    helper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(1.0)"], pass_fds=(fd,)
    )
    print(helper.pid, flush=True)
    time.sleep(60)
"""


def test_a_killed_runs_helper_that_has_not_let_go_yet_is_waited_out(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    from pipelines.warehouse.locks import month_lock

    root = Path(__file__).resolve().parent.parent
    run_ = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK_AND_HAND_IT_ON, str(tmp_path)],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert run_.stdout is not None
    helper = int(run_.stdout.readline())
    lock_file = tmp_path / ".locks" / "2024-01.lock"
    try:
        assert lock_file.read_text() == f"{run_.pid}\n"  # the holder is named
        with pytest.raises(ChesspipeError, match="another run"), month_lock(tmp_path, "2024-01"):
            pass  # a live holder: busy at once
        run_.kill()
        run_.wait()
        os.kill(helper, 0)  # the helper still holds its copy
        started = time.monotonic()
        with month_lock(tmp_path, "2024-01"):  # the dead run's helper is waited out
            assert lock_file.read_text() == f"{os.getpid()}\n"
        assert time.monotonic() - started < 5.0
        assert lock_file.read_text() == ""
    finally:
        run_.kill()
        subprocess.run(["kill", "-9", str(helper)], stderr=subprocess.DEVNULL, check=False)
