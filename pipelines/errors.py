"""Errors that end a command with a one-line reason."""


class ChesspipeError(Exception):
    """A failure the user can act on; its message is the one-line reason."""


class CorruptInput(ChesspipeError):
    """An input stream is truncated or not what it claims to be."""


class Stopped(BaseException):
    """The command was asked to stop by a signal (SIGTERM); it ends as the signal would.

    A BaseException, as KeyboardInterrupt is: no `except Exception` of a library swallows it,
    and what is being written is left unpublished on the way out.
    """

    def __init__(self, signum: int) -> None:
        import signal

        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum
