"""The C allocator's handling of large buffers, tuned for streaming many megabytes of text."""

from __future__ import annotations

import ctypes
import sys
from functools import cache

#: glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: Freed buffers up to this size stay with the process for reuse.
LARGE_BUFFER_BYTES = 256 << 20


@cache
def reuse_large_buffers() -> bool:
    """Keep freed large buffers for reuse instead of giving them back to the kernel at once.

    Decompressing and scanning allocate and free buffers of megabytes again and again; by
    default glibc maps and unmaps each one, and the kernel zeroes its pages every time (about
    a tenth of ingest's time). Return whether the setting took (only with glibc).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(
        mallopt(_M_MMAP_THRESHOLD, LARGE_BUFFER_BYTES)
        and mallopt(_M_TRIM_THRESHOLD, LARGE_BUFFER_BYTES)
    )
