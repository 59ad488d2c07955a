"""Month leases in a bucket (moto's S3 server): two machines never build one month into one
store at once, a dead holder's lease ends, a run that lost its lease publishes nothing."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.errors import ChesspipeError
from pipelines.monthly.build import build_month
from pipelines.sources.object_lease import Holder, StoreLease
from tests.conftest import ROOT
from tests.loopback_http import LoopbackServer
from tests.moto_s3 import MotoServer
from tests.test_object_storage import SAMPLE, keys, moto, s3_env, settings  # noqa: F401

MONTH = "2024-01"


def lease_key(root: str, name: str) -> str:
    return f"{root}/.locks/{name}.lease"


def holder_of(moto: MotoServer, bucket: str, key: str) -> Holder | None:  # noqa: F811
    found = moto.objects(bucket, key).get(key)
    return None if found is None else Holder.parse(found)


def put_holder(moto: MotoServer, bucket: str, key: str, holder: Holder) -> None:  # noqa: F811
    moto.client().put_object(Bucket=bucket, Key=key, Body=holder.encode())


def other_machine(expires_in: float, run: str = "feedbeef") -> Holder:
    """A lease another machine's run holds (or held): its host and boot are not ours."""
    return Holder(run, "worker-7.example", "another-boot", 4242, time.time() + expires_in)


@pytest.mark.slow
def test_a_lease_is_one_runs_renewed_while_held_and_released(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
) -> None:
    bucket = moto.create_bucket("lease")
    root = f"s3://{bucket}/wh"
    with StoreLease(root, MONTH, what=f"month {MONTH}", seconds=1.5) as first:
        held = holder_of(moto, bucket, lease_key("wh", MONTH))
        assert held is not None and held.run == first.run and held.pid == os.getpid()
        time.sleep(2.5)  # past its first life: renewed meanwhile, so still held
        with (
            pytest.raises(ChesspipeError) as refused,
            StoreLease(root, MONTH, what=f"month {MONTH}", seconds=1.5),
        ):
            pass
        said = str(refused.value)
        assert "\n" not in said and f"month {MONTH} is held by another run: run {first.run}" in said
        renewed = holder_of(moto, bucket, lease_key("wh", MONTH))
        assert renewed is not None and renewed.expires > held.expires
        first.confirm()
        # Another name under the same root is another lease.
        with StoreLease(root, f"build-{MONTH}", what="the book", seconds=1.5):
            pass
    assert holder_of(moto, bucket, lease_key("wh", MONTH)) is None  # released
    with StoreLease(root, MONTH, what=f"month {MONTH}", seconds=1.5) as second:
        assert second.run != first.run


def test_a_dead_holders_lease_is_taken_over_and_a_live_ones_is_not(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
) -> None:
    bucket = moto.create_bucket("takeover")
    root, key = f"s3://{bucket}/wh", lease_key("wh", MONTH)
    # Another machine's live run: refused, whatever our own clock of its process says.
    put_holder(moto, bucket, key, other_machine(60))
    with pytest.raises(ChesspipeError, match="run feedbeef on worker-7.example"):
        StoreLease(root, MONTH, what="m").__enter__()
    # Its lease expired (the machine died): taken over.
    put_holder(moto, bucket, key, other_machine(-1))
    with StoreLease(root, MONTH, what="m") as lease:
        assert holder_of(moto, bucket, key) == Holder.parse(moto.objects(bucket, key)[key])
        assert holder_of(moto, bucket, key).run == lease.run  # type: ignore[union-attr]
    # A run of this machine whose process is gone: dead at once, though its lease is fresh.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    here = Holder.here("0ddba11", 60)
    put_holder(moto, bucket, key, Holder(here.run, here.host, here.boot, int(gone.stdout), 9e9))
    with StoreLease(root, MONTH, what="m") as lease:
        assert holder_of(moto, bucket, key).run == lease.run  # type: ignore[union-attr]


def test_a_run_that_lost_its_lease_publishes_nothing_and_leaves_the_successors(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
) -> None:
    bucket = moto.create_bucket("lost")
    root, key = f"s3://{bucket}/wh", lease_key("wh", MONTH)
    stalled = StoreLease(root, MONTH, what=f"month {MONTH}", seconds=60)
    with pytest.raises(ChesspipeError) as lost, stalled:
        # The machine stalled past its lease; another run took the month over meanwhile.
        put_holder(moto, bucket, key, other_machine(60, run="5ucce550"))
        stalled.confirm()
    said = str(lost.value)
    assert "\n" not in said and "lost its lease" in said and "run 5ucce550" in said
    assert "nothing was published" in said
    assert holder_of(moto, bucket, key).run == "5ucce550"  # type: ignore[union-attr]


