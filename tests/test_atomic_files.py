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


@pytest.mark.parametrize("count", [2, 3])
def test_a_reader_finds_the_manifest_at_every_rename_of_a_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Readers count a month by its manifest (`available_months`): the previous manifest stays
    in place until the new one is renamed onto it, and each data file is the previous or the
    new one whenever a reader looks."""
    import os

    from schemas.atomic_files import OutputSet

    *data, manifest = (tmp_path / f"file{n}" for n in range(count))
    for path in (*data, manifest):
        path.write_bytes(b"old " + path.name.encode())

    def in_place() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in tmp_path.iterdir() if not p.name.startswith(".")}

    previous = in_place()
    states: list[dict[str, bytes]] = []
    real_replace = os.replace

    def recording_replace(src: os.PathLike[str] | str, dst: os.PathLike[str] | str) -> None:
        states.append(in_place())  # what a reader sees just before this rename
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", recording_replace)
    with OutputSet(*data, manifest) as outputs:
        for path in (*data, manifest):
            outputs.path(path).write_bytes(b"new " + path.name.encode())
    monkeypatch.setattr(os, "replace", real_replace)
    new = in_place()
    assert new == {name: b"new " + name.encode() for name in previous}
    assert states
    for state in [*states, new]:
        assert state.keys() == previous.keys()
        assert all(state[name] in (previous[name], new[name]) for name in state)


def test_an_error_names_the_output_not_the_temporary_file(tmp_path: Path) -> None:
    from schemas.atomic_files import OutputSet

    target = tmp_path / "out.bin"
    with pytest.raises(OSError) as raised, OutputSet(target) as outputs:
        raise OSError(28, "No space left on device", str(outputs.path(target)))
    assert raised.value.filename == str(target) and raised.value.errno == 28
    with pytest.raises(OSError) as raised, OutputSet(target):
        raise OSError(28, "No space left on device")
    assert raised.value.filename == str(target)


def test_a_withdrawn_output_is_not_published_and_its_old_file_goes_with_the_set(
    tmp_path: Path,
) -> None:
    from schemas.atomic_files import OutputSet

    data, extra, manifest = tmp_path / "data", tmp_path / "extra", tmp_path / "manifest"
    extra.write_bytes(b"of an earlier set")
    with pytest.raises(RuntimeError), OutputSet(data, extra, manifest) as output:
        for target in (data, extra, manifest):
            output.path(target).write_bytes(b"new")
        output.withdraw(extra)
        raise RuntimeError("failed before publishing")
    assert extra.read_bytes() == b"of an earlier set" and not data.exists()
    with OutputSet(data, extra, manifest) as output:
        for target in (data, extra, manifest):
            output.path(target).write_bytes(b"new")
        output.withdraw(extra)
        assert not extra.exists() or extra.read_bytes() == b"of an earlier set"
    assert data.read_bytes() == manifest.read_bytes() == b"new"
    assert sorted(tmp_path.iterdir()) == [data, manifest], "no temporary file, no old extra"


def test_an_output_included_later_is_published_with_the_set_before_its_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from schemas.atomic_files import OutputSet

    data, joined, manifest = tmp_path / "data", tmp_path / "sub" / "joined", tmp_path / "manifest"
    renamed: list[str] = []
    replace = os.replace

    def noted(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        renamed.append(Path(dst).name)
        replace(src, dst)

    monkeypatch.setattr(os, "replace", noted)
    with OutputSet(data, manifest) as output:
        output.path(data).write_bytes(b"data")
        output.include(joined).write_bytes(b"joined")
        with pytest.raises(ValueError, match="already"):
            output.include(data)
        output.path(manifest).write_bytes(b"manifest")
    assert renamed == ["data", "joined", "manifest"]
    assert joined.read_bytes() == b"joined"
    with pytest.raises(RuntimeError), OutputSet(data, manifest) as output:
        output.include(tmp_path / "never").write_bytes(b"x")
        raise RuntimeError("failed")
    assert not (tmp_path / "never").exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["data", "joined", "manifest", "sub"]


def test_the_last_rename_commits_the_set_an_interrupt_after_it_undoes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from schemas.atomic_files import OutputSet

    data, manifest = tmp_path / "data", tmp_path / "manifest"
    for target in (data, manifest):
        target.write_bytes(b"old")
    replace = os.replace

    def interrupted_after(name: str) -> None:
        def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
            replace(src, dst)
            if Path(dst).name == name:
                raise KeyboardInterrupt  # (a signal's handler, right after the rename)

        monkeypatch.setattr(os, "replace", rename)

    interrupted_after("data")  # before the commit: put back as it was
    with pytest.raises(KeyboardInterrupt), OutputSet(data, manifest) as output:
        output.path(data).write_bytes(b"new")
        output.path(manifest).write_bytes(b"new")
    assert data.read_bytes() == manifest.read_bytes() == b"old"
    interrupted_after("manifest")  # after it: published
    with pytest.raises(KeyboardInterrupt), OutputSet(data, manifest) as output:
        output.path(data).write_bytes(b"new")
        output.path(manifest).write_bytes(b"new")
    assert data.read_bytes() == manifest.read_bytes() == b"new"
    assert sorted(tmp_path.iterdir()) == [data, manifest]
