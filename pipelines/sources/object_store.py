"""Warehouse and books on object storage (s3://, gs://, ...): fsspec copies of a month's files.

A month is built on local disk, then its finished files are uploaded as whole objects (see
`pipelines.sources.object_publish` for the order). Every failure of the store (no credentials,
an endpoint that does not answer, a refused request) is a ChesspipeError naming the URL, and
S3 gives up within seconds: its timeouts and retries are bounded (`S3_OPTIONS`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from copy import deepcopy
from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError
from schemas.atomic_files import atomic_path

#: s3fs options, unless fsspec's configuration sets them (`FSSPEC_S3_*` variables or
#: `~/.config/fsspec/`): an unreachable endpoint fails in seconds, not minutes. The retries are
#: botocore's own when `AWS_MAX_ATTEMPTS` or `AWS_RETRY_MODE` is set. The endpoint and
#: credentials are botocore's (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `~/.aws/`, roles).
S3_OPTIONS: dict[str, Any] = {
    "config_kwargs": {  # botocore's client settings
        "connect_timeout": 5,  # seconds per connection attempt
        "read_timeout": 60,  # seconds without a byte from the store
        "retries": {"max_attempts": 3, "mode": "standard"},  # attempts in all, with backoff
    },
    "use_listings_cache": False,  # other processes change the bucket between our calls
}

#: What each protocol is opened with by default.
DEFAULT_OPTIONS: dict[str, dict[str, Any]] = {"s3": S3_OPTIONS, "s3a": S3_OPTIONS}


def is_remote(location: str | Path) -> bool:
    """Tell whether a warehouse or books location is a URL (s3://...) rather than a folder."""
    return "://" in str(location) and not str(location).startswith("file://")


def storage_options(protocol: str) -> dict[str, Any]:
    """Return the options a protocol's filesystem is opened with: ours under fsspec's config."""
    from fsspec.config import conf

    options = deepcopy(DEFAULT_OPTIONS.get(protocol, {}))  # botocore edits what it's given
    if "config_kwargs" in options and {"AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"} & set(os.environ):
        config = {k: v for k, v in options["config_kwargs"].items() if k != "retries"}
        options["config_kwargs"] = config
    return {**options, **conf.get(protocol, {})}


def filesystem(url: str) -> tuple[Any, str]:
    """Return the fsspec filesystem of a URL, opened with `storage_options`, and its path."""
    from fsspec.core import url_to_fs

    protocol = url.split("://", 1)[0]
    try:
        return url_to_fs(url, **storage_options(protocol))
    except (ImportError, ValueError) as exc:
        raise ChesspipeError(f"cannot open {url}: {exc}") from None


def _store_errors() -> tuple[type[BaseException], ...]:
    """The exceptions a store's client raises for a failed request (OSError, botocore's)."""
    try:
        from botocore.exceptions import BotoCoreError
    except ImportError:
        return (OSError,)
    return (OSError, BotoCoreError)


def _reason(exc: BaseException) -> str:
    """Return what went wrong, in a line, with where to look when it is the credentials."""
    name = type(exc).__name__
    if name == "NoCredentialsError":
        return (
            "no credentials found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
            "~/.aws/credentials or an instance role)"
        )
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return " ".join(str(exc).split()) or name


@contextmanager
def reporting(url: str) -> Iterator[None]:
    """Turn a failed request to the store about `url` into a one-line ChesspipeError."""
    try:
        yield
    except ChesspipeError:
        raise
    except _store_errors() as exc:
        raise ChesspipeError(f"object storage {url}: {_reason(exc)}") from None


def join(base: str, relative: str) -> str:
    """Return the URL of a file below a base URL."""
    return base.rstrip("/") + "/" + relative.lstrip("/")


def check_access(url: str) -> None:
    """Ask the store about a location once, so missing credentials or a dead endpoint fail
    before any work is done."""
    fs, path = filesystem(url)
    with reporting(url):
        fs.exists(path)


def download_if_exists(url: str, local: Path) -> bool:
    """Copy a remote file to a local path if it exists; tell whether it did."""
    fs, path = filesystem(url)
    with reporting(url):
        if not fs.exists(path):
            return False
    with atomic_path(local) as tmp, reporting(url):
        fs.get_file(path, str(tmp))
    return True


def read_bytes(url: str) -> bytes:
    """Return a small object's bytes (a manifest)."""
    fs, path = filesystem(url)
    with reporting(url):
        data: bytes = fs.cat_file(path)
    return data


def upload(local: Path, url: str) -> None:
    """Copy a finished local file to a remote URL as one object."""
    fs, path = filesystem(url)
    parent = path.rsplit("/", 1)[0]
    with reporting(url):
        if parent:
            fs.makedirs(parent, exist_ok=True)
        fs.put_file(str(local), path)


def copy(source: str, target: str) -> None:
    """Copy one object to another URL of the same store, inside the store (no download)."""
    fs, source_path = filesystem(source)
    _, target_path = filesystem(target)
    with reporting(target):
        fs.copy(source_path, target_path)


def remove(url: str) -> None:
    """Delete an object if it exists."""
    fs, path = filesystem(url)
    with reporting(url):
        if fs.exists(path):
            fs.rm_file(path)


def remove_tree(url: str, pattern: str) -> list[str]:
    """Delete every object under the folders below `url` whose names match `pattern` (a glob);
    return the folders' URLs."""
    fs, path = filesystem(url)
    removed: list[str] = []
    with reporting(url):
        for found in fs.glob(path.rstrip("/") + "/" + pattern):
            fs.rm(found, recursive=True)
            removed.append(fs.unstrip_protocol(found))
    return removed
