"""The :class:`Plugin` base class and :func:`export`, which connects it to the component's
``handler`` export."""

import json
from typing import Any, Callable, Optional, Type

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types as _types

from . import log
from .cluster import RequestError
from .errors import Fatal, Retry
from .objects import Object


class Requeue:
    """What a handler returns to be called again for the same object later (see
    :func:`requeue_after`)."""

    __slots__ = ("milliseconds",)

    def __init__(self, milliseconds: int) -> None:
        self.milliseconds = milliseconds


def requeue_after(seconds: float) -> Requeue:
    """Return this from a handler to be called again for the same object after ``seconds``,
    with its newest state (controller-runtime's ``RequeueAfter``)::

        return wink.requeue_after(30)
    """
    return Requeue(max(0, int(seconds * 1000)))


class Plugin:
    """A plugin's event handlers; override those you need (the others succeed).

    The host calls one method at a time. The instance keeps its state between calls for as
    long as the WebAssembly instance lives: after a trap the host starts a new one, creates
    the plugin again and calls ``init`` again.
    """

    def init(self, config: Any) -> None:
        """Called after every (re)start with the manifest's ``config``, parsed from JSON
        (``None`` when absent). Raise any exception to refuse it; its message says why."""

    def on_add(self, obj: Object, initial_list: bool) -> Optional[Requeue]:
        """An object was added; ``initial_list`` is true for the informer's initial list.
        Every event handler may return :func:`requeue_after` to be called again later."""

    def on_update(self, old: Object, new: Object) -> Optional[Requeue]:
        """An object changed; on a periodic resync ``old`` and ``new`` are the same."""

    def on_delete(self, obj: Object, final_state_unknown: bool) -> Optional[Requeue]:
        """An object was deleted; if ``final_state_unknown``, ``obj`` is its last known state."""


def _where(error: BaseException) -> str:
    """The frames of ``error``'s traceback, innermost last. (The ``traceback`` module would
    read the source files for the lines' text: a plugin has no files, and that would trap.)"""
    frames = []
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append(f'  File "{code.co_filename}", line {tb.tb_lineno}, in {code.co_name}')
        tb = tb.tb_next
    return "\n".join(frames)


_plugin_class: Optional[Type[Plugin]] = None
_plugin: Optional[Plugin] = None


def _call(event: str, handler: Callable[[], Optional[Requeue]], *lent: Object) -> Any:
    """Runs an event handler and turns its outcome into the WIT result: an ``action``, or a
    raised ``handler-error``. The ``lent`` objects expire when it returns."""
    if _plugin is None:
        raise Err(_types.HandlerError_Fatal(f"wink: {event} called before a successful init"))
    return _outcome(event, handler, *lent)


def _outcome(event: str, handler: Callable[[], Optional[Requeue]], *lent: Object) -> Any:
    """What :func:`_call` returns or raises once the plugin is known to be started."""
    try:
        result = handler()
    except Retry as e:
        raise Err(_types.HandlerError_Retry(str(e))) from None
    except Fatal as e:
        raise Err(_types.HandlerError_Fatal(str(e))) from None
    except RequestError as e:
        error = _types.HandlerError_Retry if e.transient else _types.HandlerError_Fatal
        raise Err(error(f"{e.reason}: {e}")) from None
    except Exception as e:  # a bug, or a failure not foreseen: say where, then retry
        log.error(f"{event} raised {type(e).__name__}: {e}\nTraceback (most recent call last):\n{_where(e)}")
        raise Err(_types.HandlerError_Retry(f"{type(e).__name__}: {e}")) from None
    finally:
        for obj in lent:
            obj._expire()
    if isinstance(result, Requeue):
        return _types.Action_RequeueAfter(result.milliseconds)
    return _types.Action_AwaitChange()


# The component implements one world: the handler's (``exports.Handler``) or, for a
# reconciler, ``exports.Reconciler`` (see :mod:`wink.reconciler`).
_HandlerBase: Any = getattr(exports, "Handler", object)


def _start(cls: Optional[type], config: str) -> Any:
    """A new instance of the exported ``cls``, its ``init`` called with the parsed
    ``config``; any exception refuses the start with its message."""
    assert cls is not None, "wink.export was not called"
    try:
        parsed = json.loads(config) if config.strip() else None
        plugin = cls()
        plugin.init(parsed)
    except Exception as e:
        raise Err(str(e) or type(e).__name__) from None
    return plugin


class _Handler(_HandlerBase):
    """What componentize-py calls: the generated ``handler`` interface."""

    def init(self, config: str) -> None:
        global _plugin
        _plugin = None
        _plugin = _start(_plugin_class, config)

    def on_add(self, obj: _types.EventObject, initial_list: bool) -> Any:
        lent = Object.lent(obj)
        return _call("on-add", lambda: _plugin.on_add(lent, initial_list), lent)

    def on_update(self, old: _types.EventObject, new: _types.EventObject) -> Any:
        lent_old, lent_new = Object.lent(old), Object.lent(new)
        return _call("on-update", lambda: _plugin.on_update(lent_old, lent_new), lent_old, lent_new)

    def on_delete(self, obj: _types.EventObject, final_state_unknown: bool) -> Any:
        lent = Object.lent(obj)
        return _call("on-delete", lambda: _plugin.on_delete(lent, final_state_unknown), lent)


def export(plugin_class: Optional[type] = None) -> type:
    """Exports ``plugin_class`` as the component's handler, or without it the functions
    decorated with ``@wink.on_add`` and the others (:mod:`wink.decorators`). Assign the
    result to ``Handler`` in ``app.py`` (componentize-py looks for that name)::

        Handler = wink.export(MyPlugin)

    A subclass of :class:`wink.Reconciler` is exported as the component's reconciler:
    assign the result to ``Reconciler`` (``Reconciler = wink.export(MyReconciler)``).
    """
    global _plugin_class
    from . import reconciler

    if isinstance(plugin_class, type) and issubclass(plugin_class, reconciler.Reconciler):
        return reconciler.export(plugin_class)
    if plugin_class is None:
        from . import decorators

        if not decorators.registered():
            raise TypeError("wink.export() without a class exports the decorated functions, and there are none")
        plugin_class = decorators.Decorated
    if not (isinstance(plugin_class, type) and issubclass(plugin_class, Plugin)):
        raise TypeError("wink.export takes a subclass of wink.Plugin or of wink.Reconciler")
    _plugin_class = plugin_class
    return _Handler
