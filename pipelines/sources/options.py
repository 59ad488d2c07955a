"""How a remote source is downloaded: checksum verification, cache folder, retries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pipelines.sources.retry import BACKOFF, RETRIES, TIMEOUT


@dataclass(frozen=True)
class DownloadOptions:
    """How a remote source is fetched: checksum verification, cache folder, retries."""

    verify: bool = True
    cache: Path | None = None
    timeout: float = TIMEOUT
    retries: int = RETRIES
    backoff: float = BACKOFF

    def http_options(self) -> dict[str, Any]:
        """Return the keyword arguments of `pipelines.sources.download.open_url`."""
        return {
            "timeout": self.timeout,
            "retries": self.retries,
            "backoff": self.backoff,
            "cache": self.cache,
        }

    def record(self) -> dict[str, Any]:
        """Return the options as plain JSON values (the flows' parameters carry them so)."""
        return {
            "verify": self.verify,
            "cache": str(self.cache) if self.cache is not None else None,
            "timeout": self.timeout,
            "retries": self.retries,
            "backoff": self.backoff,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> DownloadOptions:
        """Return the options a record holds (missing values take their defaults)."""
        values = {f.name: record[f.name] for f in fields(cls) if f.name in record}
        if values.get("cache") is not None:
            values["cache"] = Path(values["cache"])
        return cls(**values)
