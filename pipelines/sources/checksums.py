"""The checksums Lichess publishes beside its dumps (`sha256sums.txt`), read and looked up."""

from __future__ import annotations

import posixpath
import re
import urllib.parse

from pipelines.errors import ChesspipeError
from pipelines.sources.http import HttpStatusError, fetch_text, url_file_name
from pipelines.sources.retry import BACKOFF, RETRIES, TIMEOUT

#: Name of the checksum list Lichess publishes beside its dumps.
CHECKSUMS_NAME = "sha256sums.txt"


class CannotVerify(ChesspipeError):
    """A dump's published checksum could not be found; the caller may turn verification off."""


def checksums_url(url: str) -> str:
    """Return the URL of the checksum list beside a dump."""
    parts = urllib.parse.urlsplit(url)
    folder = posixpath.dirname(parts.path)
    return urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc, f"{folder}/{CHECKSUMS_NAME}", "", "")
    )


#: A `sha256sum` line: the digest, one space, a space (text mode) or `*` (binary), the name.
_CHECKSUM_LINE = re.compile(r"([0-9a-fA-F]{64}) [ *]?(\S+)")


def parse_checksums(text: str, *, skip_bad_lines: bool = False) -> dict[str, str]:
    """Return {file name: sha256} from `sha256sum` output (`<hex>  <name>` lines).

    Blank lines and `#` comments are ignored; names lose any folder. Any other line that is
    not a checksum line is an error naming it, unless `skip_bad_lines`.
    """
    sums = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _CHECKSUM_LINE.fullmatch(line)
        if match is None:
            if skip_bad_lines:
                continue
            raise ChesspipeError(f"checksum list line {number} is not '<sha256>  <name>': {raw!r}")
        digest, name = match.groups()
        sums[name.rsplit("/", 1)[-1]] = digest.lower()
    return sums


def published_sha256(
    url: str, timeout: float = TIMEOUT, retries: int = RETRIES, backoff: float = BACKOFF
) -> str:
    """Return the sha256 published for a dump in the `sha256sums.txt` beside it."""
    list_url = checksums_url(url)
    try:
        text = fetch_text(list_url, timeout=timeout, retries=retries, backoff=backoff)
    except HttpStatusError as exc:
        raise CannotVerify(f"cannot verify {url}: {list_url} answered HTTP {exc.status}") from None
    name = url_file_name(url)
    # Only this dump's line matters: a stray line elsewhere in the list does not stop it.
    digest = parse_checksums(text, skip_bad_lines=True).get(name)
    if digest is None:
        raise CannotVerify(f"cannot verify {url}: {name} is not listed in {list_url}")
    return digest
