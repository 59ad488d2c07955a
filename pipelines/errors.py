"""Errors that end a command with a one-line reason."""


class ChesspipeError(Exception):
    """A failure the user can act on; its message is the one-line reason."""


class CorruptInput(ChesspipeError):
    """An input stream is truncated or not what it claims to be."""
