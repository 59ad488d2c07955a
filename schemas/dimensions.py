"""The dimensions move statistics are kept by: speed categories and rating bands."""

#: Width of a rating band: the lower-rated player's rating floored to this step.
RATING_BAND_WIDTH = 100

#: The largest rating kept in rating sums (16 bits, as Lichess keeps ratings); a header with a
#: larger number counts as this.
MAX_RATING = 65535

#: Lichess's explorer rating groups (lower bounds), as lila-openingexplorer's `RatingGroup`
#: defines them: a game belongs to the group of its players' average rating (the midpoint,
#: rounded down). Lichess's groups 2800 and 3200 answer as 2500, so 2500 holds 2500 and above.
RATING_GROUPS = (0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500)


def rating_group(rating: int) -> int:
    """The rating group (lower bound) a rating falls in: 1599 -> 1400, 2900 -> 2500."""
    found = RATING_GROUPS[0]
    for bound in RATING_GROUPS:
        if rating >= bound:
            found = bound
    return found


def average_rating_group(white_elo: int, black_elo: int) -> int:
    """The rating group of a game: its players' average rating (rounded down), grouped."""
    return rating_group((white_elo + black_elo) // 2)
