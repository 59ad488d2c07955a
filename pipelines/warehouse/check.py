"""Checking a warehouse folder: dead runs' leftovers, partitions and manifests that disagree."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256
from pipelines.warehouse.layout import MONTH_RE, manifest_path, partition_file, stats_dir
from pipelines.warehouse.leftovers import is_dead, pid_of, remove_leftovers, staging_root
from pipelines.warehouse.locks import month_lock


@dataclass(frozen=True)
class Finding:
    """One problem in a warehouse folder."""

    kind: str  # stale-staging, temp-file, no-manifest, sha256-mismatch, no-partition, in-use
    path: Path
    month: str | None
    detail: str
    repaired: bool = False

    def line(self) -> str:
        """Return the finding as one line of text."""
        where = f" [{self.month}]" if self.month else ""
        return f"{self.kind}{where} {self.path}: {self.detail}"


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


def _manifest_findings(warehouse: Path) -> Iterator[Finding]:
    stats = stats_dir(warehouse)
    if not stats.is_dir():
        return
    months = {
        p.name[len("month=") :].removesuffix(".json")
        for p in stats.glob("month=*")
        if not p.name.startswith(".")
    }
    for month in sorted(m for m in months if MONTH_RE.match(m)):
        part, manifest = partition_file(warehouse, month), manifest_path(warehouse, month)
        if part.exists() and not manifest.exists():
            yield Finding(
                "no-manifest", part, month, "partition without a manifest; re-ingest the month"
            )
        elif manifest.exists() and not part.exists():
            yield Finding(
                "no-partition", manifest, month, "manifest without a partition; re-ingest the month"
            )
        elif part.exists():
            try:
                recorded = json.loads(manifest.read_text()).get("output_sha256")
            except (OSError, ValueError, AttributeError):
                recorded = None
            if recorded != file_sha256(part):
                yield Finding(
                    "sha256-mismatch",
                    part,
                    month,
                    f"does not match output_sha256 of {manifest.name}; re-ingest the month",
                )


def _kind(warehouse: Path, path: Path) -> str:
    return "stale-staging" if path.parent == staging_root(warehouse) else "temp-file"


def check_warehouse(warehouse: Path, repair: bool = False) -> list[Finding]:
    """Return the problems of a warehouse folder; with `repair`, remove what is safe to remove.

    Stale staging folders and temp files are removed under their month's lock (a month whose
    lock is held is reported as in use, skipped); partitions and manifests are never touched.
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
                detail = "left by a dead run; --repair removes it"
                findings.append(Finding(_kind(warehouse, path), path, month, detail))
    findings += _manifest_findings(warehouse)
    return findings
