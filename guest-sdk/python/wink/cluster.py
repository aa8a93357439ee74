"""Requests to the cluster: live reads, writes and Events.

Every request is checked by the host against the plugin's manifest (``permissions:``, in
RBAC terms) before it leaves the host, and counts against the plugin's request budget
(``requests:``). Objects are dicts (or JSON text); answers are :class:`wink.Object` s. A
failed request raises :class:`RequestError`: an update from a stale ``resourceVersion``
raises one whose ``reason`` is ``"conflict"`` — read the object again and retry::

    from wink import cluster

    live = cluster.get("apps/v1", "Deployment", "shop", "web").body
    live["spec"]["replicas"] = 3
    cluster.update(live)
"""

import json
from typing import Any, List, Optional, Union

from componentize_py_types import Err
from wit_world.imports import cluster as _raw
from wit_world.imports import types as _types

from .objects import Object

#: The reasons a request fails, as :attr:`RequestError.reason`.
REASONS = {
    "NotPermitted": "not-permitted",
    "Forbidden": "forbidden",
    "NotFound": "not-found",
    "AlreadyExists": "already-exists",
    "Conflict": "conflict",
    "Invalid": "invalid",
    "BadRequest": "bad-request",
    "RateLimited": "rate-limited",
    "TimedOut": "timed-out",
    "Unavailable": "unavailable",
}

_TRANSIENT = {"conflict", "rate-limited", "timed-out", "unavailable"}


class RequestError(Exception):
    """A failed request. ``reason`` is ``"not-permitted"`` (refused by wink, before any
    request), ``"forbidden"``, ``"not-found"``, ``"already-exists"``, ``"conflict"``,
    ``"invalid"``, ``"bad-request"``, ``"rate-limited"``, ``"timed-out"`` or
    ``"unavailable"``; ``causes`` lists the fields at fault of an invalid object, as
    ``(field, reason, message)`` tuples. A ``RequestError`` that escapes a handler is a retry
    when :attr:`transient`, else fatal."""

    def __init__(self, reason: str, message: str, causes: Optional[List[tuple]] = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.causes = causes or []

    @property
    def transient(self) -> bool:
        """Whether trying again later may succeed."""
        return self.reason in _TRANSIENT


def _failed(err: Err) -> RequestError:
    value = err.value
    case = type(value).__name__.split("_", 1)[-1]
    reason = REASONS.get(case, case)
    if reason == "invalid":
        causes = [(c.field, c.reason, c.message) for c in value.value.causes]
        return RequestError(reason, value.value.message, causes)
    return RequestError(reason, str(value.value))


def _text(obj: Union[dict, str]) -> str:
    return obj if isinstance(obj, str) else json.dumps(obj)


def _resource(api_version: str, kind: str) -> Any:
    return _types.Resource(api_version, kind)


def _call(request) -> Any:
    try:
        return request()
    except Err as err:
        raise _failed(err) from None


def _patch(patch: Union[dict, list, str], type: str, force: bool) -> Any:
    if type == "apply":
        return _raw.PatchDocument_Apply(_raw.ApplyPatch(_text(patch), force))
    cases = {
        "merge": _raw.PatchDocument_Merge,
        "json": _raw.PatchDocument_Json,
        "strategic": _raw.PatchDocument_StrategicMerge,
    }
    if type not in cases:
        raise ValueError(f"unknown patch type {type!r}: merge, json, strategic or apply")
    return cases[type](_text(patch))


def get(api_version: str, kind: str, namespace: Optional[str], name: str) -> Object:
    """The object, read live from the API server (not from the cache)."""
    return Object(_call(lambda: _raw.get(_resource(api_version, kind), namespace, name)))


def create(obj: Union[dict, str]) -> Object:
    """Creates ``obj`` (its namespace is ``metadata.namespace``); returns it as created."""
    return Object(_call(lambda: _raw.create(_text(obj))))


def update(obj: Union[dict, str]) -> Object:
    """Replaces ``obj``; its ``metadata.resourceVersion`` is the version it was read at."""
    return Object(_call(lambda: _raw.update(_text(obj))))


def update_status(obj: Union[dict, str]) -> Object:
    """Replaces the status of ``obj`` (its status subresource)."""
    return Object(_call(lambda: _raw.update_status(_text(obj))))


def patch(
    api_version: str,
    kind: str,
    namespace: Optional[str],
    name: str,
    patch: Union[dict, list, str],
    type: str = "merge",
    force: bool = False,
) -> Object:
    """Patches an object: ``type`` is ``"merge"``, ``"json"``, ``"strategic"`` or
    ``"apply"`` (server-side apply with the plugin's name as field manager)."""
    doc = _patch(patch, type, force)
    return Object(_call(lambda: _raw.patch(_resource(api_version, kind), namespace, name, doc)))


def patch_status(
    api_version: str, kind: str, namespace: Optional[str], name: str, patch: Union[dict, list, str], type: str = "merge"
) -> Object:
    """Patches the status subresource of an object."""
    doc = _patch(patch, type, False)
    return Object(_call(lambda: _raw.patch_status(_resource(api_version, kind), namespace, name, doc)))


def apply(obj: dict, force: bool = False) -> Object:
    """Server-side applies ``obj`` (apiVersion, kind, metadata.name and namespace, and the
    fields the plugin manages)."""
    meta = obj.get("metadata", {})
    return patch(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta.get("name", ""), obj, "apply", force)


def delete(
    api_version: str,
    kind: str,
    namespace: Optional[str],
    name: str,
    uid: Optional[str] = None,
    resource_version: Optional[str] = None,
    propagation: Optional[str] = None,
    grace_period_seconds: Optional[int] = None,
) -> Optional[Object]:
    """Deletes an object; returns it while its finalizers run, else ``None``. ``uid`` and
    ``resource_version`` are preconditions; ``propagation`` is ``"orphan"``,
    ``"background"`` or ``"foreground"``."""
    propagations = {
        "orphan": _raw.Propagation.ORPHAN,
        "background": _raw.Propagation.BACKGROUND,
        "foreground": _raw.Propagation.FOREGROUND,
    }
    options = _raw.DeleteOptions(
        uid, resource_version, propagations[propagation] if propagation else None, grace_period_seconds
    )
    raw = _call(lambda: _raw.delete(_resource(api_version, kind), namespace, name, options))
    return Object(raw) if raw is not None else None


def record_event(regarding: Object, type: str, reason: str, action: str, note: str) -> None:
    """Records an Event about ``regarding``; ``type`` is ``"Normal"`` or ``"Warning"`` (any
    other raises ``ValueError``). Identical Events about one object are aggregated by the
    host. The manifest must allow ``create`` and ``patch`` on ``events`` in group
    ``events.k8s.io``: a repeated Event patches the first one's count."""
    event_types = {"Normal": _raw.EventType.NORMAL, "Warning": _raw.EventType.WARNING}
    if type not in event_types:
        raise ValueError(f"an Event's type is \"Normal\" or \"Warning\", not {type!r}")
    ref = _types.ObjectReference(regarding.api_version, regarding.kind, regarding.namespace, regarding.name, regarding.uid)
    event_type = event_types[type]
    _call(lambda: _raw.record_event(_raw.Event(ref, event_type, reason, action, note)))
