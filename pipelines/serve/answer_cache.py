"""The explorer's answer cache: encoded answers, least recently used dropped first, bounded in
bytes (the answers' and their keys' sizes as Python holds them), safe across threads."""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable

#: Memory for cached answers by default (bytes).
CACHE_BYTES = 64 * 1024 * 1024
#: What an entry costs beyond its answer and key: the dictionary's slot and links.
ENTRY_OVERHEAD = 200


def _size(key: Hashable, value: bytes) -> int:
    parts = key if isinstance(key, tuple) else (key,)
    return ENTRY_OVERHEAD + sys.getsizeof(value) + sum(sys.getsizeof(p) for p in parts)


class AnswerCache:
    """Encoded answers by key, at most `max_bytes` of them (0: nothing is kept)."""

    def __init__(self, *, max_bytes: int = CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"a cache of {max_bytes} bytes: it must be 0 or more")
        self.max_bytes = max_bytes
        self.bytes = 0
        self._entries: OrderedDict[Hashable, tuple[bytes, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> bytes | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: bytes) -> None:
        """Keep an answer (not when it alone is larger than the cache)."""
        size = _size(key, value)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self.bytes -= dropped
