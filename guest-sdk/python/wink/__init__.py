"""wink: write wink handler plugins in Python.

A plugin is a module ``app.py`` that subclasses :class:`Plugin` and exports it::

    import wink
    from wink import log

    class Greeter(wink.Plugin):
        def on_add(self, obj: wink.Object, initial_list: bool) -> None:
            log.info(f"hello, {obj.kind} {obj.key}")

    Handler = wink.export(Greeter)

``cargo xtask build-plugins`` turns it into a WebAssembly component with componentize-py
(guest-sdk/python/README.md says how, and what the manifest holds). The component imports no
WASI: no files, sockets, clocks or randomness. ``print`` goes to the host's log.

- :class:`Plugin`: override ``init``, ``on_add``, ``on_update``, ``on_delete``.
- :class:`Object`: an object's metadata (parsed by the host) and its JSON (``obj.body``).
- :mod:`wink.log`: ``log.info(...)`` and friends; :mod:`wink.cache`: scoped cache reads.
- :class:`Retry`, :class:`Fatal`: raise them to have the host retry the event or drop it.
"""

from . import cache, log
from .errors import CacheError, Fatal, Retry
from .objects import Object, OwnerReference
from .plugin import Plugin, export

__all__ = [
    "CacheError",
    "Fatal",
    "Object",
    "OwnerReference",
    "Plugin",
    "Retry",
    "cache",
    "export",
    "log",
]

#: The version of the WIT package (``wink:plugin``) this SDK implements.
WIT_VERSION = "0.1.0"
