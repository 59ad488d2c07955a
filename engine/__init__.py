"""chesspipe's UCI engine: plays Polyglot books, probes Syzygy tablebases, plays Chess960."""

from engine.chess960 import back_rank, start_board, start_fen

__version__ = "0.1.0"

__all__ = ["__version__", "back_rank", "start_board", "start_fen"]
