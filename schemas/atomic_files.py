"""Output files that appear whole or not at all: written beside their place, then renamed."""

from __future__ import annotations

import errno
import os
import stat
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class NotARegularFile(OSError):
    """An output path that exists and is not a regular file: a device, a FIFO, a folder, a
    symlink. Renaming a new file onto it would replace the node (as root, `/dev/null`) or
    the link, not write what it points at; it is left as it is."""

    def __init__(self, path: Path, kind: str) -> None:
        super().__init__(
            errno.EEXIST, f"exists and is {kind}; an output replaces only a regular file", str(path)
        )


def _kind(mode: int) -> str | None:
    """What a path that is not a regular file is (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    for test, kind in (
        (stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
    ):  # fmt: skip
        if test(mode):
            return kind
    return "not a regular file"


def check_output(path: str | os.PathLike[str]) -> None:
    """Raise NotARegularFile if `path` exists and is not a regular file (a symlink is not)."""
    target = Path(path)
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    kind = _kind(mode)
    if kind == "a symlink":
        kind = f"a symlink to {os.readlink(target)}"
    if kind is not None:
        raise NotARegularFile(target, kind)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `path`, renamed onto it if the block succeeds, else removed.

    `path` must not exist or be a regular file (NotARegularFile), before and after the block.
    """
    target = Path(path)
    check_output(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        yield tmp
        check_output(target)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
