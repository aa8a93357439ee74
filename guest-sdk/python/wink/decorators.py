"""Handlers as decorated functions, in the spirit of kopf, instead of a :class:`Plugin`
subclass::

    import wink
    from wink import log

    @wink.on_init
    def setup(config):
        global TEAM
        TEAM = config["team"]

    @wink.on_add("v1", "Pod")
    def pod_added(obj, initial_list):
        log.info(f"pod {obj.key}")

    @wink.on_update                      # every resource the manifest watches
    def changed(old, new):
        ...

    @wink.on_delete("apps/v1", "Deployment")
    def deployment_gone(obj, final_state_unknown):
        ...

    Handler = wink.export()              # the decorated functions

For each event, the functions registered for the object's ``apiVersion`` and ``kind`` (and
those registered for every resource) run in the order they were declared. The first that
raises ends the event: the exception decides it as it would a :class:`Plugin`'s method
(``wink.Retry``, or any unexpected exception: called again later; ``wink.Fatal``: dropped), and
a retry runs them all again — so write them to be idempotent, as kopf's handlers are. When
several return :func:`wink.requeue_after`, the earliest wins.
"""

from typing import Any, Callable, List, Optional, Tuple

from .objects import Object
from .plugin import Plugin, Requeue

_Entry = Tuple[Optional[str], Optional[str], Callable[..., Any]]

_init: List[Callable[[Any], None]] = []
_handlers = {"add": [], "update": [], "delete": []}


def _register(event: str, args: tuple) -> Any:
    """``@on_x``, ``@on_x()`` or ``@on_x(api_version, kind)``."""
    if len(args) == 1 and callable(args[0]):
        _handlers[event].append((None, None, args[0]))
        return args[0]
    if len(args) not in (0, 2) or not all(isinstance(a, str) for a in args):
        raise TypeError(f"@wink.on_{event} takes nothing, or an apiVersion and a kind: @wink.on_{event}(\"v1\", \"Pod\")")
    api_version, kind = args if args else (None, None)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        _handlers[event].append((api_version, kind, fn))
        return fn

    return decorate


def on_add(*args: Any) -> Any:
    """Registers ``fn(obj, initial_list)`` for added objects (of one kind, or of every kind)."""
    return _register("add", args)


def on_update(*args: Any) -> Any:
    """Registers ``fn(old, new)`` for changed objects (of one kind, or of every kind)."""
    return _register("update", args)


def on_delete(*args: Any) -> Any:
    """Registers ``fn(obj, final_state_unknown)`` for deleted objects (of one kind, or of
    every kind)."""
    return _register("delete", args)


def on_init(fn: Callable[[Any], None]) -> Callable[[Any], None]:
    """Registers ``fn(config)``, called after every (re)start with the manifest's ``config``;
    raising refuses it."""
    _init.append(fn)
    return fn


def _dispatch(event: str, obj: Object, *args: Any) -> Optional[Requeue]:
    earliest: Optional[Requeue] = None
    for api_version, kind, fn in _handlers[event]:
        if kind is not None and (obj.kind != kind or obj.api_version != api_version):
            continue
        result = fn(*args)
        if isinstance(result, Requeue) and (earliest is None or result.milliseconds < earliest.milliseconds):
            earliest = result
    return earliest


class Decorated(Plugin):
    """The plugin :func:`wink.export` makes of the decorated functions."""

    def init(self, config: Any) -> None:
        for fn in _init:
            fn(config)

    def on_add(self, obj: Object, initial_list: bool) -> Optional[Requeue]:
        return _dispatch("add", obj, obj, initial_list)

    def on_update(self, old: Object, new: Object) -> Optional[Requeue]:
        return _dispatch("update", new, old, new)

    def on_delete(self, obj: Object, final_state_unknown: bool) -> Optional[Requeue]:
        return _dispatch("delete", obj, obj, final_state_unknown)


def registered() -> bool:
    """Whether any function was decorated."""
    return bool(_init or any(_handlers.values()))
