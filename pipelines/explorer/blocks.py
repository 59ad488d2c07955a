"""Sorted block files: a table's rows sorted by an unsigned key, in checksummed blocks, read
by key from disk.

The explorer's server reads a position's counts and a game's record from these: a read is a
binary search in the blocks' first keys (memory-mapped, so the server's memory does not grow
with the file) and one or two blocks read, checked and decompressed, a few hundred
microseconds; DuckDB's point query costs about two milliseconds.

    MAGIC;
    per block: length (u32 LE), CRC-32 of the bytes (u32 LE), the block: an Arrow IPC stream of
        one record batch, compressed by zstd;
    the blocks' first keys (u64 LE each), then their offsets (u64 LE each);
    the footer: rows (u64), blocks (u64), CRC-32 of the keys and offsets (u32), 4 zero bytes,
        MAGIC.

A file is checked when opened (its end mark, its blocks' table against its CRC: DamagedBlocks)
and each block when read, so a damaged file is refused or answers an error, never other rows.
"""

from __future__ import annotations

import itertools
import os
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pyarrow as pa
import zstandard

from pipelines import arrow_arrays as arrays
from pipelines.errors import ChesspipeError

MAGIC = b"CPBLKS01"
_HEAD = struct.Struct("<II")
_FOOT = struct.Struct("<QQII8s")
#: Bytes of decoded blocks a process keeps, the latest used, whatever the number of files open
#: (a server over 48 months opens 96 of them; a count per reader held 1.1 GB).
CACHE_BYTES = 128 << 20


class DamagedBlocks(ChesspipeError):
    """A block file, or one of its blocks, is not as written."""


class BlockWriter:
    """Writes rows sorted by `key` (a uint64 column) into a block file, `block_rows` a block."""

    def __init__(self, path: Path, key: str, *, block_rows: int = 2048) -> None:
        self.key = key
        self.block_rows = block_rows
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._file.write(MAGIC)
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self._firsts: list[int] = []
        self._offsets: list[int] = []
        self._rows = 0
        self._last: int | None = None
        self._compressor = zstandard.ZstdCompressor(level=3)

    def write(self, batches: Iterable[pa.RecordBatch]) -> None:
        """Add rows (after those written, not before: keys never go down)."""
        for batch in batches:
            if batch.num_rows:
                self._pending.append(batch)
                self._pending_rows += batch.num_rows
                while self._pending_rows >= self.block_rows:
                    self._emit(self.block_rows)

    def _emit(self, rows: int) -> None:
        table = pa.Table.from_batches(self._pending)
        block, rest = table.slice(0, rows), table.slice(rows)
        self._pending = rest.to_batches()
        self._pending_rows = rest.num_rows
        batch = block.combine_chunks().to_batches()[0]
        keys = arrays.numbers(batch.column(self.key))
        first = int(keys[0])
        if (self._last is not None and first < self._last) or np.any(keys[1:] < keys[:-1]):
            raise ValueError(f"rows are not sorted by {self.key}")
        self._last = int(keys[-1])
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, batch.schema) as stream:
            stream.write_batch(batch)
        data = self._compressor.compress(sink.getvalue().to_pybytes())
        self._firsts.append(first)
        self._offsets.append(self._file.tell())
        self._file.write(_HEAD.pack(len(data), zlib.crc32(data)))
        self._file.write(data)
        self._rows += batch.num_rows

    def close(self) -> int:
        """Write what is pending and the footer; return the rows written."""
        if self._pending_rows:
            self._emit(self._pending_rows)
        count = len(self._firsts)
        table = struct.pack(f"<{count}Q", *self._firsts) + struct.pack(f"<{count}Q", *self._offsets)
        self._file.write(table)
        self._file.write(_FOOT.pack(self._rows, count, zlib.crc32(table), 0, MAGIC))
        self._file.close()
        return self._rows


class BlockCache:
    """Decoded blocks of any number of files, the latest used, up to `limit` bytes in all."""

    def __init__(self, limit: int = CACHE_BYTES) -> None:
        self.limit = limit
        self.bytes = 0
        self._blocks: OrderedDict[tuple[int, int], pa.RecordBatch] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, int]) -> pa.RecordBatch | None:
        with self._lock:
            found = self._blocks.get(key)
            if found is not None:
                self._blocks.move_to_end(key)
            return found

    def put(self, key: tuple[int, int], batch: pa.RecordBatch) -> None:
        with self._lock:
            if key in self._blocks:
                return
            self._blocks[key] = batch
            self.bytes += batch.nbytes
            while self.bytes > self.limit and self._blocks:
                _, dropped = self._blocks.popitem(last=False)
                self.bytes -= dropped.nbytes

    def resize(self, limit: int) -> None:
        """Hold at most `limit` bytes from now on (the least recently used dropped first)."""
        with self._lock:
            self.limit = limit
            while self.bytes > self.limit and self._blocks:
                _, dropped = self._blocks.popitem(last=False)
                self.bytes -= dropped.nbytes

    def drop(self, owner: int) -> None:
        """Forget the blocks of one file (its reader closed)."""
        with self._lock:
            for key in [key for key in self._blocks if key[0] == owner]:
                self.bytes -= self._blocks.pop(key).nbytes


