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
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
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
    except NotADirectoryError:  # a file where one of the path's folders should be
        in_the_way = next(p for p in target.parents if p.exists() and not p.is_dir())
        raise NotADirectoryError(
            errno.ENOTDIR, "a file is in the way of this folder", str(in_the_way)
        ) from None
    kind = _kind(mode)
    if kind == "a symlink":
        kind = f"a symlink to {os.readlink(target)}"
    if kind is not None:
        raise NotARegularFile(target, kind)


class OutputSet:
    """Files that appear together (data files and the manifest that describes them).

    Each is written to a temporary path beside its place (`path(target)`). When the block
    ends well and every one is whole, they are renamed into place in the order given, the
    manifest last; if the block fails, or a file was not written, no target changes and no
    temporary file stays. If a rename fails, or the run is interrupted before the last one, the
    targets already renamed are put back as they were (the previous files are kept as hard
    links until the end); the last rename is the set's commit: interrupted after it, the set
    stays published, as readers may have seen it. Every target must not
    exist or be a regular file (NotARegularFile), before and after the block.

    Temporary names are `.NAME.XXXXXXXX.tmp` beside each target, for leftover cleaners.
    """

    def __init__(self, *targets: str | os.PathLike[str], sync: bool = False) -> None:
        self.targets = [Path(target) for target in targets]
        self.sync = sync
        self._tmp = {target: _temporary(target) for target in self.targets}
        self._withdrawn: list[Path] = []

    def path(self, target: str | os.PathLike[str]) -> Path:
        """Where to write `target` until the set is published."""
        return self._tmp[Path(target)]

    def __enter__(self) -> OutputSet:
        for target in self.targets:
            check_output(target)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except FileExistsError:  # a file where a folder of the path should be
                check_output(target)  # names it
                raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, *_: object
    ) -> None:
        try:
            if kind is None:
                self._publish()
        finally:
            for tmp in self._tmp.values():
                tmp.unlink(missing_ok=True)
        if isinstance(error, OSError) and error.errno is not None:
            self.name(error)

    def name(self, error: OSError) -> None:
        """Make an error name the output, not a temporary file (an error that names no file,
        such as a full disk, names the set's first file); its type and notes stay."""
        by_tmp = {str(tmp): target for target, tmp in self._tmp.items()}
        if error.filename is None or str(error.filename) in by_tmp:
            error.filename = str(by_tmp.get(str(error.filename), self.targets[0]))

    def include(self, target: str | os.PathLike[str]) -> Path:
        """Add `target` to the set, published before its last target (the manifest that
        describes the rest); return where to write it. Another writer's files join the set so:
        they appear with the rest, or not at all."""
        target = Path(target)
        if target in self._tmp:
            raise ValueError(f"{target} is already in the set")
        check_output(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        last = self.targets[-1]
        self.targets.insert(len(self.targets) - 1, target)
        self._tmp[target] = _temporary(target)
        self._tmp[last] = self._tmp.pop(last)  # (renamed in the targets' order: the last last)
        return self._tmp[target]

    def withdraw(self, target: str | os.PathLike[str]) -> None:
        """Leave `target` out of the set: what was written for it is removed, and a file at
        its place is removed once the rest is published (it no longer belongs with them)."""
        target = Path(target)
        self._tmp.pop(target).unlink(missing_ok=True)
        self.targets.remove(target)
        self._withdrawn.append(target)

    def _publish(self) -> None:
        for target, tmp in self._tmp.items():
            if not tmp.is_file():
                raise FileNotFoundError(
                    errno.ENOENT, "not written, so nothing published", str(target)
                )
            check_output(target)
            if self.sync:
                _fsync(tmp)
        done: list[tuple[Path, Path | None]] = []
        try:
            for target, tmp in self._tmp.items():
                backup = _keep(target)
                done.append((target, backup))
                os.replace(tmp, target)
        except BaseException:
            last = self.targets[-1]
            if done and done[-1][0] == last and not self._tmp[last].exists():
                raise  # the last rename, the set's commit, was done: it stays published
            for target, backup in reversed(done):
                if backup is not None:
                    os.replace(backup, target)
                elif not self._tmp[target].exists():  # renamed in: there was no file before
                    target.unlink(missing_ok=True)
            raise
        finally:
            for _, backup in done:
                if backup is not None:
                    backup.unlink(missing_ok=True)
        for target in self._withdrawn:
            target.unlink(missing_ok=True)


def _temporary(target: Path) -> Path:
    return target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")


def _keep(target: Path) -> Path | None:
    """A hard link to the file at `target` under a temporary name (None: no file, or the file
    system has no hard links)."""
    if not target.exists():
        return None
    backup = _temporary(target)
    try:
        os.link(target, backup)
    except OSError:
        return None
    return backup


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, sync: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside `path`, renamed onto it if the block succeeds, else removed
    (an OutputSet of one file)."""
    with OutputSet(path, sync=sync) as outputs:
        yield outputs.path(path)
