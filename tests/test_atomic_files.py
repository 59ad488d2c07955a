"""Outputs appear whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_atomic_path_publishes_whole_or_nothing(tmp_path: Path) -> None:
    from schemas.atomic_files import atomic_path

    target = tmp_path / "deep" / "out.bin"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("killed half-way")
    assert not target.exists() and list(target.parent.iterdir()) == []
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"whole")
        assert not target.exists()
    assert target.read_bytes() == b"whole" and list(target.parent.iterdir()) == [target]


def test_an_output_set_appears_together_or_stays_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from schemas.atomic_files import OutputSet

    data, manifest = tmp_path / "data.bin", tmp_path / "data.json"
    data.write_bytes(b"old data")
    manifest.write_bytes(b"old manifest")

    def files() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(tmp_path.iterdir()) if p.is_file()}

    before = files()
    # A failure while writing: nothing changes.
    with pytest.raises(OSError, match="No space"), OutputSet(data, manifest) as outputs:
        outputs.path(data).write_bytes(b"new data")
        raise OSError(28, "No space left on device")
    assert files() == before
    # A file of the set not written: nothing is published.
    with pytest.raises(FileNotFoundError), OutputSet(data, manifest) as outputs:
        outputs.path(data).write_bytes(b"new data")
    assert files() == before
    # The second rename fails: the first file is put back.
    real_replace = os.replace
    renamed: list[str] = []

    def failing_replace(src: os.PathLike[str] | str, dst: os.PathLike[str] | str) -> None:
        """The second rename of a set fails, once; the others (and the restores) work."""
        renamed.append(str(dst))
        if len(renamed) == 2:
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="Input/output"), OutputSet(data, manifest) as outputs:
        outputs.path(data).write_bytes(b"new data")
        outputs.path(manifest).write_bytes(b"new manifest")
    assert files() == before
    monkeypatch.setattr(os, "replace", real_replace)
    # A new set where there was none: a failed rename leaves nothing.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    a, b = fresh / "a", fresh / "b"
    renamed.clear()
    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError), OutputSet(a, b) as outputs:
        outputs.path(a).write_bytes(b"a")
        outputs.path(b).write_bytes(b"b")
    monkeypatch.setattr(os, "replace", real_replace)
    assert list(fresh.iterdir()) == []
    # And when all goes well, both, and no temporary file.
    with OutputSet(data, manifest, sync=True) as outputs:
        outputs.path(data).write_bytes(b"new data")
        outputs.path(manifest).write_bytes(b"new manifest")
    assert data.read_bytes() == b"new data" and manifest.read_bytes() == b"new manifest"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.bin", "data.json", "fresh"]


def test_an_error_names_the_output_not_the_temporary_file(tmp_path: Path) -> None:
    from schemas.atomic_files import OutputSet

    target = tmp_path / "out.bin"
    with pytest.raises(OSError) as raised, OutputSet(target) as outputs:
        raise OSError(28, "No space left on device", str(outputs.path(target)))
    assert raised.value.filename == str(target) and raised.value.errno == 28
    with pytest.raises(OSError) as raised, OutputSet(target):
        raise OSError(28, "No space left on device")
    assert raised.value.filename == str(target)
