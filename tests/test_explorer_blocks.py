"""The explorer's block files (`pipelines.explorer.blocks`): a key's rows read back are the
rows pyarrow's own filter finds in what was written, keys spread over block edges included,
and the decoded blocks a process keeps stay within one budget however many files it reads."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipelines.explorer.blocks import BlockCache, BlockReader, BlockWriter, DamagedBlocks


def table(seed: int, rows: int = 20_000) -> pa.Table:
    """Sorted keys, many repeated (a popular position's rows cross block edges)."""
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.integers(0, 2**64 - 1, size=rows // 4, dtype=np.uint64))
    keys = np.sort(np.concatenate([keys, np.repeat(keys[:50], 60)]))[:rows]
    return pa.table({"key": pa.array(keys), "value": pa.array(rng.integers(0, 1000, len(keys)))})


def write(path: Path, data: pa.Table, block_rows: int = 256) -> Path:
    writer = BlockWriter(path, "key", block_rows=block_rows)
    writer.write(data.to_batches(max_chunksize=1000))
    assert writer.close() == data.num_rows
    return path


def test_a_keys_rows_are_the_filters_and_the_cache_holds_its_budget(tmp_path: Path) -> None:
    cache = BlockCache(limit=256 << 10)
    datas = [table(seed) for seed in range(3)]
    readers = [
        BlockReader(write(tmp_path / f"{n}.bin", data), "key", cache=cache)
        for n, data in enumerate(datas)
    ]
    rng = np.random.default_rng(7)
    for data, reader in zip(datas, readers, strict=True):
        keys = data.column("key").to_numpy()
        edges = np.array([0, 2**64 - 1, keys[0] + 1], dtype=np.uint64)
        asked = np.concatenate([keys[:50], rng.choice(keys, 200), edges])
        for key in asked:
            expected = data.filter(pc.equal(data.column("key"), pa.scalar(int(key), pa.uint64())))
            got = reader.rows(int(key))
            if expected.num_rows == 0:
                assert got is None
            else:
                assert got is not None and got.combine_chunks() == expected.combine_chunks()
            assert cache.bytes <= cache.limit
        assert reader.row_count == data.num_rows
        assert pa.Table.from_batches(list(reader.batches())) == data.combine_chunks()
    assert cache.bytes > 0
    for reader in readers:
        reader.close()
    assert cache.bytes == 0


def test_a_damaged_block_is_an_error_not_other_rows(tmp_path: Path) -> None:
    data = table(1)
    path = write(tmp_path / "c.bin", data)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 3] ^= 0xFF
    path.write_bytes(bytes(raw))
    reader = BlockReader(path, "key", cache=BlockCache())
    with pytest.raises(DamagedBlocks, match="checksum"):
        for key in data.column("key").to_numpy()[::50]:
            reader.rows(int(key))
    reader.close()
    path.write_bytes(bytes(raw[:-10]))
    with pytest.raises(DamagedBlocks, match="not whole|cut short"):
        BlockReader(path, "key")
