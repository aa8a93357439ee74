"""conformance-python: the Python guest of wink's conformance suite.

Implements tests/conformance/SPEC.md with the wink Python SDK; the Rust, JavaScript and C
guests beside this one implement the same lines. Build with ``cargo xtask build-plugins``;
``cargo test -p wink-tests --test conformance`` runs it.
"""

import time

import wink
from wink import cache, cluster, log


class LookupFailed(wink.Fatal):
    """A cache read that failed other than as the spec lists."""

    def __init__(self, what: str) -> None:
        log.error(f"lookup failed {what}")
        super().__init__(what)


class WriteFailed(wink.Fatal):
    """A request that failed other than as the spec lists."""

    def __init__(self, what: str) -> None:
        log.error(f"write failed {what}")
        super().__init__(what)


def send(what, request):
    """Runs a request; a failure is ``write failed <what>``."""
    try:
        return request()
    except wink.RequestError as e:
        raise WriteFailed(f"{what}: {e.reason}: {e}")


def refusal(request):
    """The reason of the RequestError ``request`` fails with (None when it succeeds)."""
    try:
        request()
    except wink.RequestError as e:
        return e.reason
    return None


def write(obj):
    """Step 4 of the spec: the requests to the cluster."""
    ns = obj.namespace or ""
    made_name = f"{obj.name}-made"
    made = f"{ns}/{made_name}"

    def config_map(step):
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": made_name, "namespace": ns}, "data": {"step": step}}

    created = send("create", lambda: cluster.create(config_map("created")))
    log.info(f"write create key={made} step={created.body['data']['step']}")
    patched = send("patch", lambda: cluster.patch("v1", "ConfigMap", ns, made_name, {"data": {"step": "patched"}}))
    log.info(f"write patch key={made} step={patched.body['data']['step']}")
    stale = created.body
    stale["data"]["step"] = "stale"
    conflict = refusal(lambda: cluster.update(stale))
    if conflict != "conflict":
        raise WriteFailed(f"a stale update ended with {conflict}")
    log.info(f"write conflict key={made}")
    live = send("get", lambda: cluster.get("v1", "ConfigMap", ns, made_name)).body
    live["data"]["step"] = "updated"
    updated = send("update", lambda: cluster.update(live))
    log.info(f"write update key={made} step={updated.body['data']['step']}")
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{obj.name}-secret", "namespace": ns}}
    denied = refusal(lambda: cluster.create(secret))
    if denied != "not-permitted":
        raise WriteFailed(f"creating a Secret ended with {denied}")
    log.info(f"write denied resource=v1/Secret error={denied}")
    send("record-event", lambda: cluster.record_event(obj, "Normal", "Conformance", "Write", f"wrote {made}"))
    log.info("write event reason=Conformance")
    if time.time() > 1_700_000_000:
        log.info("write clock ok")
    return wink.requeue_after(0.001)


class Conformance(wink.Plugin):
    def __init__(self) -> None:
        self.lookup_key = ""
        self.retried = set()

    def init(self, config):
        if not isinstance(config, dict) or not isinstance(config.get("lookupKey"), str):
            raise ValueError("bad config: lookupKey must be a string")
        self.lookup_key = config["lookupKey"]
        log.trace("init level=trace")
        log.debug("init level=debug")
        log.info("init level=info")
        log.warn("init level=warn")
        log.error("init level=error")

    def on_add(self, obj, initial_list):
        log.info(f"add key={obj.key} rv={obj.resource_version} initial={str(initial_list).lower()}")
        self.react(obj, may_look_up=True)
        if obj.label("conformance/write") == "true":
            return write(obj)
        return None

    def on_update(self, old, new):
        log.info(f"update key={new.key} old_rv={old.resource_version} new_rv={new.resource_version}")
        self.react(new, may_look_up=True)
        if new.label("conformance/write") == "true" and old.resource_version == new.resource_version:
            log.info(f"requeue key={new.key}")
        return None

    def on_delete(self, obj, final_state_unknown):
        log.info(f"delete key={obj.key} rv={obj.resource_version} unknown={str(final_state_unknown).lower()}")
        self.react(obj, may_look_up=False)

    def react(self, obj, may_look_up):
        if obj.label("conformance/retry") == "once" and obj.key not in self.retried:
            self.retried.add(obj.key)
            log.info(f"retry key={obj.key}")
            raise wink.Retry("asked to retry")
        if obj.label("conformance/fatal") == "true":
            log.info(f"fatal key={obj.key}")
            raise wink.Fatal("asked to fail")
        if may_look_up and obj.label("conformance/lookup") == "true":
            self.lookup(obj)

    def lookup_get(self, key):
        try:
            cm = cache.get("v1", "ConfigMap", key)
        except wink.CacheError as e:
            raise LookupFailed(f"get {key}: {e}")
        if cm is None:
            log.info(f"lookup get key={key} found=false")
            return
        greeting = cm.body.get("data", {}).get("greeting")
        if not isinstance(greeting, str):
            raise LookupFailed(f"{key} has no data.greeting")
        log.info(f"lookup get key={key} found=true rv={cm.resource_version} greeting={greeting}")

    def lookup(self, obj):
        ns = obj.namespace or ""
        self.lookup_get(self.lookup_key)
        self.lookup_get(f"{ns}/absent")
        try:
            pods = cache.by_index("v1", "Pod", cache.NAMESPACE_INDEX, ns)
        except wink.CacheError as e:
            raise LookupFailed(f"by-index: {e}")
        log.info(f"lookup index=namespace value={ns} keys={','.join(p.key for p in pods)}")
        try:
            cache.get("v1", "Secret", f"{ns}/token")
            raise LookupFailed("reading a Secret was not refused")
        except wink.CacheError as e:
            log.info(f"lookup denied resource=v1/Secret error={e.reason}")
        try:
            cache.by_index("v1", "Pod", "no-such-index", "x")
            raise LookupFailed("an unknown index was not refused")
        except wink.CacheError as e:
            log.info(f"lookup denied index=no-such-index error={e.reason}")


Handler = wink.export(Conformance)
