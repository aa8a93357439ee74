"""Reconcilers: the controller-runtime model (``wink:plugin@0.4.0``'s ``reconciler-plugin``
world).

A reconciler's manifest names its primary resource, the resources it owns and those it
watches (``reconcile:``); the host turns every event on them into the key of a primary
object and calls :meth:`Reconciler.reconcile` with it, one key at a time, never one key twice
at once. The method reads the current state from the cache and makes the cluster match what
the object asks for::

    import wink
    from wink import cache, cluster

    class ServiceForDeployment(wink.Reconciler):
        def reconcile(self, key: wink.Key):
            deployment = cache.get("apps/v1", "Deployment", key.key)
            if deployment is None:
                return          # deleted: its Service goes with it (an owner reference)
            ...

    Reconciler = wink.export(ServiceForDeployment)

Raising ``wink.Retry`` (or any unexpected exception) retries the key with exponential
backoff, while other keys proceed; ``wink.Fatal`` drops it until its next change; returning
:func:`wink.requeue_after` reconciles it again later. :func:`enqueue` adds any key.
"""

from typing import Any, List, NamedTuple, Optional, Type

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types as _types

from . import log
from .objects import Object
from .plugin import Requeue, _outcome, _start, _where

try:  # only the reconciler world imports the queue
    from wit_world.imports import queue as _queue
except ImportError:  # pragma: no cover - a handler plugin's component
    _queue = None


class Key(NamedTuple):
    """The key of a primary object: its namespace (``None`` when cluster-scoped) and name."""

    namespace: Optional[str]
    name: str

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name``: the cache key (``cache.get(..., key.key)``)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


class Reconciler:
    """A reconciler; override :meth:`reconcile` (and :meth:`init` if it takes a config).

    The host calls one method at a time on an instance (with ``workers`` above 1 in the
    manifest, several instances run at once, each with its own state)."""

    def init(self, config: Any) -> None:
        """Called after every (re)start with the manifest's ``config``, parsed from JSON
        (``None`` when absent). Raise any exception to refuse it."""

    def reconcile(self, key: Key) -> Optional[Requeue]:
        """Brings the primary object ``key`` names to the state it asks for; it may have been
        deleted (``cache.get`` returns ``None``)."""

    def map_to_keys(self, obj: Object) -> List[Key]:
        """For a watched resource mapped by the plugin (``mapTo: {plugin: true}``): the keys of
        the primaries an event on ``obj`` concerns. Keep it quick and free of requests: it
        runs for every event of the resource. An exception is logged and maps to no key."""
        return []


def enqueue(key: Key, after: float = 0.0) -> None:
    """Reconciles ``key`` (any key of the primary resource) after ``after`` seconds, or as
    soon as possible. A key that already waits keeps the earlier time."""
    if _queue is None:
        raise RuntimeError("wink.enqueue is for reconcilers (their manifest has a `reconcile` section)")
    _queue.enqueue(_types.ObjectKey(key.namespace, key.name), max(0, int(after * 1000)))


_reconciler_class: Optional[Type[Reconciler]] = None
_reconciler: Optional[Reconciler] = None

_ReconcilerBase: Any = getattr(exports, "Reconciler", object)


class _Reconciler(_ReconcilerBase):
    """What componentize-py calls: the generated ``reconciler`` interface."""

    def init(self, config: str) -> None:
        global _reconciler
        _reconciler = None
        _reconciler = _start(_reconciler_class, config)

    def reconcile(self, key: Any) -> Any:
        if _reconciler is None:
            raise Err(_types.HandlerError_Fatal("wink: reconcile called before a successful init"))
        wanted = Key(key.namespace, key.name)
        return _outcome("reconcile", lambda: _reconciler.reconcile(wanted))

    def map_to_keys(self, obj: Any) -> List[Any]:
        if _reconciler is None:
            return []
        lent = Object.lent(obj)
        try:
            keys = _reconciler.map_to_keys(lent) or []
            return [_types.ObjectKey(k.namespace, k.name) for k in keys]
        except Exception as e:  # no error to return: log it, map to nothing
            log.error(f"map_to_keys raised {type(e).__name__}: {e}\nTraceback (most recent call last):\n{_where(e)}")
            return []
        finally:
            lent._expire()


def export(reconciler_class: Type[Reconciler]) -> type:
    """Exports ``reconciler_class`` as the component's reconciler (``wink.export`` calls
    this for a :class:`Reconciler`)."""
    global _reconciler_class
    _reconciler_class = reconciler_class
    return _Reconciler
