"""Checking a warehouse folder: dead runs' leftovers, partitions and manifests that disagree,
in the move statistics and in the explorer's data (`explorer/`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256
from pipelines.warehouse.evals_files import PART_RE, eval_parts, evals_dir, evals_lock
from pipelines.warehouse.explorer_files import (
    SHA256_FIELDS,
    YEARLY_SHA256_FIELDS,
    explorer_dir,
    explorer_lock,
    explorer_manifest_path,
    explorer_month_dir,
    explorer_temp_files,
    explorer_yearly_dir,
    recorded_file_names,
)
from pipelines.warehouse.integrity import DamagedMonth, record_times, recorded_output
from pipelines.warehouse.layout import (
    MONTH_RE,
    manifest_path,
    partition_file,
    stats_dir,
)
from pipelines.warehouse.leftovers import is_dead, pid_of, remove_leftovers, staging_root
from pipelines.warehouse.locks import month_lock
from pipelines.warehouse.yearly import year_months, year_state, yearly_dir, yearly_manifest_path


@dataclass(frozen=True)
class Finding:
    """One problem in a warehouse folder."""

    #: stale-staging, temp-file, no-manifest, sha256-mismatch, no-partition, in-use,
    #: stale-yearly (a compacted year that no longer matches its months), not-a-month (a
    #: stray `month=...` name), not-a-folder (a file where a month's folder should be),
    #: bad-eval-part (a part of the evaluation store that readers cannot use), not-a-part (a
    #: stray file in the store's folder)
    kind: str
    #: A file or folder, or an object's URL in a store
    path: Path | str
    month: str | None
    detail: str
    repaired: bool = False
    #: What a repair does with it ("removes it", "leaves it"), when the line says so.
    repair: str | None = None
    #: A remark in parentheses after the detail.
    aside: str | None = None

    def line(self, repair_by: str | None = None) -> str:
        """Return the finding as one line of text; `repair_by` names how a repair is asked for
        (a command's flag), and the line then says what a repair does with it."""
        where = f" [{self.month}]" if self.month else ""
        says = f"{repair_by} {self.repair}" if repair_by and self.repair else None
        if self.aside is not None:
            detail = f"{self.detail} ({self.aside}{f'; {says}' if says else ''})"
        else:
            detail = f"{self.detail}; {says}" if says else self.detail
        return f"{self.kind}{where} {self.path}: {detail}"


def _staging_month(name: str, after: str = "-") -> str | None:
    """Return the month a name starts with, if `after` follows it."""
    month = name[:7]
    return month if MONTH_RE.match(month) and name[7:].startswith(after) else None


def _months_with_leftovers(warehouse: Path) -> dict[str | None, list[Path]]:
    """Group a warehouse's staging folders and temp files by month (None: no month known)."""
    groups: dict[str | None, list[Path]] = {}
    root = staging_root(warehouse)
    if root.is_dir():
        for child in sorted(root.iterdir()):
            groups.setdefault(_staging_month(child.name), []).append(child)
    stats = stats_dir(warehouse)
    if stats.is_dir():
        for tmp in sorted(stats.glob(".month=*.tmp")):
            groups.setdefault(_staging_month(tmp.name[len(".month=") :], ".json."), []).append(tmp)
        for folder in sorted(stats.glob("month=*")):
            month = _staging_month(folder.name[len("month=") :], "")
            if folder.is_dir():
                for tmp in sorted(folder.glob(".*.tmp")):
                    groups.setdefault(month, []).append(tmp)
    return groups


def _manifest_findings(warehouse: Path, repair: bool) -> Iterator[Finding]:
    stats = stats_dir(warehouse)
    if not stats.is_dir():
        return
    months = set()
    for path in sorted(stats.glob("month=*")):
        month = path.name[len("month=") :].removesuffix(".json")
        if MONTH_RE.fullmatch(month):
            months.add(month)
        else:
            yield Finding(
                "not-a-month",
                path,
                None,
                "not a month=YYYY-MM folder or manifest: no reader counts it; move it out of "
                "the warehouse",
            )
    for month in sorted(months):
        part, manifest = partition_file(warehouse, month), manifest_path(warehouse, month)
        if part.parent.exists() and not part.parent.is_dir():
            yield Finding(
                "not-a-folder",
                part.parent,
                month,
                "a file where the month's folder should be; move it away, then re-ingest the month",
            )
        elif part.exists() and not manifest.exists():
            yield Finding(
                "no-manifest", part, month, "partition without a manifest; re-ingest the month"
            )
        elif manifest.exists() and not part.exists():
            yield Finding(
                "no-partition", manifest, month, "manifest without a partition; re-ingest the month"
            )
        elif part.exists():
            yield from _partition_findings(warehouse, month, repair)


def _partition_findings(warehouse: Path, month: str, repair: bool) -> Iterator[Finding]:
    """A month's partition against its manifest: a manifest that cannot be read, a file whose
    sha256 is not the recorded one, and a file whose content is the recorded one but whose
    size or time is not (copied without its times): readers refuse it, and `repair` records
    the file's time in the manifest."""
    part, manifest = partition_file(warehouse, month), manifest_path(warehouse, month)
    try:
        recorded = recorded_output(warehouse, month)
    except DamagedMonth:
        detail = "not readable as a manifest; re-ingest the month"
        yield Finding("bad-manifest", manifest, month, detail)
        return
    if recorded.sha256 != file_sha256(part):
        detail = f"does not match output_sha256 of {manifest.name}; re-ingest the month"
        yield Finding("sha256-mismatch", part, month, detail)
        return
    if recorded.mtime_ns is None or part.stat().st_mtime_ns == recorded.mtime_ns:
        return
    if not repair:
        detail = (
            f"its content is the one {manifest.name} records, its modification time is not "
            "(copied without its times): readers refuse it"
        )
        yield Finding("times-changed", part, month, detail, repair="records the file's time")
        return
    try:
        with month_lock(warehouse, month, clean=False):
            record_times(warehouse, month)
    except ChesspipeError:
        yield Finding("in-use", warehouse, month, "month in use, skipped")
        return
    yield Finding("times-changed", part, month, "the file's time recorded in the manifest", True)


def _year_of(path: Path) -> str | None:
    """Return the year a name under the yearly folder names (`year=YYYY...`), if any."""
    name = path.name if path.name.startswith("year=") else path.parent.name
    year = name[len("year=") : len("year=") + 4]
    return year if name.startswith("year=") and year.isascii() and year.isdigit() else None


def _yearly_findings(warehouse: Path, repair: bool) -> Iterator[Finding]:
    """Compacted years that no longer match their months, and dead compactions' temp files.

    Temp files are reported (and removed by `repair`) only while all twelve months of their
    year are free: a compaction holds their locks. A stale yearly file is never removed.
    """
    root = yearly_dir(warehouse)
    if not root.is_dir():
        return
    temps: dict[str | None, list[Path]] = {}
    for tmp in sorted([*root.glob(".*.tmp"), *root.glob("year=*/.*.tmp")]):
        temps.setdefault(_year_of(Path(tmp.name[1:]) if tmp.parent == root else tmp), []).append(
            tmp
        )
    for year, paths in temps.items():
        if year is None:
            yield from (
                Finding("unknown-staging", p, None, "not a compaction's; left alone") for p in paths
            )
            continue
        try:
            with ExitStack() as locks:
                for month in year_months(year):
                    locks.enter_context(month_lock(warehouse, month, clean=False))
                yield from _temp_files(paths, repair, "left by a dead compaction")
        except ChesspipeError:
            yield Finding("in-use", root, None, f"year {year} being compacted, skipped")
    years = {y for p in root.glob("year=*") if (y := _year_of(p)) is not None}
    for year in sorted(years):
        state = year_state(warehouse, year)
        if state is not None and not state.fresh:
            yield Finding(
                "stale-yearly",
                yearly_manifest_path(warehouse, year),
                None,
                state.reason,
                repair="leaves it",
                aside="book build ignores it",
            )


def _temp_files(paths: list[Path], repair: bool, detail: str) -> Iterator[Finding]:
    """The temporary files a dead run left (`detail`: whose), removed with `repair`: the
    caller holds the lock that keeps a live run away from them."""
    for path in paths:
        if repair:
            path.unlink(missing_ok=True)
            yield Finding("temp-file", path, None, "removed", True)
        else:
            yield Finding("temp-file", path, None, detail, repair="removes it")


def _part_problem(part: Path) -> str | None:
    """What is wrong with a part of the evaluation store (None: nothing): it must read as
    Parquet with the store's columns, one row per position, sorted by key."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from schemas.evals import LATER_COLUMNS, evals_schema

    try:
        table = pq.read_table(part)
    except (OSError, ValueError) as exc:
        return f"not readable as Parquet ({str(exc).splitlines()[0]})"
    missing = [
        f.name
        for f in evals_schema()
        if f.name not in table.schema.names and f.name not in LATER_COLUMNS
    ]
    if missing:
        return f"lacks the column(s) {', '.join(missing)} of the evaluation store"
    keys = table.column("key").combine_chunks()
    if (
        len(keys) > 1
        and not pc.all(pc.greater(keys.slice(1), keys.slice(0, len(keys) - 1))).as_py()
    ):
        return "not sorted by key with one row per position"
    return None


def _evals_findings(warehouse: Path, repair: bool) -> Iterator[Finding]:
    """The evaluation store: parts readers cannot use, stray files, and what dead runs left
    (temp files, removed by `repair` while no run holds the store's lock)."""
    root = evals_dir(warehouse)
    if not root.is_dir():
        return
    temps = sorted(root.glob(".part-*.tmp"))
    strays = sorted(
        p for p in root.iterdir() if not PART_RE.fullmatch(p.name) and p not in set(temps)
    )
    if temps:
        try:
            with evals_lock(warehouse):
                detail = "left by a dead run of evals analyse or import"
                yield from _temp_files(temps, repair, detail)
        except ChesspipeError:
            yield Finding("in-use", root, None, "the evaluations are being written, skipped")
    for path in strays:
        detail = "not a part of the evaluation store: no reader counts it; move it out"
        yield Finding("not-a-part", path, None, detail)
    for part in eval_parts(warehouse):
        problem = _part_problem(part)
        if problem is not None:
            detail = f"{problem}: every read of the evaluations fails; move it out of the store"
            yield Finding("bad-eval-part", part, None, detail, repair="leaves it")


def _explorer_months(warehouse: Path) -> Iterator[Finding | str]:
    """The months of the explorer's folder, and a finding for each stray name in it."""
    months = set()
    for path in sorted(explorer_dir(warehouse).glob("month=*")):
        month = path.name[len("month=") :].removesuffix(".json")
        if MONTH_RE.fullmatch(month):
            months.add(month)
        else:
            detail = "not a month=YYYY-MM folder or manifest of the explorer: no reader counts it"
            yield Finding("not-a-month", path, None, f"{detail}; move it out of the warehouse")
    yield from sorted(months)


def _recorded(manifest: Path) -> dict[str, object] | None:
    """An explorer manifest's fields (None: not readable as a JSON object)."""
    try:
        found = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _explorer_month_findings(warehouse: Path, month: str) -> Iterator[Finding]:
    """A month of the explorer: files without their manifest, a manifest without its files,
    files that no longer have the sha256 their manifest records."""
    folder, manifest = (
        explorer_month_dir(warehouse, month),
        explorer_manifest_path(warehouse, month),
    )
    again = "index the month for the explorer again"
    if folder.exists() and not folder.is_dir():
        detail = f"a file where the explorer's month folder should be; move it away, then {again}"
        yield Finding("not-a-folder", folder, month, detail)
        return
    recorded = (_recorded(manifest) or {}) if manifest.exists() else {}
    files = [folder / name for name in recorded_file_names(recorded)]
    present = [f for f in files if f.is_file()]
    if present and not manifest.exists():
        yield Finding("no-manifest", folder, month, f"explorer data without a manifest; {again}")
        return
    if not manifest.exists():
        return
    if len(present) < len(files):
        missing = ", ".join(f.name for f in files if f not in present)
        detail = f"explorer manifest without {missing}; {again}"
        yield Finding("no-partition", manifest, month, detail)
        return
    for file in files:
        field = SHA256_FIELDS[file.name]
        if recorded.get(field) is None:
            continue  # written before the files' sha256 was recorded: nothing to compare
        if recorded[field] != file_sha256(file):
            detail = f"does not match {field} of {manifest.name}; {again}"
            yield Finding("sha256-mismatch", file, month, detail)


def _explorer_findings(warehouse: Path, repair: bool) -> Iterator[Finding]:
    """The explorer's data (`explorer/`): its months as move_stats' are checked, and what
    dead index runs left (temp files, removed by `repair` while no run holds the month)."""
    if not explorer_dir(warehouse).is_dir():
        return
    for found in _explorer_months(warehouse):
        if isinstance(found, Finding):
            yield found
            continue
        month = found
        temps = explorer_temp_files(warehouse, month)
        if temps:
            try:
                with explorer_lock(warehouse, month):
                    for finding in _temp_files(temps, repair, "left by a dead explorer index run"):
                        yield replace(finding, month=month)
            except ChesspipeError:
                detail = "the explorer's month is being indexed, skipped"
                yield Finding("in-use", explorer_dir(warehouse), month, detail)
                continue
        yield from _explorer_month_findings(warehouse, month)


def _explorer_yearly_findings(warehouse: Path) -> Iterator[Finding]:
    """The explorer's compacted years: files that no longer have the sha256 their manifest
    records, a manifest without its files (the months stay served from their own files)."""
    root = explorer_yearly_dir(warehouse)
    again = "compact the year again (chesspipe explorer compact)"
    for manifest in sorted(root.glob("year=*.json")) if root.is_dir() else []:
        recorded = _recorded(manifest)
        if recorded is None:
            yield Finding(
                "bad-manifest", manifest, None, f"not a compacted year's manifest; {again}"
            )
            continue
        folder = root / manifest.name.removesuffix(".json")
        for name, field in YEARLY_SHA256_FIELDS.items():
            file = folder / name
            if not file.is_file():
                yield Finding("no-partition", manifest, None, f"manifest without {name}; {again}")
            elif recorded.get(field) != file_sha256(file):
                detail = f"does not match {field} of {manifest.name}; {again}"
                yield Finding("sha256-mismatch", file, None, detail)


def _kind(warehouse: Path, path: Path) -> str:
    return "stale-staging" if path.parent == staging_root(warehouse) else "temp-file"


def check_warehouse(warehouse: Path, repair: bool = False) -> list[Finding]:
    """Return the problems of a warehouse folder; with `repair`, remove what is safe to remove.

    Stale staging folders and temp files are removed under their month's lock (a month whose
    lock is held is reported as in use, skipped); partitions and manifests are never touched.
    Compacted years (pipelines.warehouse.yearly) that no longer match their months are reported
    and left: compact them again; a dead compaction's temp files are removed. The explorer's
    months (`explorer/`) are checked as the partitions are, against the sha256 their manifests
    record; a dead index run's temp files are removed under the month's explorer lock.
    """
    warehouse = Path(warehouse)
    findings: list[Finding] = []
    for month, paths in _months_with_leftovers(warehouse).items():
        if month is None:
            findings += [
                Finding("unknown-staging", p, None, "not a run's staging name; left alone")
                for p in paths
            ]
            continue
        if repair:
            try:
                with month_lock(warehouse, month, clean=False):
                    folders = [p for p in paths if p.is_dir()]
                    files = [p for p in paths if not p.is_dir()]
                    removed = remove_leftovers(folders, files, month)
            except ChesspipeError:
                findings.append(Finding("in-use", warehouse, month, "month in use, skipped"))
                continue
            for path in removed:
                findings.append(Finding(_kind(warehouse, path), path, month, "removed", True))
            continue
        for path in paths:
            if is_dead(pid_of(path.name, month)):
                detail = "left by a dead run"
                findings.append(
                    Finding(_kind(warehouse, path), path, month, detail, repair="removes it")
                )
    findings += _manifest_findings(warehouse, repair)
    findings += _yearly_findings(warehouse, repair)
    findings += _evals_findings(warehouse, repair)
    findings += _explorer_findings(warehouse, repair)
    findings += _explorer_yearly_findings(warehouse)
    return findings


def book_files(books: Path) -> list[Path]:
    """Return the books of a books folder, by name: its `*.bin` files (the months' books
    build-month publishes as lichess-YYYY-MM.bin, books over many months as NAME.bin), not
    hidden ones (a run's temporary files are `.NAME.XXXXXXXX.tmp`)."""
    return sorted(
        path
        for path in Path(books).glob("*.bin")
        if not path.name.startswith(".") and path.is_file()
    )


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def clean_line(warehouse: Path, books: Path | None = None) -> str:
    """Return what a clean check says: the months with statistics, the compacted years that
    still match them, and with `books` (the books folder, which the warehouse does not
    record) the books there: "W: clean: 2 months, 1 compacted year, 3 books"."""
    from pipelines.warehouse.layout import available_months
    from pipelines.warehouse.yearly import fresh_yearly_files

    parts = [_count(len(available_months(warehouse)), "month")]
    years = fresh_yearly_files(warehouse)
    if years:
        parts.append(_count(len(years), "compacted year"))
    if books is not None:
        parts.append(_count(len(book_files(books)), "book"))
    return f"{warehouse}: clean: {', '.join(parts)}"
