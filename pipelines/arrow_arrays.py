"""Arrow arrays built from their buffers, from NumPy columns and Python lists.

`pa.array` (and `pa.scalar`) import pandas when it is installed, to ask whether their input is
a pandas object: about 0.4 s of a command's start (1.2 s without bytecode files), in every
process that calls them, workers included. The writers of ingest and of the explorer's index
build their arrays here instead, from buffers, which imports nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

#: Arrow types of the NumPy integer types these columns use, and back.
_TYPES: dict[np.dtype, pa.DataType] = {
    np.dtype(np.uint64): pa.uint64(),
    np.dtype(np.uint32): pa.uint32(),
    np.dtype(np.uint16): pa.uint16(),
    np.dtype(np.uint8): pa.uint8(),
}
_NUMPY_TYPES = {arrow: dtype for dtype, arrow in _TYPES.items()}


def validity(present: np.ndarray) -> pa.Buffer | None:
    """The validity bitmap of a column (None: every value present)."""
    return _validity(present)


def _validity(present: np.ndarray) -> pa.Buffer | None:
    """The validity bitmap of a column (None: every value present)."""
    if present.all():
        return None
    return pa.py_buffer(np.packbits(present, bitorder="little"))


def integers(values: np.ndarray, present: np.ndarray | None = None) -> pa.Array:
    """An integer array over a NumPy column (`present`: False where the value is null)."""
    values = np.ascontiguousarray(values)
    validity = None if present is None else _validity(present)
    return pa.Array.from_buffers(
        _TYPES[values.dtype], len(values), [validity, pa.py_buffer(values)]
    )


def booleans(values: np.ndarray) -> pa.Array:
    """A boolean array over a NumPy bool column (no nulls)."""
    bits = np.packbits(np.asarray(values, dtype=bool), bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def strings(values: Sequence[str | None]) -> pa.Array:
    """A string array of Python strings (None: null)."""
    encoded = [b"" if value is None else value.encode() for value in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(text) for text in encoded], out=offsets[1:])
    present = np.fromiter((value is not None for value in values), bool, len(values))
    buffers = [_validity(present), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(encoded), buffers)


def binaries(values: Sequence[bytes]) -> pa.Array:
    """A binary array of byte strings."""
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum([len(value) for value in values], out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))]
    return pa.Array.from_buffers(pa.binary(), len(values), buffers)


def optional_integers(values: Sequence[int | None], dtype: type[np.unsignedinteger]) -> pa.Array:
    """An integer array of Python integers (None: null) of a NumPy type."""
    present = np.fromiter((value is not None for value in values), bool, len(values))
    numbers = np.fromiter((value or 0 for value in values), dtype, len(values))
    return integers(numbers, present)


def numbers(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of an integer array without nulls, as NumPy's (`to_numpy` imports pandas)."""
    if isinstance(array, pa.ChunkedArray):
        parts = [numbers(chunk) for chunk in array.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, _NUMPY_TYPES[array.type])
    if array.null_count:
        raise ValueError("an integer array with nulls")
    dtype = _NUMPY_TYPES[array.type]
    data = array.buffers()[1]
    if data is None:
        return np.zeros(0, dtype)
    return np.frombuffer(data, dtype, count=len(array), offset=array.offset * dtype.itemsize)


def truths(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a boolean array as NumPy's, null as False (`to_numpy` imports pandas)."""
    if isinstance(array, pa.ChunkedArray):
        parts = [truths(chunk) for chunk in array.chunks]
        return np.concatenate(parts) if parts else np.zeros(0, bool)
    validity, data = array.buffers()[:2]
    if data is None or not len(array):
        return np.zeros(len(array), bool)

    def bits(buffer: pa.Buffer) -> np.ndarray:
        unpacked = np.unpackbits(np.frombuffer(buffer, np.uint8), bitorder="little")
        return unpacked[array.offset : array.offset + len(array)].astype(bool)

    found = bits(data)
    return found & bits(validity) if validity is not None else found


def int_lists(values: Sequence[Sequence[int] | None]) -> pa.Array:
    """A list<int32> array of Python lists (None: null)."""
    present = np.fromiter((value is not None for value in values), bool, len(values))
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum([len(value or ()) for value in values], out=offsets[1:])
    flat = np.fromiter((v for value in values for v in value or ()), np.int32, int(offsets[-1]))
    items = pa.Array.from_buffers(pa.int32(), len(flat), [None, pa.py_buffer(flat)])
    return pa.ListArray.from_buffers(
        pa.list_(pa.int32()), len(values), [_validity(present), pa.py_buffer(offsets)],
        children=[items],
    )  # fmt: skip
