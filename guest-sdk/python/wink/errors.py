"""The errors a handler raises, and the one cache reads raise."""


class Retry(Exception):
    """A transient failure: the host calls again later, with backoff, with the newest state
    of the same object. ``raise wink.Retry("the database is down")``.

    Any other exception escaping a handler is treated the same way, after its traceback is
    logged at error level (as controller-runtime and kopf retry a failed handler): a bug
    that a new version brings shows in the log and its events wait, rather than being
    dropped."""


class Fatal(Exception):
    """A permanent failure for this event, which retrying cannot mend: the host records it
    and moves on (the handler is called again when the object changes)."""


class CacheError(Exception):
    """A cache read was refused.

    ``reason`` is ``"not-permitted"`` (the manifest does not grant the resource or namespace)
    or ``"unknown-index"`` (the resource has no index of that name); ``str(e)`` is the
    host's message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
