"""Warehouse and books on object storage (s3://, gs://, ...): fsspec copies of a month's files.

A month is built on local disk, then its finished files are uploaded one whole object at a
time, the manifest last; an object store shows an object whole or not at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError
from schemas.atomic_files import atomic_path


def is_remote(location: str | Path) -> bool:
    """Tell whether a warehouse or books location is a URL (s3://...) rather than a folder."""
    return "://" in str(location) and not str(location).startswith("file://")


def _filesystem(url: str) -> tuple[Any, str]:
    from fsspec.core import url_to_fs

    try:
        return url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise ChesspipeError(f"cannot open {url}: {exc}") from None


def join(base: str, relative: str) -> str:
    """Return the URL of a file below a base URL."""
    return base.rstrip("/") + "/" + relative.lstrip("/")


def download_if_exists(url: str, local: Path) -> bool:
    """Copy a remote file to a local path if it exists; tell whether it did."""
    fs, path = _filesystem(url)
    if not fs.exists(path):
        return False
    with atomic_path(local) as tmp:
        fs.get_file(path, str(tmp))
    return True


def upload(local: Path, url: str) -> None:
    """Copy a finished local file to a remote URL as one object."""
    fs, path = _filesystem(url)
    parent = path.rsplit("/", 1)[0]
    if parent:
        fs.makedirs(parent, exist_ok=True)
    fs.put_file(str(local), path)
