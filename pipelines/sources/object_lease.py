"""Leases in object storage: one run at a time of a month in a bucket, whichever machine runs it.

A lock file under `$TMPDIR` holds on one machine only. A lease is an object beside the data it
guards, `ROOT/.locks/NAME.lease`, naming its holder (run id, host, pid) and when it expires:

- it is taken with a conditional put (`If-None-Match: *`): of two runs, the store lets one in;
- its holder renews it (a conditional put `If-Match` its last ETag) every third of its life, so
  a live run keeps it however long it takes, and a dead machine's lease ends within
  `lease_seconds()` (a holder on this machine whose pid is gone is dead at once);
- an expired lease is taken over with `If-Match` its ETag: of two runs that found it expired,
  one gets it;
- a holder that could not renew in time (a stalled machine) has lost it: `confirm()` fails
  before it publishes anything, so a run that lost its lease never overwrites its successor's.
- it is released with a conditional delete (`If-Match`), so a run never deletes another's.

S3 (and stores that speak its conditional requests: MinIO, R2, moto) has them; clocks of the
machines must agree to well within the lease's life (NTP does).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from contextlib import suppress
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError
from pipelines.sources.object_store import filesystem, join, reporting

#: How long a lease lasts without renewal, unless CHESSPIPE_LEASE_SECONDS says otherwise.
LEASE_SECONDS = 120.0

#: The protocols whose stores take conditional puts and deletes.
LEASE_PROTOCOLS = ("s3", "s3a")


def lease_seconds() -> float:
    """Return a lease's life: CHESSPIPE_LEASE_SECONDS, or LEASE_SECONDS."""
    text = os.environ.get("CHESSPIPE_LEASE_SECONDS", "")
    try:
        seconds = float(text) if text else LEASE_SECONDS
    except ValueError:
        raise ChesspipeError(f"CHESSPIPE_LEASE_SECONDS must be seconds, got {text!r}") from None
    if not seconds > 0:
        raise ChesspipeError(f"CHESSPIPE_LEASE_SECONDS must be positive, got {text!r}")
    return seconds


def supports_leases(url: str) -> bool:
    """Tell whether the store at `url` takes the conditional requests a lease needs."""
    return url.split("://", 1)[0] in LEASE_PROTOCOLS


