"""The dimensions move statistics are kept by: speed categories and rating bands."""

from itertools import pairwise
from typing import Any, TypeVar

#: A rating, or a NumPy array of ratings: the rules below read both alike.
Rating = TypeVar("Rating", int, Any)

#: Width of a rating band: the lower-rated player's rating floored to this step.
RATING_BAND_WIDTH = 100

#: The largest rating kept in rating sums (16 bits, as Lichess keeps ratings); a header with a
#: larger number counts as this.
MAX_RATING = 65535

#: Lichess's explorer rating groups (lower bounds), as lila-openingexplorer's `RatingGroup`
#: defines them: a game belongs to the group of its players' average rating (the midpoint,
#: rounded down). Lichess's groups 2800 and 3200 answer as 2500, so 2500 holds 2500 and above.
RATING_GROUPS = (0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500)


#: Each group's lower bound with what it adds to the one below (sums of these pick a group).
_GROUP_STEPS = tuple((high, high - low) for low, high in pairwise(RATING_GROUPS))


def rating_band(lower: Rating) -> Rating:
    """The rating band of a game whose lower-rated player has rating `lower` (at most
    MAX_RATING): floored to the band width. An int, or a NumPy array of them."""
    return lower // RATING_BAND_WIDTH * RATING_BAND_WIDTH


def rating_group(rating: Rating) -> Rating:
    """The rating group (lower bound) a rating falls in: 1599 -> 1400, 2900 -> 2500. An int,
    or a NumPy array of them."""
    return sum(((rating >= bound) * step for bound, step in _GROUP_STEPS), RATING_GROUPS[0])


def average_rating_group(white_elo: Rating, black_elo: Rating) -> Rating:
    """The rating group of a game: its players' average rating (rounded down), grouped. Ints,
    or NumPy arrays of them."""
    return rating_group((white_elo + black_elo) // 2)
