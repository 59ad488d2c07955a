"""A month's source and what identifies its content, known before reading all of it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256
from pipelines.monthly.settings import DownloadOptions
from pipelines.sources.open import is_url, resolve


@dataclass(frozen=True)
class ResolvedSource:
    """A source and what identifies its content: sha256 (and size) or URL + ETag."""

    source: str
    resolved: str
    kind: str
    identity: dict[str, Any] | None
    expected_sha256: str | None


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
            return ResolvedSource(source, resolved, "url", {"sha256": digest}, digest)
        identity = remote_identity(resolved, timeout=download.timeout, retries=download.retries)
        return ResolvedSource(source, resolved, "url", identity, None)
    path = Path(resolved)
    if not path.is_file():
        raise ChesspipeError(f"cannot open {resolved}: no such file")
    digest = file_sha256(path)
    return ResolvedSource(
        source, resolved, "file", {"sha256": digest, "size": path.stat().st_size}, digest
    )
