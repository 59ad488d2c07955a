"""Checking a warehouse in object storage (s3://...): what `warehouse check` does for a folder,
for the objects a bucket holds.

It lists the months' partitions and manifests that disagree (a partition without its
manifest, a manifest without its partition, a partition whose size or sha256 is not the
recorded one: each partition is read whole to hash it), the explorer's months as a folder's
check finds them (files without their manifest or a manifest without them, files whose sha256
is not the recorded one), the staging prefixes runs left
(`.staging/MONTH-PID-XXXXXXXX/`) and the leases of runs that are gone (`.locks/*.lease`). A
month whose lease a live run holds is in use: its objects are left alone. `repair` removes a
dead run's staging under the month's lease (a run that starts meanwhile is refused, or
refuses the repair) and a dead run's lease if it is still the same object; partitions and
manifests are never touched: build those months again.
"""

from __future__ import annotations

import re
from contextlib import ExitStack, suppress
from typing import Any

from pipelines.errors import ChesspipeError
from pipelines.sources.object_lease import StoreLease, read_lease, supports_leases
from pipelines.sources.object_store import filesystem, join, reporting
from pipelines.warehouse.check import Finding
from pipelines.warehouse.explorer_files import SHA256_FIELDS, recorded_file_names
from pipelines.warehouse.integrity import DamagedMonth
from pipelines.warehouse.layout import MONTH_RE
from pipelines.warehouse.stored import (
    check_stored,
    listed_months,
    manifest_url,
    object_sha256,
    partition_url,
    pin_months,
)

#: A run's staging name: MONTH-PID-XXXXXXXX.
_STAGING = re.compile(r"([0-9]{4}-(?:0[1-9]|1[0-2]))-[0-9]+-[0-9a-f]{8}")


def _month_of(name: str, pattern: str) -> str | None:
    found = re.fullmatch(pattern, name)
    return found.group(1) if found else None


def _lease_findings(
    warehouse: str, fs: Any, leases: list[str], repair: bool
) -> tuple[list[Finding], set[str]]:
    """The leases of runs that are gone, and the names whose lease a live run holds."""
    findings: list[Finding] = []
    live: set[str] = set()
    for path in leases:
        name = path.rsplit("/", 1)[-1].removesuffix(".lease")
        url = join(warehouse, f".locks/{name}.lease")
        with reporting(url):
            found = read_lease(fs, path)
        if found is None:
            continue  # released meanwhile
        etag, holder = found
        if holder is not None and not holder.is_dead():
            live.add(name)
            continue
        who = holder.said() if holder is not None else "no run (not a lease)"
        detail = f"the lease of {who}, which is gone"
        if repair:
            bucket, key = path.split("/", 1)
            with suppress(OSError):  # only this very object: a new run's lease stays
                fs.call_s3("delete_object", Bucket=bucket, Key=key, IfMatch=etag)
                findings.append(Finding("stale-lease", url, None, "removed", True))
                continue
        findings.append(Finding("stale-lease", url, None, detail, repair="removes it"))
    return findings, live


def check_stored_warehouse(warehouse: str, repair: bool = False) -> list[Finding]:
    """Return the problems of a warehouse in object storage; with `repair`, remove what is
    safe to remove (a dead run's staging and lease)."""
    if not supports_leases(warehouse):
        raise ChesspipeError(f"{warehouse}: warehouse check reads folders and s3:// stores only")
    fs, root = filesystem(warehouse)
    with reporting(warehouse):
        staged = fs.glob(f"{root}/.staging/*")
        leases = fs.glob(f"{root}/.locks/*.lease")
    findings, live = _lease_findings(warehouse, fs, leases, repair)
    for path in staged:
        name = path.rsplit("/", 1)[-1]
        url = join(warehouse, f".staging/{name}")
        month = _month_of(name, _STAGING.pattern)
        if month is None:
            detail = "not a run's staging name; left alone"
            findings.append(Finding("unknown-staging", url, None, detail))
        elif month in live:
            findings.append(Finding("in-use", url, month, "a live run's staging, left alone"))
        elif repair:
            with ExitStack() as held:
                try:  # a run of the month that starts now is refused, or refuses this
                    held.enter_context(StoreLease(warehouse, month, what=f"month {month}"))
                except ChesspipeError:
                    findings.append(Finding("in-use", url, month, "month in use, skipped"))
                    continue
                with reporting(url):
                    fs.rm(path, recursive=True)
            findings.append(Finding("stale-staging", url, month, "removed", True))
        else:
            detail = "left by a dead run"
            findings.append(Finding("stale-staging", url, month, detail, repair="removes it"))
    have, described = listed_months(warehouse)
    for month in sorted(have | described):
        if month in live:
            continue  # being published
        partition = partition_url(warehouse, month)
        if month not in described:
            detail = (
                "a partition without its manifest (a run stopped while publishing): "
                "build the month again"
            )
            findings.append(Finding("no-manifest", partition, month, detail))
            continue
        if month not in have:
            manifest = manifest_url(warehouse, month)
            detail = "a manifest without its partition"
            findings.append(Finding("no-partition", manifest, month, detail))
            continue
        try:
            (pinned,) = pin_months(warehouse, [month])
        except DamagedMonth as exc:
            findings.append(Finding("size-mismatch", partition, month, exc.why))
            continue
        try:
            check_stored(warehouse, [pinned])
        except DamagedMonth:
            detail = "its sha256 is not the one its manifest records: build the month again"
            findings.append(Finding("sha256-mismatch", pinned.url, month, detail))
    findings += _explorer_findings(warehouse, fs, root, live)
    return findings


def _explorer_findings(warehouse: str, fs: Any, root: str, live: set[str]) -> list[Finding]:
    """The explorer's months in the bucket (`explorer/month=YYYY-MM/` and its manifest), as
    warehouse check finds them in a folder: files without their manifest, a manifest without
    its files, files that no longer have their recorded sha256 (each read whole)."""
    import json

    findings: list[Finding] = []
    with reporting(warehouse):
        names = [p.rsplit("/", 1)[-1] for p in fs.glob(f"{root}/explorer/month=*")]
    months = {n.removeprefix("month=").removesuffix(".json") for n in names}
    again = "index the month for the explorer again (build-month it again)"
    for month in sorted(m for m in months if MONTH_RE.fullmatch(m) and m not in live):
        folder = join(warehouse, f"explorer/month={month}")
        manifest = f"{folder}.json"
        with reporting(folder):
            present = {p.rsplit("/", 1)[-1] for p in fs.glob(f"{root}/explorer/month={month}/*")}
            recorded_text = (
                fs.cat(filesystem(manifest)[1]) if f"month={month}.json" in names else None
            )
        if recorded_text is None:
            if present:
                findings.append(
                    Finding(
                        "no-manifest", folder, month, f"explorer data without a manifest; {again}"
                    )
                )
            continue
        try:
            recorded = json.loads(recorded_text)
        except ValueError:
            recorded = None
        if not isinstance(recorded, dict):
            findings.append(Finding("bad-manifest", manifest, month, f"not a manifest; {again}"))
            continue
        files = recorded_file_names(recorded)
        missing = [name for name in files if name not in present]
        if missing:
            detail = f"explorer manifest without {', '.join(missing)}; {again}"
            findings.append(Finding("no-partition", manifest, month, detail))
            continue
        for name in files:
            field = SHA256_FIELDS[name]
            url = f"{folder}/{name}"
            if recorded.get(field) is not None and object_sha256(url) != recorded[field]:
                detail = f"does not match {field} of month={month}.json; {again}"
                findings.append(Finding("sha256-mismatch", url, month, detail))
    return findings
