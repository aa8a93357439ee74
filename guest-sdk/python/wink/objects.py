"""Kubernetes objects as the host hands them to a plugin.

A handler's objects are lent by the host (``wink:plugin@0.3.0``'s ``event-object``) and read
on demand: ``obj.name`` or ``obj.label("app")`` copies only that string into the plugin, and
each attribute is read once. Objects from :mod:`wink.cache` and :mod:`wink.cluster` arrive
whole. A lent object is valid during its handler call only: keep the values you need (or
``obj.snapshot()``), not the object.
"""

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional


@dataclass(frozen=True)
class OwnerReference:
    """One entry of ``metadata.ownerReferences``."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool


#: How each attribute of a lent object is read from its handle.
_LENT: Dict[str, Callable[[Any], Any]] = {
    "api_version": lambda h: h.api_version(),
    "kind": lambda h: h.kind(),
    "namespace": lambda h: h.namespace(),
    "name": lambda h: h.name(),
    "uid": lambda h: h.uid(),
    "resource_version": lambda h: h.resource_version(),
    "generation": lambda h: h.generation(),
    "json": lambda h: h.json(),
}

#: The attributes read from the whole metadata record.
_META = ("labels", "annotations", "deletion_timestamp", "owner_references")


class ExpiredObject(RuntimeError):
    """A lent object was read after its handler call returned."""


class Object:
    """A Kubernetes object: its metadata (``name``, ``namespace`` — ``None`` when
    cluster-scoped —, ``labels``, …), parsed by the host, and the whole object as the API
    server sent it (``json``, parsed on first use of ``body``)."""

    __slots__ = (
        "api_version",
        "kind",
        "namespace",
        "name",
        "uid",
        "resource_version",
        "generation",
        "labels",
        "annotations",
        "deletion_timestamp",
        "owner_references",
        "json",
        "_body",
        "_lent",
    )

    def __init__(self, raw: Any) -> None:
        """A whole object, from a WIT ``object`` record."""
        self._lent = None
        self._body = None
        self._fill_meta(raw.meta)
        for attr in ("api_version", "kind", "namespace", "name", "uid", "resource_version", "generation"):
            setattr(self, attr, getattr(raw.meta, attr))
        self.json = raw.json

    @classmethod
    def lent(cls, handle: Any) -> "Object":
        """An object lent for one handler call, read on demand through ``handle``."""
        obj = cls.__new__(cls)
        obj._lent = handle
        obj._body = None
        return obj

    def _fill_meta(self, meta: Any) -> None:
        self.labels = dict(meta.labels)
        self.annotations = dict(meta.annotations)
        #: RFC 3339, set while the object is being deleted.
        self.deletion_timestamp = meta.deletion_timestamp
        self.owner_references = [
            OwnerReference(o.api_version, o.kind, o.name, o.uid, o.controller) for o in meta.owner_references
        ]

    def _handle(self) -> Any:
        handle = self._lent
        if handle is None:
            raise ExpiredObject(
                "a wink.Object lent to a handler was read after the handler returned: keep the "
                "values you need, or obj.snapshot(), instead of the object"
            )
        return handle

    def __getattr__(self, attr: str) -> Any:
        # Only called for attributes not read yet: read them from the lent handle, once.
        if attr in _LENT:
            value = _LENT[attr](self._handle())
            setattr(self, attr, value)
            return value
        if attr in _META:
            self._fill_meta(self._handle().meta())
            return getattr(self, attr)
        raise AttributeError(f"'Object' object has no attribute '{attr}'")

    def _expire(self) -> None:
        """Ends the loan (the host drops the handle when the call returns)."""
        self._lent = None

    @property
    def key(self) -> str:
        """``namespace/name``, or ``name`` for a cluster-scoped object."""
        return f"{self.namespace}/{self.name}" if self.namespace is not None else self.name

    @property
    def body(self) -> Dict[str, Any]:
        """The whole object as a dict (``obj.body["spec"]["containers"]``), parsed once."""
        if self._body is None:
            self._body = json.loads(self.json)
        return self._body

    def label(self, key: str) -> Optional[str]:
        """The value of label ``key``, or ``None`` (one string read from a lent object)."""
        try:
            labels = object.__getattribute__(self, "labels")
        except AttributeError:
            return self._handle().label(key)
        return labels.get(key)

    def annotation(self, key: str) -> Optional[str]:
        """The value of annotation ``key``, or ``None``."""
        try:
            annotations = object.__getattribute__(self, "annotations")
        except AttributeError:
            return self._handle().annotation(key)
        return annotations.get(key)

    def owner(self, kind: str) -> Optional[OwnerReference]:
        """The first owner of this ``kind``, preferring the controller."""
        owners = [o for o in self.owner_references if o.kind == kind]
        owners.sort(key=lambda o: not o.controller)
        return owners[0] if owners else None

    def snapshot(self) -> "Object":
        """This object read whole, valid after the handler returns."""
        if self._lent is None:
            return self
        whole = Object.__new__(Object)
        whole._lent = None
        whole._body = self._body
        for attr in (*_LENT, *_META):
            setattr(whole, attr, getattr(self, attr))
        return whole

    def __repr__(self) -> str:
        return f"<{self.kind} {self.key} rv={self.resource_version}>"
