"""A month's source and what identifies its content, known before reading all of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256
from pipelines.sources.open import is_url, resolve
from pipelines.sources.options import DownloadOptions


@dataclass(frozen=True)
class SourceIdentity:
    """What identifies a source's content: its sha256 (a file's with its size, or a URL's
    published one), or, for a URL whose checksum is not checked, its size and ETag."""

    sha256: str | None = None
    size: int | None = None
    url: str | None = None
    etag: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the identity as the run manifest records it."""
        if self.url is not None:
            return {"url": self.url, "size": self.size, "etag": self.etag}
        if self.size is not None:
            return {"sha256": self.sha256, "size": self.size}
        return {"sha256": self.sha256}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SourceIdentity:
        """Return the identity a run manifest records."""
        return cls(data.get("sha256"), data.get("size"), data.get("url"), data.get("etag"))


@dataclass(frozen=True)
class ResolvedSource:
    """A source and what identifies its content (None for stdin), and the sha256 it must have."""

    source: str
    resolved: str
    kind: str
    identity: SourceIdentity | None
    expected_sha256: str | None


def local_file(resolved: str) -> Path:
    """The file a resolved source that is neither stdin nor a URL names; ChesspipeError when
    there is none."""
    path = Path(resolved)
    if not path.is_file():
        raise ChesspipeError(f"cannot open {resolved}: no such file")
    return path


def check_source(source: str, variant: str) -> None:
    """Raise the ChesspipeError a month's run would, for a source that names a local file
    that is not there: what a command can say before it starts a flow (seconds of Prefect)."""
    resolved = resolve(source, variant)
    if resolved != "-" and not is_url(resolved):  # as resolve_source tells them apart
        local_file(resolved)


def resolve_source(source: str, variant: str, download: DownloadOptions) -> ResolvedSource:
    """Find where a source is and what identifies its content, without reading all of it."""
    resolved = resolve(source, variant)
    if resolved == "-":
        return ResolvedSource(source, resolved, "stdin", None, None)
    if is_url(resolved):
        from pipelines.sources.checksums import published_sha256
        from pipelines.sources.http import remote_identity

        if download.verify:
            digest = published_sha256(
                resolved,
                timeout=download.timeout,
                retries=download.retries,
                backoff=download.backoff,
            )
            return ResolvedSource(source, resolved, "url", SourceIdentity(digest), digest)
        size, etag = remote_identity(resolved, timeout=download.timeout, retries=download.retries)
        return ResolvedSource(
            source, resolved, "url", SourceIdentity(None, size, resolved, etag), None
        )
    path = local_file(resolved)
    digest = file_sha256(path)
    identity = SourceIdentity(digest, path.stat().st_size)
    return ResolvedSource(source, resolved, "file", identity, digest)
