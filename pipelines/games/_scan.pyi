"""Types of the compiled fast path of the game filter (`_scan.c`); `game_filter.py` and
`scan.py` are its Python face."""

from typing import Any

def scan_block(
    block: bytes, max_game_bytes: int, rules: tuple[object, ...], with_text: bool, /
) -> tuple[list[Any], tuple[int, ...]]: ...
def decide_game(game: bytes, rules: tuple[object, ...], /) -> tuple[Any, tuple[int, ...]]: ...
def comments_span_lines(text: bytes, /) -> bool: ...