#: The process's cache, shared by its readers.
SHARED_CACHE = BlockCache()
_owners = itertools.count()


class BlockReader:
    """Reads the rows of a block file by key; blocks are checked when read, and cached (in
    `cache`, by default the process's one: its memory does not grow with the files open)."""

    def __init__(self, path: Path, key: str, *, cache: BlockCache | None = None) -> None:
        self.path = Path(path)
        self.key = key
        self._fd = os.open(path, os.O_RDONLY)
        try:
            self._open()
        except BaseException:
            os.close(self._fd)
            raise
        self._cache = cache if cache is not None else SHARED_CACHE
        self._owner = next(_owners)
        self._local = threading.local()

    def _open(self) -> None:
        size = os.fstat(self._fd).st_size
        if size < len(MAGIC) + _FOOT.size or os.pread(self._fd, len(MAGIC), 0) != MAGIC:
            raise DamagedBlocks(f"{self.path} is not a block file, or is cut short")
        rows, blocks, crc, _, magic = _FOOT.unpack(
            os.pread(self._fd, _FOOT.size, size - _FOOT.size)
        )
        table_at = size - _FOOT.size - 16 * blocks
        if magic != MAGIC or table_at < len(MAGIC):
            raise DamagedBlocks(f"{self.path} is not whole (no end mark)")
        if _crc_of_range(self._fd, table_at, 16 * blocks) != crc:
            raise DamagedBlocks(f"{self.path}: its table of blocks does not match its checksum")
        self.row_count = rows
        self._blocks = blocks
        self._end = table_at
        if blocks:
            mapped = np.memmap(
                self.path, dtype="<u8", mode="r", offset=table_at, shape=(2 * blocks,)
            )
            self._firsts, self._offsets = mapped[:blocks], mapped[blocks:]
        else:
            self._firsts = self._offsets = np.zeros(0, dtype="<u8")

    def close(self) -> None:
        self._cache.drop(self._owner)
        os.close(self._fd)

    def block(self, number: int) -> pa.RecordBatch:
        """Block `number`, read and checked (or from the cache)."""
        found = self._cache.get((self._owner, number))
        if found is not None:
            return found
        batch = self._read(number)
        self._cache.put((self._owner, number), batch)
        return batch

    def _read(self, number: int) -> pa.RecordBatch:
        """Block `number`, read and checked."""
        at = int(self._offsets[number])
        head = os.pread(self._fd, _HEAD.size, at)
        length, crc = _HEAD.unpack(head) if len(head) == _HEAD.size else (0, 1)
        data = os.pread(self._fd, length, at + _HEAD.size)
        end = at + _HEAD.size + length
        if len(data) != length or end > self._end or zlib.crc32(data) != crc:
            raise DamagedBlocks(
                f"{self.path}: block {number} does not match its checksum; "
                "run chesspipe warehouse check"
            )
        decompressor = getattr(self._local, "decompressor", None)
        if decompressor is None:
            decompressor = self._local.decompressor = zstandard.ZstdDecompressor()
        return pa.ipc.open_stream(decompressor.decompress(data)).read_next_batch()

    def batches(self) -> pa.RecordBatchReader:
        """Every row, block by block (each checked), as a reader of record batches."""
        if not self._blocks:
            raise DamagedBlocks(f"{self.path} has no rows to read")
        schema = self.block(0).schema
        return pa.RecordBatchReader.from_batches(
            schema, (self._read(n) for n in range(self._blocks))
        )

    def row(self, key: int) -> tuple[pa.RecordBatch, int] | None:
        """The block and row of the one row whose key is `key`, in a file whose keys are
        unique (None: no such row)."""
        if not self._blocks:
            return None
        number = int(np.searchsorted(self._firsts, np.uint64(key), "right")) - 1
        if number < 0:
            return None
        batch = self.block(number)
        keys = arrays.numbers(batch.column(self.key))
        place = int(np.searchsorted(keys, np.uint64(key), "left"))
        if place >= len(keys) or int(keys[place]) != key:
            return None
        return batch, place

    def rows(self, key: int) -> pa.Table | None:
        """The rows whose key is `key` (None: none)."""
        if not self._blocks:
            return None
        firsts = self._firsts
        value = np.uint64(key)
        # Blocks that may hold the key: from the last starting before it to the last starting
        # at it.
        low = max(int(np.searchsorted(firsts, value, "left")) - 1, 0)
        high = int(np.searchsorted(firsts, value, "right"))
        parts = []
        for number in range(low, high):
            batch = self.block(number)
            keys = batch.column(self.key).to_numpy()
            start = int(np.searchsorted(keys, value, "left"))
            stop = int(np.searchsorted(keys, value, "right"))
            if stop > start:
                parts.append(batch.slice(start, stop - start))
        return pa.Table.from_batches(parts) if parts else None


def _crc_of_range(fd: int, start: int, length: int) -> int:
    crc = 0
    done = 0
    while done < length:
        chunk = os.pread(fd, min(1 << 20, length - done), start + done)
        if not chunk:
            break
        crc = zlib.crc32(chunk, crc)
        done += len(chunk)
    return crc
