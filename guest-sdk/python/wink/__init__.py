"""wink: write wink handler plugins in Python.

A plugin is a module ``app.py`` that subclasses :class:`Plugin` and exports it::

    import wink
    from wink import log

    class Greeter(wink.Plugin):
        def on_add(self, obj: wink.Object, initial_list: bool) -> None:
            log.info(f"hello, {obj.kind} {obj.key}")

    Handler = wink.export(Greeter)

``cargo xtask build-plugins`` turns it into a WebAssembly component with componentize-py
(guest-sdk/python/README.md says how, and what the manifest holds). The host gives the
plugin the clocks (``time``, ``datetime``) and randomness, nothing else: no files, sockets or
environment. ``print`` goes to the host's log.

- :class:`Plugin`: override ``init``, ``on_add``, ``on_update``, ``on_delete``; return
  :func:`requeue_after` from an event handler to be called again later.
- :class:`Object`: an object's metadata (parsed by the host) and its JSON (``obj.body``);
  a handler's objects are lent and read on demand, valid during the call only.
- :mod:`wink.log`: ``log.info(...)`` and friends; :mod:`wink.cache`: scoped cache reads;
  :mod:`wink.cluster`: live reads, writes and Events, within the manifest's permissions.
- :func:`on_add`, :func:`on_update`, :func:`on_delete`, :func:`on_init`: handlers as
  decorated functions instead of a class (:mod:`wink.decorators`), exported by
  ``wink.export()``.
- :class:`Reconciler`, :class:`Key`, :func:`enqueue`: a reconciler, as controller-runtime's
  (:mod:`wink.reconciler`), exported as ``Reconciler = wink.export(MyReconciler)``.
- :func:`controller_of`, :func:`is_controlled_by`, :func:`set_controller_reference`,
  :func:`selector_matches`: owner references and label selectors (:mod:`wink.meta`).
- :class:`Retry`, :class:`Fatal`: raise them to have the host retry the event or drop it;
  any other exception is logged with its traceback and retried.
"""

from . import cache, cluster, log
from .cluster import RequestError
from .errors import CacheError, Fatal, Retry
from .objects import ExpiredObject, Object, OwnerReference
from .meta import (
    AlreadyOwned,
    InvalidSelector,
    controller_of,
    controller_reference,
    is_controlled_by,
    selector_matches,
    set_controller_reference,
)
from .decorators import on_add, on_delete, on_init, on_update
from .plugin import Plugin, Requeue, export, requeue_after
from .reconciler import Key, Reconciler, enqueue

__all__ = [
    "AlreadyOwned",
    "cache",
    "CacheError",
    "cluster",
    "controller_of",
    "controller_reference",
    "enqueue",
    "ExpiredObject",
    "export",
    "Fatal",
    "InvalidSelector",
    "is_controlled_by",
    "Key",
    "log",
    "Object",
    "on_add",
    "on_delete",
    "on_init",
    "on_update",
    "OwnerReference",
    "Plugin",
    "Reconciler",
    "RequestError",
    "Requeue",
    "requeue_after",
    "Retry",
    "selector_matches",
    "set_controller_reference",
]

#: The version of the WIT package (``wink:plugin``) this SDK implements.
WIT_VERSION = "0.4.0"

#: The version of this SDK (semver; see CHANGELOG.md).
__version__ = "0.4.1"