@cache
def _boot_id() -> str:
    """This machine's boot (Linux's boot_id), so that a pid is compared on the same boot only."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


@dataclass(frozen=True)
class Holder:
    """What a lease object says: who holds it, and until when (seconds since the epoch)."""

    run: str
    host: str
    boot: str
    pid: int
    expires: float

    @classmethod
    def here(cls, run: str, seconds: float) -> Holder:
        return cls(run, socket.gethostname(), _boot_id(), os.getpid(), time.time() + seconds)

    @classmethod
    def parse(cls, data: bytes) -> Holder | None:
        """The holder a lease object names; None for an object that is no lease (taken over)."""
        try:
            found = json.loads(data)
            return cls(
                str(found["run"]),
                str(found["host"]),
                str(found["boot"]),
                int(found["pid"]),
                float(found["expires"]),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def encode(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    def is_dead(self) -> bool:
        """Tell whether the holder is provably gone: expired, or a pid gone on this boot."""
        if time.time() > self.expires:
            return True
        if self.host != socket.gethostname() or self.boot != _boot_id() or not self.boot:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except (PermissionError, OverflowError):
            return False
        return False

    def said(self) -> str:
        until = datetime.fromtimestamp(self.expires, UTC).strftime("%H:%M:%S")
        return f"run {self.run} on {self.host} (pid {self.pid}, lease renewed until {until} UTC)"


def read_lease(fs: Any, path: str) -> tuple[str, Holder | None] | None:
    """A lease object's ETag and holder (None for an object that is no lease), None if there is
    none. The ETag is asked first: a holder read after it is that version's or a later one,
    never an earlier one."""
    try:
        info = fs.info(path, refresh=True)
        data = fs.cat_file(path)
    except FileNotFoundError:
        return None
    return str(info["ETag"]), Holder.parse(data)


def _conditional_failure(exc: BaseException) -> bool:
    """Tell whether a store error is a failed condition (412, or 409 for a concurrent one)."""
    if isinstance(exc, FileExistsError):
        return True
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)
        if isinstance(response, dict):
            code = response.get("Error", {}).get("Code")
            return code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")
        seen = seen.__cause__
    return False


class StoreLease:
    """A lease on NAME under a store ROOT, taken on entering (or refused in one line),
    renewed in a thread while held, released on leaving. `run` names this holder."""

    def __init__(self, root: str, name: str, *, what: str, seconds: float | None = None) -> None:
        self.url = join(root, f".locks/{name}.lease")
        self.what = what
        self.seconds = lease_seconds() if seconds is None else seconds
        self.run = uuid.uuid4().hex[:8]
        self._fs, self._path = filesystem(self.url)
        self._bucket, self._key = self._path.split("/", 1)
        self._etag: str | None = None
        self._lost: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # The store's requests
    def _put(self, holder: Holder, **condition: str) -> str:
        answer: dict[str, Any] = self._fs.call_s3(
            "put_object", Bucket=self._bucket, Key=self._key, Body=holder.encode(), **condition
        )
        return str(answer["ETag"])

    def _read(self) -> tuple[str, Holder | None] | None:
        return read_lease(self._fs, self._path)

    def _take(self) -> None:
        for _ in range(3):  # the lease vanished between two requests: ask again
            mine = Holder.here(self.run, self.seconds)
            try:
                self._etag = self._put(mine, IfNoneMatch="*")
                return
            except OSError as exc:
                if not _conditional_failure(exc):
                    raise
            found = self._read()
            if found is None:
                continue
            etag, holder = found
            if holder is not None and holder.run == self.run:  # our put, retried by the client
                self._etag = etag
                return
            if holder is not None and not holder.is_dead():
                raise ChesspipeError(
                    f"{self.what} is held by another run: {holder.said()} "
                    f"(lease {self.url}); try again later"
                )
            try:
                self._etag = self._put(mine, IfMatch=etag)  # a dead run's: taken over
                return
            except OSError as exc:
                if not _conditional_failure(exc):
                    raise
                continue  # another run took it over first: see whose it is now
        raise ChesspipeError(f"{self.what}: could not take the lease {self.url}; try again later")

    def _renew(self) -> None:
        """Extend the lease; a failed condition means another run has taken it: lost."""
        with self._lock:
            if self._lost is not None or self._etag is None:
                return
            try:
                self._etag = self._put(Holder.here(self.run, self.seconds), IfMatch=self._etag)
            except OSError as exc:
                if _conditional_failure(exc):
                    found = self._read()
                    holder = found[1] if found is not None else None
                    by = holder.said() if holder is not None else "nobody holds it now"
                    self._lost = f"{self.what}: this run lost its lease {self.url} ({by})"
                else:
                    raise

    def _keep(self) -> None:
        deadline = time.monotonic() + self.seconds
        while not self._stop.wait(self.seconds / 3):
            try:
                self._renew()
                deadline = time.monotonic() + self.seconds
            except OSError:  # the store did not answer: try again at the next third
                if time.monotonic() > deadline:
                    with self._lock:
                        self._lost = f"{self.what}: the lease {self.url} could not be renewed"
            if self._lost is not None:
                return

    def confirm(self) -> None:
        """Renew the lease now, failing in one line if this run no longer holds it: call it
        right before publishing."""
        with reporting(self.url):
            self._renew()
        if self._lost is not None:
            raise ChesspipeError(f"{self._lost}; nothing was published")

    def __enter__(self) -> StoreLease:
        with reporting(self.url):
            self._take()
        self._thread = threading.Thread(target=self._keep, name="lease", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._lost is not None or self._etag is None:
                return
            # Only our own version: a successor's lease stays. Gone, taken over, or the store
            # away: it expires by itself.
            with suppress(OSError):
                self._fs.call_s3(
                    "delete_object", Bucket=self._bucket, Key=self._key, IfMatch=self._etag
                )
            self._etag = None
