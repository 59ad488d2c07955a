"""Errors that end a command with a one-line reason."""

from __future__ import annotations

import os
from collections.abc import Mapping


class ChesspipeError(Exception):
    """A failure the user can act on; its message is the one-line reason."""


class UsageError(ChesspipeError):
    """What was asked cannot be read (a query, a combination of options): the command exits
    with 2, as for a bad option."""


class CorruptInput(ChesspipeError):
    """An input stream is truncated or not what it claims to be."""


class CutShort(CorruptInput):
    """A source ends inside a game, so nothing was published; a month built with keep_partial
    keeps what was read (the command line says how: `commands/options.as_said`)."""


class SettingError(ChesspipeError, ValueError):
    """A setting's value is refused by the settings that own it (a frozen settings dataclass).

    `settings` names the dataclass, `field` the setting and `reason` what is wrong with it: the
    message reads "FIELD REASON" ("plies must be at least 1"). A message that reads otherwise is
    given whole as `says`, naming the settings it speaks of (`field` and `also`) as `{name}`.
    Library messages name settings; the command line calls them by their flags
    (`pipelines.commands.options.SETTING_FLAGS`, through `named`). A ValueError too, as
    settings errors were: `except ValueError` still catches it.
    """

    def __init__(
        self,
        settings: str,
        field: str,
        reason: str = "",
        *,
        says: str | None = None,
        also: tuple[str, ...] = (),
    ) -> None:
        self.settings = settings
        self.field = field
        self.reason = reason
        self.says = says
        self.also = also
        super().__init__(self.named({}))

    def __reduce__(self) -> tuple[object, ...]:
        return _setting_error, (self.settings, self.field, self.reason, self.says, self.also)

    def named(self, names: Mapping[str, str]) -> str:
        """The message, each setting called by `names["Settings.field"]` where it has one."""

        def call(field: str) -> str:
            return names.get(f"{self.settings}.{field}", field)

        if self.says is None:
            return f"{call(self.field)} {self.reason}"
        message = self.says
        for field in (self.field, *self.also):
            message = message.replace(f"{{{field}}}", call(field))
        return message


def _setting_error(
    settings: str, field: str, reason: str, says: str | None, also: tuple[str, ...]
) -> SettingError:
    return SettingError(settings, field, reason, says=says, also=also)


class Stopped(BaseException):
    """The command was asked to stop by a signal (SIGTERM); it ends as the signal would.

    A BaseException, as KeyboardInterrupt is: no `except Exception` of a library swallows it,
    and what is being written is left unpublished on the way out.
    """

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


def write_error(exc: OSError, out: str | os.PathLike[str]) -> ChesspipeError:
    """The one line for an OSError met while a command wrote `out`: it names the file the
    error names (a source that cannot be read, a sidecar in the way), else `out`."""
    reason = exc.strerror or str(exc)
    named = exc.filename
    if named is None or os.path.abspath(named) == os.path.abspath(out):
        return ChesspipeError(f"cannot write {out}: {reason}")
    return ChesspipeError(f"{named}: {reason}")