def build_command(source: str, warehouse: str, books: str) -> list[str]:
    return [
        sys.executable, "-m", "pipelines", "build-month", source, "--month", MONTH,
        "--warehouse", warehouse, "--books", books, "--min-rating", "0", "--min-games", "2",
    ]  # fmt: skip


@pytest.fixture
def machines() -> Iterator[Path]:
    """Where the "machines" keep their folders: a short path (a unix socket's, which Prefect
    makes under TMPDIR, holds 107 bytes at most)."""
    folder = Path(tempfile.mkdtemp(prefix="cp-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def machine_env(home: Path) -> dict[str, str]:
    """A process that behaves as another machine: its own TMPDIR, HOME and PREFECT_HOME."""
    for folder in ("tmp", "home", "prefect"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    return dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        TMPDIR=str(home / "tmp"),
        HOME=str(home / "home"),
        PREFECT_HOME=str(home / "prefect"),
        PREFECT_API_URL="",
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
    )


def wait_for(condition: object, what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while not condition():  # type: ignore[operator]
        assert proc.poll() is None, f"the first run ended before {what}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)


@contextlib.contextmanager
def holding_build(
    moto: MotoServer,  # noqa: F811
    bucket: str,
    home: Path,
) -> Iterator[tuple[subprocess.Popen[bytes], threading.Event, list[str]]]:
    """A `build-month` of MONTH into the bucket, as a machine of its own, that has taken the
    month's leases and waits for its download until the event is set; killed if still running
    at the end. Yields the process, the event, and the command (to start another)."""
    gate = threading.Event()
    with LoopbackServer() as server:
        data = Path(SAMPLE.format(month=MONTH)).read_bytes()
        source = server.add_dump("/dumps", f"lichess_{MONTH}.pgn.zst", data, gate=gate)
        command = build_command(source, f"s3://{bucket}/wh", f"s3://{bucket}/books")
        proc = subprocess.Popen(
            command,
            env=machine_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            wait_for(
                lambda: holder_of(moto, bucket, lease_key("books", f"build-{MONTH}")),
                "took the leases",
                proc,
            )
            yield proc, gate, command
        finally:
            gate.set()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


@pytest.mark.slow
def test_two_machines_building_one_month_into_one_bucket_one_is_refused(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
    machines: Path,
) -> None:
    bucket = moto.create_bucket("two-machines")
    with holding_build(moto, bucket, machines / "a") as (first, gate, command):
        second = subprocess.run(
            command, env=machine_env(machines / "b"), capture_output=True, text=True, timeout=300
        )
        assert second.returncode != 0
        said = second.stderr.strip()
        assert "\n" not in said and "Traceback" not in said, said
        assert f"month {MONTH} in s3://{bucket}/wh is held by another run" in said, said
        gate.set()
        _, err = first.communicate(timeout=300)
        assert first.returncode == 0, err.decode()
    # The first run's month, whole, and no lease or staging left.
    assert sorted(moto.objects(bucket)) == sorted(keys(MONTH).values())


@pytest.mark.slow
def test_a_run_killed_mid_month_is_rebuilt_at_once_by_the_next(
    moto: MotoServer,  # noqa: F811
    s3_env: dict[str, str],  # noqa: F811
    machines: Path,
) -> None:
    bucket = moto.create_bucket("killed")
    warehouse, books = f"s3://{bucket}/wh", f"s3://{bucket}/books"
    source = SAMPLE.format(month=MONTH)
    # A run of another machine staged its files, then died: its lease expired.
    client = moto.client()
    dead = f"wh/.staging/{MONTH}-4242-feedbeef/part-0.parquet"
    client.put_object(Bucket=bucket, Key=dead, Body=b"half")
    put_holder(moto, bucket, lease_key("wh", MONTH), other_machine(-5))
    with holding_build(moto, bucket, machines / "a") as (killed, _, _):
        # Under its leases it removes the expired run's staging, then waits for its download.
        wait_for(lambda: dead not in moto.objects(bucket), "removed the dead staging", killed)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    left = holder_of(moto, bucket, lease_key("wh", MONTH))
    assert left is not None and left.pid == killed.pid  # the dead run's lease stays, fresh
    # The next run, on this machine: the killed run is provably dead, so no wait.
    manifest = build_month(source, MONTH, warehouse, books, settings())
    assert manifest.status == "built"
    assert sorted(moto.objects(bucket)) == sorted(keys(MONTH).values())
    record = json.loads(moto.objects(bucket)[keys(MONTH)["run manifest"]])
    assert record["book_sha256"] == manifest.book_sha256
