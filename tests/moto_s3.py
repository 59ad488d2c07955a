"""A real S3 endpoint for tests: moto's standalone server in a process of its own, on loopback.

It records every request it is sent (moto's recorder), so a test can tell the order in which a
run wrote its objects; `objects` reads the bucket with boto3, past any client cache.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from tests.serving import free_port

REGION = "us-east-1"


@dataclass(frozen=True)
class Request:
    """One request the server was sent: method, object key (bucket first), copy source."""

    method: str
    key: str
    copy_source: str | None

    @property
    def writes(self) -> bool:
        return self.method in ("PUT", "POST", "DELETE")


class MotoServer:
    """`python -m moto.server` bound to 127.0.0.1 on a free port, stopped with the block."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.recording = folder / "moto_recording"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """What a client of this endpoint needs: the endpoint and (any) credentials."""
        return {
            "AWS_ENDPOINT_URL": self.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def __enter__(self) -> MotoServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, MOTO_RECORDER_FILEPATH=str(self.recording))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            cwd=self.folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(self.folder / "moto.log").open("wb"),
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=2).close()
                return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "moto server did not start: " + (self.folder / "moto.log").read_text()
                    ) from None
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def _post(self, path: str) -> None:
        request = urllib.request.Request(f"{self.url}{path}", method="POST", data=b"")
        urllib.request.urlopen(request, timeout=10).close()

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name=REGION,
        )

    @contextlib.contextmanager
    def fresh_clients(self) -> Iterator[None]:
        """fsspec keeps one S3 filesystem per set of options, whatever the environment says:
        forget them before and after a block whose environment names this server (another
        module's server, on another port, may have been the one this process reached)."""
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()
        try:
            yield
        finally:
            s3fs.S3FileSystem.clear_instance_cache()

    def create_bucket(self, bucket: str) -> str:
        self.client().create_bucket(Bucket=bucket)
        return bucket

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object of a bucket (under a prefix) and its bytes, read now."""
        client = self.client()
        found: dict[str, bytes] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"]
                found[item["Key"]] = body.read()
        return found

    @contextlib.contextmanager
    def recording_requests(self) -> Any:
        """Record the requests sent while the block runs; yields the list, filled at its end."""
        self.recording.unlink(missing_ok=True)
        self._post("/moto-api/recorder/start-recording")
        requests: list[Request] = []
        try:
            yield requests
        finally:
            self._post("/moto-api/recorder/stop-recording")
            requests.extend(self._recorded())

    def _recorded(self) -> list[Request]:
        if not self.recording.exists():
            return []
        found = []
        for entry in json_objects(self.recording.read_text()):
            headers = {k.lower(): v for k, v in entry["headers"].items()}
            path = unquote(urlsplit(entry["url"]).path).lstrip("/")
            source = headers.get("x-amz-copy-source")
            found.append(Request(entry["method"], path, unquote(source) if source else None))
        return found


def json_objects(text: str) -> list[Any]:
    """The JSON objects of moto's recording, in the order they were appended.

    moto appends a request as two writes, its JSON and then a line end, from the thread that
    served it; two requests served at once can leave `{...}{...}` on one line. So the objects are
    read one after another, whatever whitespace stands between them.
    """
    decoder = json.JSONDecoder()
    found = []
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return found
        entry, at = decoder.raw_decode(text, at)
        found.append(entry)
