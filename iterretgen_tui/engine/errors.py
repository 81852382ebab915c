"""The errors a user can act on. One root, so the CLI catches them once and the app shows
them once; each message says what happened and what to do. Kept free of heavy imports:
the CLI imports this module before anything slow has loaded."""


class IterRetGenError(Exception):
    """The root of every error a user may see."""


class ConfigError(IterRetGenError, ValueError):
    """A setting or option has a value we cannot use; the message names it."""


class DeviceUnavailable(IterRetGenError, RuntimeError):
    """The device asked for cannot be used by this installation."""


class ReaderServerError(IterRetGenError, RuntimeError):
    """The reader server (--llm-server) cannot be reached, or answered with an error."""
