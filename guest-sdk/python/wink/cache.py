"""Read-only access to the host's informer cache.

A plugin reads only the resources its manifest watches or lists under ``cache:``, and only
in the namespaces it was granted; other reads raise :class:`wink.CacheError`. Results are
:class:`wink.Object` s, sorted by key.
"""

import builtins
from typing import List, Optional

from componentize_py_types import Err
from wit_world.imports import cache as _raw
from wit_world.imports import types as _types

from .errors import CacheError
from .objects import Object

#: The built-in index of objects by namespace.
NAMESPACE_INDEX = "namespace"
#: The built-in index of objects by the uid of each of their ownerReferences.
OWNER_UID_INDEX = "owner-uid"


def _refused(err: Err) -> CacheError:
    value = err.value
    if isinstance(value, _raw.CacheError_NotPermitted):
        return CacheError("not-permitted", value.value)
    return CacheError("unknown-index", value.value)


def get(api_version: str, kind: str, key: str) -> Optional[Object]:
    """The object of ``(api_version, kind)`` with this key (``namespace/name`` or ``name``),
    or ``None`` when it is not cached."""
    try:
        raw = _raw.get(_types.Resource(api_version, kind), key)
    except Err as err:
        raise _refused(err) from None
    return Object(raw) if raw is not None else None


def list(api_version: str, kind: str, namespace: Optional[str] = None) -> List[Object]:
    """Every cached object of the resource, or those in ``namespace``."""
    try:
        raw = _raw.list(_types.Resource(api_version, kind), namespace)
    except Err as err:
        raise _refused(err) from None
    return [Object(o) for o in raw]


def by_index(api_version: str, kind: str, index: str, value: str) -> List[Object]:
    """The objects whose index ``index`` yields ``value`` (see :data:`NAMESPACE_INDEX`,
    :data:`OWNER_UID_INDEX`)."""
    try:
        raw = _raw.by_index(_types.Resource(api_version, kind), index, value)
    except Err as err:
        raise _refused(err) from None
    return builtins.list(Object(o) for o in raw)
