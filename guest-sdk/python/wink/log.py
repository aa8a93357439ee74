"""Logging into the host's log, tagged with the plugin's name.

``log.info("message")``; ``log.log(log.WARN, ...)``. ``print()`` writes info records and
``sys.stderr`` warn records (one per line), since a plugin has no terminal.
"""

import sys

from wit_world.imports import log as _raw

TRACE = _raw.Level.TRACE
DEBUG = _raw.Level.DEBUG
INFO = _raw.Level.INFO
WARN = _raw.Level.WARN
ERROR = _raw.Level.ERROR


def log(level: "_raw.Level", message: str) -> None:
    """Writes one record at ``level``."""
    _raw.log(level, str(message))


def trace(message: str) -> None:
    """Very detailed tracing."""
    _raw.log(TRACE, str(message))


def debug(message: str) -> None:
    """Debugging information."""
    _raw.log(DEBUG, str(message))


def info(message: str) -> None:
    """Normal operation."""
    _raw.log(INFO, str(message))


def warn(message: str) -> None:
    """Something unexpected that the plugin recovered from."""
    _raw.log(WARN, str(message))


def error(message: str) -> None:
    """A failure."""
    _raw.log(ERROR, str(message))


class _LogStream:
    """A text stream that writes each line to the host's log."""

    def __init__(self, level: "_raw.Level") -> None:
        self._level = level
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            _raw.log(self._level, line)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            _raw.log(self._level, self._pending)
            self._pending = ""

    def isatty(self) -> bool:
        return False


# Without WASI, writing to the real stdout or stderr would trap.
sys.stdout = _LogStream(INFO)
sys.stderr = _LogStream(WARN)
