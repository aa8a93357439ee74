"""Kubernetes objects as the host hands them to a plugin."""

import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class OwnerReference:
    """One entry of ``metadata.ownerReferences``."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool


class Object:
    """A Kubernetes object: its metadata, parsed once by the host, and the whole object as
    the API server sent it (``json``, parsed on first use of ``body``)."""

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
    )

    def __init__(self, raw: Any) -> None:
        meta = raw.meta
        self.api_version: str = meta.api_version
        self.kind: str = meta.kind
        #: ``None`` for cluster-scoped objects.
        self.namespace: Optional[str] = meta.namespace
        self.name: str = meta.name
        #: ``""`` when the object has none.
        self.uid: str = meta.uid
        self.resource_version: str = meta.resource_version
        self.generation: Optional[int] = meta.generation
        self.labels: Dict[str, str] = dict(meta.labels)
        self.annotations: Dict[str, str] = dict(meta.annotations)
        #: RFC 3339, set while the object is being deleted.
        self.deletion_timestamp: Optional[str] = meta.deletion_timestamp
        self.owner_references: List[OwnerReference] = [
            OwnerReference(o.api_version, o.kind, o.name, o.uid, o.controller) for o in meta.owner_references
        ]
        #: The object as JSON text, exactly as served.
        self.json: str = raw.json
        self._body: Any = None

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
        """The value of label ``key``, or ``None``."""
        return self.labels.get(key)

    def annotation(self, key: str) -> Optional[str]:
        """The value of annotation ``key``, or ``None``."""
        return self.annotations.get(key)

    def owner(self, kind: str) -> Optional[OwnerReference]:
        """The first owner of this ``kind``, preferring the controller."""
        owners = [o for o in self.owner_references if o.kind == kind]
        owners.sort(key=lambda o: not o.controller)
        return owners[0] if owners else None

    def __repr__(self) -> str:
        return f"<{self.kind} {self.key} rv={self.resource_version}>"
