"""The 16-byte Polyglot book entry's layout: one definition, with no library needed to read it.

`schemas.polyglot.ENTRY_DTYPE` (NumPy) and the hex format `book build` writes with DuckDB both
derive from it; it lives apart so that `book build` need not import NumPy or python-chess.
"""

#: (field, bytes) in file order, each an unsigned big-endian integer.
ENTRY_FIELDS = (("key", 8), ("move", 2), ("weight", 2), ("learn", 4))

#: An entry as hex digits, for printf-style formatting of the fields in order (SQL, say).
ENTRY_HEX_FORMAT = "".join(f"%0{2 * size}x" for _, size in ENTRY_FIELDS)
