"""image-policy: warns about workloads whose container images break the registry policy.

For every Pod, and every Deployment's Pod template, it checks each container image (init and
ephemeral containers too) and warns when:

- the image comes from a registry not in ``allowedRegistries`` (an image without a registry
  host, like ``busybox:1.36``, comes from ``docker.io``);
- ``denyLatest`` is on and the image is not pinned: no tag, or ``:latest``, and no digest.

It reports an object when it appears and when its images change, not on every resync.

Config::

    allowedRegistries: [registry.example.com]   # required, at least one
    denyLatest: true                            # default true

Build with ``cargo xtask build-plugins``.
"""

from typing import Iterator, List, Tuple

import wink
from wink import log

DEFAULT_REGISTRY = "docker.io"


def registry_of(image: str) -> str:
    """The registry host of an image reference, as container runtimes resolve it."""
    first, slash, _ = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return first
    return DEFAULT_REGISTRY


def is_unpinned(image: str) -> bool:
    """Whether the image has neither a digest nor a tag other than ``latest``."""
    if "@" in image:
        return False
    last = image.rsplit("/", 1)[-1]
    _, colon, tag = last.partition(":")
    return not colon or tag == "latest"


def malformed(obj: wink.Object, path: str, what: str) -> wink.Fatal:
    """The error of an object whose containers cannot be read: reported, never skipped, so
    that an ill-formed workload cannot hide its images from the policy."""
    return wink.Fatal(f"{obj.kind} {obj.key} is malformed: {path} is not {what}; its images cannot be checked")


def containers(obj: wink.Object) -> Iterator[Tuple[str, str]]:
    """``(container name, image)`` of every container of a Pod or a Pod template; raises
    :class:`wink.Fatal` naming the field when they cannot be read."""
    spec, path = obj.body.get("spec") or {}, "spec"
    if obj.kind != "Pod":
        if not isinstance(spec, dict):
            raise malformed(obj, path, "a mapping")
        spec, path = (spec.get("template") or {}), "spec.template"
        if not isinstance(spec, dict):
            raise malformed(obj, path, "a mapping")
        spec, path = spec.get("spec") or {}, "spec.template.spec"
    if not isinstance(spec, dict):
        raise malformed(obj, path, "a mapping")
    for field in ("initContainers", "containers", "ephemeralContainers"):
        listed = spec.get(field) or []
        if not isinstance(listed, list):
            raise malformed(obj, f"{path}.{field}", "a list")
        for i, container in enumerate(listed):
            if not isinstance(container, dict):
                raise malformed(obj, f"{path}.{field}[{i}]", "a mapping")
            image = container.get("image")
            if not isinstance(image, str):
                raise malformed(obj, f"{path}.{field}[{i}].image", "a string")
            yield container.get("name", "?"), image


class ImagePolicy(wink.Plugin):
    def __init__(self) -> None:
        self.allowed: List[str] = []
        self.deny_latest = True

    def init(self, config):
        if not isinstance(config, dict):
            raise ValueError("config must be a mapping with allowedRegistries")
        allowed = config.get("allowedRegistries")
        if not isinstance(allowed, list) or not allowed or not all(isinstance(r, str) for r in allowed):
            raise ValueError("config.allowedRegistries must be a non-empty list of registry hosts")
        deny_latest = config.get("denyLatest", True)
        if not isinstance(deny_latest, bool):
            raise ValueError("config.denyLatest must be true or false")
        self.allowed = allowed
        self.deny_latest = deny_latest
        log.debug(f"allowed registries: {', '.join(allowed)}; deny latest: {deny_latest}")

    def on_add(self, obj, initial_list):
        self.check(obj)

    def on_update(self, old, new):
        if sorted(containers(old)) != sorted(containers(new)):
            self.check(new)

    def check(self, obj: wink.Object) -> None:
        problems = []
        for name, image in containers(obj):
            registry = registry_of(image)
            if registry not in self.allowed:
                problems.append(f"container {name} runs {image} from {registry}, which is not an allowed registry")
            elif self.deny_latest and is_unpinned(image):
                problems.append(f"container {name} runs {image}, which is not pinned to a tag or digest")
        for problem in problems:
            log.warn(f"{obj.kind} {obj.key}: {problem} (allowed: {', '.join(self.allowed)})")
        if not problems:
            log.debug(f"{obj.kind} {obj.key}: images comply")


Handler = wink.export(ImagePolicy)
