"""Rating bands and groups: one rule for a game and for a batch of games."""

from __future__ import annotations

import numpy as np

from schemas.dimensions import RATING_GROUPS, average_rating_group, rating_band, rating_group

RATINGS = [*range(0, 3200), 65534, 65535]


def lowest_bound_reached(rating: int) -> int:
    return max(bound for bound in RATING_GROUPS if rating >= bound)


def test_a_rating_and_an_array_of_ratings_get_the_same_group_and_band() -> None:
    array = np.array(RATINGS, dtype=np.int64)
    assert [rating_group(r) for r in RATINGS] == [lowest_bound_reached(r) for r in RATINGS]
    assert rating_group(array).tolist() == [lowest_bound_reached(r) for r in RATINGS]
    assert all(type(rating_group(r)) is int for r in (0, 999, 1000, 2499, 2500))
    assert rating_band(array).tolist() == [rating_band(r) for r in RATINGS]
    bands = [rating_band(r) for r in (0, 99, 100, 2199, 2200, 65535)]
    assert bands == [0, 0, 100, 2100, 2200, 65500]
    white, black = array, array[::-1].copy()
    assert average_rating_group(white, black).tolist() == [
        lowest_bound_reached((w + b) // 2) for w, b in zip(RATINGS, RATINGS[::-1], strict=True)
    ]
