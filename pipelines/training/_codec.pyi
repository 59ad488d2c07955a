"""Types of the compiled `.plain` <-> `.binpack` codec (`_codec.c`); `codec.py` is its Python
face."""

from typing_extensions import Buffer

#: (block, bits, bit count, plies, started, fen or None, move, ply, result, last): WriterState.
_State = tuple[bytes, bytes, int, int, bool, str | None, str, int, int, int]

class Encoder:
    """A .binpack writer of canonical .plain text, block by block as BinpackWriter."""

    def __init__(self) -> None: ...
    def encode(self, data: Buffer, start: int, limit: int, /) -> tuple[int, int, int, bytes]:
        """Encode up to `limit` whole records from data[start:]; return the position reached,
        the records taken, why it stopped (0 the limit, 1 a record it refuses, 2 an unfinished
        record or the end) and the whole blocks written."""
    def close(self) -> bytes:
        """End the last chain; return the last block."""
    def state(self) -> _State: ...
    def set_state(self, state: _State, /) -> bool:
        """Go on from a writer's state; False (nothing changed) if this code does not take it."""

def decode_block(block: Buffer, /) -> tuple[bytes, int] | None:
    """A block's records as .plain text and their count, or None if this code refuses it."""
