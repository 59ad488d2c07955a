"""What the subcommands share about options, in one place: the argparse `type=` checks (every
command reads numbers alike) and the flag of each setting (`SETTING_FLAGS`: a settings error
names the flag, not the setting)."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pipelines.errors import ChesspipeError, SettingError

_INTEGER = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: int() also takes "３" and "٣"
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def integer(text: str) -> int:
    """Any integer (a seed), in ASCII digits."""
    if not _INTEGER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    return int(text)


def positive_int(text: str) -> int:
    """An integer of at least 1."""
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An integer of at least 0."""
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text!r}")
    return value


def fraction(text: str) -> float:
    """A number from 0 to 1."""
    if not _NUMBER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    value = float(text)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text!r}")
    return value


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An integer from `low` to `high` (both included)."""

    def check(text: str) -> int:
        value = integer(text)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}, got {text!r}")
        return value

    check.__name__ = f"int_range({low}, {high})"
    return check


#: A TCP port to listen on.
port = int_range(1, 65535)


def positive_number(text: str) -> float:
    """A finite number above 0 (seconds, say)."""
    if not _NUMBER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}")
    value = float(text)
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
    return value


#: The flag that sets each setting, by "Settings.field" (the settings dataclass's name): what
#: a command calls a setting in its messages. A setting without a flag here keeps its name.
SETTING_FLAGS = {
    "GameFilter.min_rating": "--min-rating",
    "GameFilter.speeds": "--speeds",
    "IngestSettings.plies": "--plies",
    "BookSettings.min_games": "--min-games",
    "BookSettings.min_score": "--min-score",
    "BookSettings.speeds": "--book-speeds",
    "BookSettings.min_band": "--min-band",
    "ReportSettings.plies": "--plies",
    "ReportSettings.width": "--width",
    "ReportSettings.max_plies": "--max-plies",
    "ReportSettings.max_positions": "--max-positions",
    "DumpSettings.plies": "--depth",
    "DumpSettings.min_weight": "--min-weight",
}


@contextmanager
def settings_as_flags() -> Iterator[None]:
    """Re-raise a SettingError as the command line's error, naming the setting's flag."""
    try:
        yield
    except SettingError as exc:
        raise ChesspipeError(exc.named(SETTING_FLAGS)) from None
