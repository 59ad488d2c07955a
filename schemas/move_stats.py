"""Move statistics: games per (Polyglot key, Polyglot move) and dimension, as Parquet."""

from __future__ import annotations

import pyarrow as pa

#: One row per (key, move, speed, rating band, rating group) in a month; results from the
#: mover's view. Months ingested before `rating_group` and `rating_sum` existed lack both
#: columns (readers take them as null); books use neither. Months ingested before `first_play`
#: existed lack it (null): their books order moves of equal weight by move. A compacted year
#: whose months do not all have it holds it as null. `white_to_move` (whose move it is in the
#: position; a Polyglot key does not say) likewise: null in months ingested before it, where a
#: book of one side finds it by walking the statistics (pipelines.books.sides).
MOVE_STATS_SCHEMA = pa.schema(
    [
        pa.field("key", pa.uint64(), nullable=False),
        pa.field("move", pa.uint16(), nullable=False),
        pa.field("speed", pa.string(), nullable=False),
        pa.field("rating_band", pa.uint16(), nullable=False),
        pa.field("rating_group", pa.uint16(), nullable=False),
        pa.field("games", pa.uint64(), nullable=False),
        pa.field("wins", pa.uint64(), nullable=False),
        pa.field("draws", pa.uint64(), nullable=False),
        pa.field("losses", pa.uint64(), nullable=False),
        pa.field("rating_sum", pa.uint64(), nullable=False),
        pa.field("first_play", pa.uint64(), nullable=True),
        pa.field("white_to_move", pa.bool_(), nullable=True),
    ],
    metadata={
        b"description": b"Polyglot key of the position before the move, Polyglot move, "
        b"speed category, rating band of the lower-rated player, Lichess rating group of the "
        b"players' average rating (schemas.dimensions.RATING_GROUPS), game counts with "
        b"wins/draws/losses for the side that played the move, the sum of the mover's "
        b"rating over the games (Lichess's averageRating is rating_sum / games), and the "
        b"first-play rank: the least place in the source's file order of the plies counted "
        b"(schemas.first_play), by which books order moves of equal weight as "
        b"PolyGlot's make-book does; whether White is to move in the position.",
    },
)
