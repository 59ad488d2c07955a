"""Arrow arrays built from buffers (pipelines/arrow_arrays.py) hold what pyarrow's own
conversions make of the same values, read back through Arrow's `to_pylist`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pipelines import arrow_arrays as arrays


def test_arrays_built_from_buffers_equal_pyarrows_own() -> None:
    rng = np.random.default_rng(5)
    texts = ["", "é", 'a"b\\', None, "𝄞 long text", *(str(n) for n in range(300))]
    assert arrays.strings(texts).to_pylist() == pa.array(texts, pa.string()).to_pylist()
    assert arrays.strings(texts).null_count == 1
    elos = [None, 0, 1500, 65535, *rng.integers(0, 3000, 200).tolist(), None]
    made = arrays.optional_integers(elos, np.uint16)
    assert made.type == pa.uint16() and made.to_pylist() == elos
    flags = rng.integers(0, 2, 77).astype(bool)
    assert arrays.booleans(flags).to_pylist() == flags.tolist()
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        values = rng.integers(0, np.iinfo(dtype).max, 123, dtype=dtype, endpoint=True)
        made = arrays.integers(values)
        assert made.to_pylist() == values.tolist()
        assert arrays.numbers(made).tolist() == values.tolist()
        assert arrays.numbers(made.slice(7, 50)).tolist() == values[7:57].tolist()
        chunked = pa.chunked_array([made.slice(0, 10), made.slice(60, 3)])
        assert arrays.numbers(chunked).tolist() == [*values[:10].tolist(), *values[60:63]]
    with pytest.raises(ValueError, match="nulls"):
        arrays.numbers(arrays.optional_integers([1, None], np.uint16))
