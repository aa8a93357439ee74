"""Controller owner references and label selectors (`wink.meta`), run natively: the rules of
apimachinery's GetControllerOf and LabelSelectorAsSelector, and controller-runtime's
SetControllerReference."""

import importlib.util
import json
import os
import unittest
from types import SimpleNamespace

_spec = importlib.util.spec_from_file_location(
    "wink_meta", os.path.join(os.path.dirname(__file__), "..", "wink", "meta.py")
)
meta = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(meta)


def ref(kind, name, uid, controller=False):
    return SimpleNamespace(api_version="apps/v1", kind=kind, name=name, uid=uid, controller=controller)


def obj(owners=(), uid="u-1", namespace="shop", kind="Deployment", name="web"):
    return SimpleNamespace(
        api_version="apps/v1", kind=kind, name=name, namespace=namespace, uid=uid, owner_references=list(owners)
    )


class Owners(unittest.TestCase):
    def test_the_controller_is_the_reference_marked_controller(self):
        pod = obj([ref("ReplicaSet", "old", "u-0"), ref("ReplicaSet", "web", "u-9", controller=True)])
        self.assertEqual(meta.controller_of(pod).uid, "u-9")
        self.assertIsNone(meta.controller_of(obj([ref("ReplicaSet", "old", "u-0")])))

    def test_controlled_by_compares_uids_not_names(self):
        deployment = obj(uid="u-9")
        self.assertTrue(meta.is_controlled_by(obj([ref("Deployment", "web", "u-9", True)]), deployment))
        self.assertFalse(meta.is_controlled_by(obj([ref("Deployment", "web", "u-8", True)]), deployment))
        self.assertFalse(meta.is_controlled_by(obj([ref("Deployment", "web", "u-9")]), deployment), "not controller")

    def test_a_controller_reference_blocks_owner_deletion(self):
        self.assertEqual(
            meta.controller_reference(obj(uid="u-9")),
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-9", "controller": True,
             "blockOwnerDeletion": True},
        )
        with self.assertRaises(ValueError):
            meta.controller_reference(obj(uid=""))

    def test_setting_the_controller_keeps_other_owners_and_refuses_a_second_controller(self):
        owner = obj(uid="u-9")
        service = {"metadata": {"name": "web", "namespace": "shop",
                                "ownerReferences": [{"kind": "ConfigMap", "name": "c", "uid": "u-3"}]}}
        meta.set_controller_reference(owner, service)
        refs = service["metadata"]["ownerReferences"]
        self.assertEqual([r["uid"] for r in refs], ["u-3", "u-9"])
        meta.set_controller_reference(owner, service)
        self.assertEqual(len(service["metadata"]["ownerReferences"]), 2, "the same owner is replaced, not added")
        with self.assertRaises(meta.AlreadyOwned):
            meta.set_controller_reference(obj(uid="u-7", name="other"), service)
        with self.assertRaises(ValueError):
            meta.set_controller_reference(owner, {"metadata": {"name": "x", "namespace": "ops"}})
        cluster_scoped = obj(uid="u-5", namespace=None, kind="Namespace", name="shop")
        meta.set_controller_reference(cluster_scoped, {"metadata": {"name": "quota", "namespace": "shop"}})


class Selectors(unittest.TestCase):
    labels = {"app": "web", "tier": "front"}

    def test_match_labels_all_must_hold(self):
        self.assertTrue(meta.selector_matches({"matchLabels": {"app": "web"}}, self.labels))
        self.assertFalse(meta.selector_matches({"matchLabels": {"app": "web", "tier": "back"}}, self.labels))

    def test_empty_matches_everything_and_none_nothing(self):
        self.assertTrue(meta.selector_matches({}, self.labels))
        self.assertTrue(meta.selector_matches({}, {}))
        self.assertFalse(meta.selector_matches(None, self.labels))

    def test_expressions(self):
        def matches(operator, values=None, key="tier"):
            e = {"key": key, "operator": operator}
            if values is not None:
                e["values"] = values
            return meta.selector_matches({"matchExpressions": [e]}, self.labels)

        self.assertTrue(matches("In", ["front", "edge"]))
        self.assertFalse(matches("In", ["back"]))
        self.assertFalse(matches("In", ["front"], key="zone"), "In needs the key")
        self.assertTrue(matches("NotIn", ["back"]))
        self.assertTrue(matches("NotIn", ["front"], key="zone"), "NotIn holds without the key")
        self.assertFalse(matches("NotIn", ["front"]))
        self.assertTrue(matches("Exists"))
        self.assertFalse(matches("Exists", key="zone"))
        self.assertTrue(matches("DoesNotExist", key="zone"))
        both = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]}
        self.assertFalse(meta.selector_matches(both, self.labels), "labels and expressions both hold")

    def test_invalid_selectors_are_refused(self):
        for e in (
            {"key": "tier", "operator": "Equals", "values": ["front"]},
            {"key": "tier", "operator": "In", "values": []},
            {"key": "tier", "operator": "Exists", "values": ["front"]},
            {"operator": "Exists"},
        ):
            with self.assertRaises(meta.InvalidSelector, msg=str(e)):
                meta.selector_matches({"matchExpressions": [e]}, self.labels)


if __name__ == "__main__":
    unittest.main()


class SharedCorpus(unittest.TestCase):
    """The label selector cases every SDK and the host agree on
    (tests/conformance/label-selectors.json)."""

    def test_every_case_of_the_shared_corpus(self):
        path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "conformance", "label-selectors.json")
        with open(path, encoding="utf-8") as f:
            corpus = json.load(f)
        for case in corpus["cases"]:
            with self.subTest(case["name"]):
                if case["expect"] == "invalid":
                    with self.assertRaises(meta.InvalidSelector):
                        meta.selector_matches(case["selector"], corpus["labels"])
                else:
                    self.assertEqual(meta.selector_matches(case["selector"], corpus["labels"]), case["expect"])
