"""HTTP(S) streaming of dumps."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from pipelines import __version__
from pipelines.errors import ChesspipeError

USER_AGENT = f"chesspipe/{__version__}"


@contextmanager
def open_url(url: str, timeout: float = 60.0) -> Iterator[tuple[BinaryIO, int | None]]:
    """Open a URL for streaming; yield the response and its length if the server says it."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise ChesspipeError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ChesspipeError(f"{url}: {getattr(exc, 'reason', exc)}") from None
    with response:
        length = response.headers.get("Content-Length")
        yield response, int(length) if length and length.isdigit() else None
