"""What every controller does with metadata: controller owner references and label selectors,
as apimachinery's ``metav1.GetControllerOf``, controller-runtime's
``SetControllerReference`` and ``metav1.LabelSelectorAsSelector`` do them.

- :func:`controller_of`: the owner reference with ``controller: true``, if any;
- :func:`is_controlled_by`: whether an object's controller is a given object (by uid);
- :func:`controller_reference`: the owner reference naming an object as controller
  (``blockOwnerDeletion`` set, as controller-runtime sets it);
- :func:`set_controller_reference`: adds it to an object about to be written, refusing one
  that another object already controls (:class:`AlreadyOwned`);
- :func:`selector_matches`: whether labels match a ``LabelSelector`` (``matchLabels`` and
  ``matchExpressions`` with ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``); an invalid
  selector raises :class:`InvalidSelector`, as the API server would refuse it.

Objects are duck-typed: a :class:`wink.Object` (``uid``, ``owner_references``, …) or, where
an object is being written, its dict.
"""

from typing import Any, Dict, Iterable, Mapping, Optional


class AlreadyOwned(ValueError):
    """The object already has another controller (controller-runtime's
    ``AlreadyOwnedError``)."""


class InvalidSelector(ValueError):
    """A ``LabelSelector`` the API server would refuse."""


def controller_of(obj: Any) -> Optional[Any]:
    """The owner reference of ``obj`` with ``controller: true``, or ``None``."""
    return next((o for o in obj.owner_references if o.controller), None)


def is_controlled_by(obj: Any, owner: Any) -> bool:
    """Whether ``owner`` (an object) is the controller of ``obj`` (matched by uid)."""
    controller = controller_of(obj)
    return controller is not None and bool(owner.uid) and controller.uid == owner.uid


def controller_reference(owner: Any) -> Dict[str, Any]:
    """The owner reference naming ``owner`` as controller, for ``metadata.ownerReferences``."""
    if not owner.uid:
        raise ValueError(f"{owner.kind} {owner.name} has no uid: it cannot own anything yet")
    return {
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.name,
        "uid": owner.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def set_controller_reference(owner: Any, obj: Dict[str, Any]) -> Dict[str, Any]:
    """Makes ``owner`` the controller of ``obj`` (an object's dict, about to be written) and
    returns ``obj``. A reference to the same owner (by uid) is replaced; another controller
    raises :class:`AlreadyOwned`; a namespaced owner cannot own an object in another
    namespace (``ValueError``), as the garbage collector would never find it."""
    reference = controller_reference(owner)
    meta = obj.setdefault("metadata", {})
    namespace = meta.get("namespace")
    if owner.namespace and namespace and owner.namespace != namespace:
        raise ValueError(f"{owner.kind} {owner.namespace}/{owner.name} cannot own an object in namespace {namespace}")
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != reference["uid"]]
    for ref in refs:
        if ref.get("controller"):
            raise AlreadyOwned(f"already controlled by {ref.get('kind')} {ref.get('name')}")
    meta["ownerReferences"] = refs + [reference]
    return obj


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def selector_matches(selector: Optional[Mapping[str, Any]], labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` match ``selector`` (a ``LabelSelector`` as in an object's spec). An
    empty selector matches everything, a missing one (``None``) nothing, as
    ``LabelSelectorAsSelector`` has it."""
    if selector is None:
        return False
    # Every expression is checked first: a selector the API server would refuse is refused
    # whatever the labels, as LabelSelectorAsSelector converts it whole before matching.
    expressions = list(_expressions(selector.get("matchExpressions") or []))
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_requirement(e, labels) for e in expressions)


def _expressions(expressions: Iterable[Mapping[str, Any]]) -> Iterable[Mapping[str, Any]]:
    for e in expressions:
        operator, values = e.get("operator"), e.get("values") or []
        if not e.get("key"):
            raise InvalidSelector("a matchExpressions entry has no key")
        if operator not in _OPERATORS:
            raise InvalidSelector(f"operator {operator!r} is not one of {', '.join(_OPERATORS)}")
        if operator in ("In", "NotIn") and not values:
            raise InvalidSelector(f"operator {operator} on {e['key']} needs values")
        if operator in ("Exists", "DoesNotExist") and values:
            raise InvalidSelector(f"operator {operator} on {e['key']} takes no values")
        yield e


def _requirement(e: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator, values = e["key"], e["operator"], e.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    return key not in labels
