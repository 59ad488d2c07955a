"""`chesspipe syzygy`: getting Syzygy tablebases."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pipelines.commands.options import add_action, add_actions, add_file_roles, non_negative_int


def register(subparsers: Any) -> None:
    from pipelines.endgames.syzygy_download import DEFAULT_BASE_URL, DEFAULT_CHECKSUMS_URL
    from pipelines.sources.retry import RETRIES

    actions = add_actions(
        subparsers, "syzygy", dest="syzygy_command", help="download Syzygy tablebases"
    )
    download = add_action(
        actions,
        "download",
        run_download,
        help="fetch a set of tables from a public mirror (resumable, checksummed)",
        description="Download the tables of a set into DIR from a mirror with the public layout, "
        "resuming partial files, checking each against the published SHA-256 list and skipping "
        "files already complete. Then point --syzygy or SYZYGY_PATH at DIR.",
    )
    download.add_argument("dir", type=Path)
    add_file_roles(download, writes=("dir",))
    download.add_argument(
        "--set",
        dest="set_name",
        default="3-4-5",
        choices=("3-4", "3-4-5", "6"),
        help="3-4-5 (about 1 GB, default), 6 (about 150 GB), or 3-4",
    )
    download.add_argument("--base-url", default=DEFAULT_BASE_URL, help="mirror root")
    download.add_argument(
        "--checksums",
        default=DEFAULT_CHECKSUMS_URL,
        help="SHA-256 list (URL or file), '<sha256>  <name>' lines",
    )
    download.add_argument(
        "--retries", type=non_negative_int, default=RETRIES, help=f"retries per file ({RETRIES})"
    )
    download.add_argument("--yes", action="store_true", help="go ahead when space looks short")
    download.add_argument("--quiet", action="store_true", help="no progress output")


def run_download(args: argparse.Namespace) -> int:
    from pipelines.endgames.syzygy_download import SETS, DownloadProgress, check_space, download_set
    from pipelines.errors import ChesspipeError

    free = check_space(args.dir, args.set_name)
    present = sum(p.stat().st_size for p in args.dir.glob("*.rtb[wz]")) if args.dir.is_dir() else 0
    needed = SETS[args.set_name][1] - present
    if free < needed and not args.yes:
        raise ChesspipeError(
            f"set {args.set_name} needs about {needed / (1 << 30):.1f} GiB and only "
            f"{free / (1 << 30):.1f} GiB are free; pass --yes to try anyway"
        )
    bar = None if args.quiet else DownloadProgress(sys.stderr)
    try:
        summary = download_set(
            args.dir, args.set_name, args.base_url, args.checksums, bar, args.retries
        )
    finally:
        if bar is not None:
            bar.close()
    print(json.dumps(summary, indent=2))
    return 0
