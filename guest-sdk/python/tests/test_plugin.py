"""The SDK's handler export, run natively with the component's bindings stubbed
(`python3 -m unittest discover guest-sdk/python/tests`): what a handler's outcome becomes
(a bug is retried, `Fatal` is not), Event types checked, and decorated functions
dispatched by kind."""

import os
import sys
import types
import unittest
from types import SimpleNamespace


class Err(Exception):
    """componentize-py's error wrapper."""

    def __init__(self, value):
        super().__init__(value)
        self.value = value


def _case(name):
    """A generated variant case: a class holding one value."""
    return type(name, (), {"__init__": lambda self, value=None: setattr(self, "value", value)})


def _stub_bindings():
    """The modules componentize-py generates, as far as the SDK uses them."""
    logged = []
    raw_events = []
    modules = {
        "componentize_py_types": types.ModuleType("componentize_py_types"),
        "wit_world": types.ModuleType("wit_world"),
        "wit_world.exports": types.ModuleType("wit_world.exports"),
        "wit_world.imports": types.ModuleType("wit_world.imports"),
    }
    modules["componentize_py_types"].Err = Err
    modules["wit_world.exports"].Handler = type("Handler", (), {})
    t = types.ModuleType("wit_world.imports.types")
    for name in ["HandlerError_Retry", "HandlerError_Fatal", "Action_RequeueAfter", "Action_AwaitChange"]:
        setattr(t, name, _case(name))
    t.EventObject = object
    t.ObjectReference = lambda *fields: fields
    t.Resource = lambda *fields: fields
    log = types.ModuleType("wit_world.imports.log")
    log.Level = SimpleNamespace(TRACE=0, DEBUG=1, INFO=2, WARN=3, ERROR=4)
    log.log = lambda level, message: logged.append((level, message))
    cluster = types.ModuleType("wit_world.imports.cluster")
    cluster.EventType = SimpleNamespace(NORMAL="normal", WARNING="warning")
    cluster.Event = lambda *fields: fields
    cluster.record_event = raw_events.append
    cache = types.ModuleType("wit_world.imports.cache")
    for name, module in [("types", t), ("log", log), ("cluster", cluster), ("cache", cache)]:
        modules[f"wit_world.imports.{name}"] = module
        setattr(modules["wit_world.imports"], name, module)
    modules["wit_world"].exports = modules["wit_world.exports"]
    modules["wit_world"].imports = modules["wit_world.imports"]
    sys.modules.update(modules)
    return logged, raw_events


LOGGED, RAW_EVENTS = _stub_bindings()
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
_streams = sys.stdout, sys.stderr
try:
    import wink  # noqa: E402  (after the stubs it imports)
    from wink import decorators  # noqa: E402
finally:
    # wink.log sends print() and stderr to the host's log: give them back to the runner.
    sys.stdout, sys.stderr = _streams


class Handle:
    """An `event-object` handle for a Pod or a ConfigMap."""

    def __init__(self, kind, api_version="v1"):
        self.kind_, self.api_version_ = kind, api_version

    def kind(self):
        return self.kind_

    def api_version(self):
        return self.api_version_

    def namespace(self):
        return "shop"

    def name(self):
        return "web"


def deliver(handler_class, event="on_add"):
    handler = handler_class()
    handler.init("null")
    if event == "on_update":
        return handler.on_update(Handle("Pod"), Handle("Pod"))
    return getattr(handler, event)(Handle("Pod"), False)


class Outcomes(unittest.TestCase):
    def test_an_unexpected_exception_is_logged_and_retried(self):
        class Buggy(wink.Plugin):
            def on_add(self, obj, initial_list):
                return {}["missing"]

        with self.assertRaises(Err) as raised:
            deliver(wink.export(Buggy))
        self.assertIsInstance(raised.exception.value, sys.modules["wit_world.imports.types"].HandlerError_Retry)
        self.assertIn("KeyError", raised.exception.value.value)
        level, message = LOGGED[-1]
        self.assertEqual(level, 4)
        self.assertIn("on-add raised KeyError", message)
        self.assertIn("Traceback", message)

    def test_fatal_is_not_retried(self):
        class Refuses(wink.Plugin):
            def on_add(self, obj, initial_list):
                raise wink.Fatal("never")

        with self.assertRaises(Err) as raised:
            deliver(wink.export(Refuses))
        self.assertIsInstance(raised.exception.value, sys.modules["wit_world.imports.types"].HandlerError_Fatal)


class Events(unittest.TestCase):
    def test_event_types_are_checked_not_guessed(self):
        pod = wink.Object.lent(Handle("Pod"))
        with self.assertRaises(ValueError):
            wink.cluster.record_event(pod, "warning", "Reason", "Act", "note")
        self.assertEqual(RAW_EVENTS, [], "nothing sent")
        pod.uid = "u"
        wink.cluster.record_event(pod, "Warning", "Reason", "Act", "note")
        self.assertEqual(RAW_EVENTS[-1][1], "warning")


class Decorators(unittest.TestCase):
    def setUp(self):
        decorators._init.clear()
        for handlers in decorators._handlers.values():
            handlers.clear()

    def test_functions_run_for_their_kind_in_order_and_the_earliest_requeue_wins(self):
        seen = []

        @wink.on_init
        def setup(config):
            seen.append(("init", config))

        @wink.on_add("v1", "ConfigMap")
        def config_map(obj, initial_list):
            seen.append("configmap")

        @wink.on_add("v1", "Pod")
        def pod(obj, initial_list):
            seen.append(("pod", obj.name))
            return wink.requeue_after(30)

        @wink.on_add
        def every(obj, initial_list):
            seen.append("every")
            return wink.requeue_after(5)

        action = deliver(wink.export())
        self.assertEqual(seen, [("init", None), ("pod", "web"), "every"])
        self.assertEqual(action.value, 5000)

    def test_export_without_a_class_needs_decorated_functions(self):
        with self.assertRaises(TypeError):
            wink.export()
        with self.assertRaises(TypeError):
            wink.on_add("v1")


if __name__ == "__main__":
    unittest.main()
