"""The SDK's objects, run natively (`python3 -m unittest discover guest-sdk/python/tests`):
lent objects read each attribute once through their handle, labels one by one until the
whole metadata is read, and refuse to be read after their call; whole objects need no
handle."""

import importlib.util
import os
import unittest
from types import SimpleNamespace

# wink/objects.py alone: the package's other modules import the component's bindings.
_spec = importlib.util.spec_from_file_location(
    "wink_objects", os.path.join(os.path.dirname(__file__), "..", "wink", "objects.py")
)
_objects = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_objects)
ExpiredObject, Object = _objects.ExpiredObject, _objects.Object


def meta(**fields):
    base = dict(
        api_version="v1",
        kind="Pod",
        namespace="shop",
        name="web-1",
        uid="u-1",
        resource_version="7",
        generation=None,
        labels=[("app", "web")],
        annotations=[],
        deletion_timestamp=None,
        owner_references=[SimpleNamespace(api_version="apps/v1", kind="ReplicaSet", name="web", uid="u-0", controller=True)],
    )
    base.update(fields)
    return SimpleNamespace(**base)


class Handle:
    """An `event-object` handle that counts the host calls made through it."""

    def __init__(self, m):
        self.m = m
        self.calls = []

    def __getattr__(self, method):
        def call(*args):
            self.calls.append(method)
            if method == "label":
                return dict(self.m.labels).get(args[0])
            if method == "annotation":
                return dict(self.m.annotations).get(args[0])
            if method == "meta":
                return self.m
            if method == "json":
                return '{"kind":"Pod","spec":{"containers":[{"image":"web:1"}]}}'
            return getattr(self.m, method)

        return call


class LentObjects(unittest.TestCase):
    def test_each_attribute_is_read_once_and_only_when_used(self):
        handle = Handle(meta())
        obj = Object.lent(handle)
        self.assertEqual((obj.name, obj.name, obj.key), ("web-1", "web-1", "shop/web-1"))
        self.assertEqual(handle.calls, ["name", "namespace"])

    def test_a_label_is_one_call_until_the_metadata_is_read(self):
        handle = Handle(meta())
        obj = Object.lent(handle)
        self.assertEqual(obj.label("app"), "web")
        self.assertIsNone(obj.label("team"))
        self.assertEqual(handle.calls, ["label", "label"])
        self.assertEqual(obj.owner("ReplicaSet").name, "web")
        self.assertEqual(obj.label("app"), "web")
        self.assertEqual(handle.calls, ["label", "label", "meta"])

    def test_the_body_is_parsed_from_the_json_once(self):
        handle = Handle(meta())
        obj = Object.lent(handle)
        self.assertEqual(obj.body["spec"]["containers"][0]["image"], "web:1")
        self.assertIs(obj.body, obj.body)
        self.assertEqual(handle.calls, ["json"])

    def test_a_kept_object_cannot_be_read_after_its_call_but_a_snapshot_can(self):
        obj = Object.lent(Handle(meta()))
        name = obj.name
        obj._expire()
        self.assertEqual(obj.name, name, "what was read stays readable")
        with self.assertRaises(ExpiredObject):
            obj.uid
        with self.assertRaises(ExpiredObject):
            obj.label("app")
        kept = Object.lent(Handle(meta()))
        snapshot = kept.snapshot()
        kept._expire()
        self.assertEqual((snapshot.uid, snapshot.label("app"), snapshot.key), ("u-1", "web", "shop/web-1"))

    def test_a_cluster_scoped_object_has_no_namespace(self):
        obj = Object.lent(Handle(meta(namespace=None, name="node-1")))
        self.assertEqual(obj.key, "node-1")


class WholeObjects(unittest.TestCase):
    def test_a_whole_object_needs_no_handle_and_never_expires(self):
        obj = Object(SimpleNamespace(meta=meta(generation=3), json='{"kind":"Pod"}'))
        obj._expire()
        self.assertEqual((obj.key, obj.generation, obj.label("app"), obj.body["kind"]), ("shop/web-1", 3, "web", "Pod"))
        self.assertIs(obj.snapshot(), obj)


if __name__ == "__main__":
    unittest.main()
