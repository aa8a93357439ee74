"""reconcile-probe: a reconciler whose primaries (ConfigMaps) say what to do, for the tests of
the reconciler machinery (tests/tests/reconcilers.rs). Each call logs
``reconcile key=<key>``, then, by the ConfigMap's ``data``:

- ``enqueue: <name>``: the first time, enqueues the key ``<namespace>/<name>`` (another
  primary) and logs ``enqueued other=<key>``;
- ``fail: <n>``: the first ``n`` calls for the key log ``fail key=<key> attempt=<i>`` and
  raise ``wink.Retry``; the next logs ``recovered key=<key>``.

A ConfigMap that is gone logs ``gone key=<key>``. A Secret maps (``map_to_keys``) to the
ConfigMap its annotation ``probe/for`` names, logging ``map secret=<key> to=<key>``.
"""

import wink
from wink import cache, log


class Probe(wink.Reconciler):
    def init(self, config) -> None:
        self.enqueued = set()
        self.failures = {}

    def reconcile(self, key: wink.Key):
        log.info(f"reconcile key={key.key}")
        config_map = cache.get("v1", "ConfigMap", key.key)
        if config_map is None:
            log.info(f"gone key={key.key}")
            return None
        data = config_map.body.get("data") or {}
        other = data.get("enqueue")
        if other and key.key not in self.enqueued:
            self.enqueued.add(key.key)
            wink.enqueue(wink.Key(key.namespace, other))
            log.info(f"enqueued other={key.namespace}/{other}")
        if "fail" in data:
            attempt = self.failures.get(key.key, 0) + 1
            self.failures[key.key] = attempt
            if attempt <= int(data["fail"]):
                log.info(f"fail key={key.key} attempt={attempt}")
                raise wink.Retry(f"asked to fail {data['fail']} times")
            if attempt == int(data["fail"]) + 1:
                log.info(f"recovered key={key.key}")
        return None


    def map_to_keys(self, obj: wink.Object):
        target = obj.annotation("probe/for")
        if not target:
            return []
        log.info(f"map secret={obj.key} to={obj.namespace}/{target}")
        return [wink.Key(obj.namespace, target)]


Reconciler = wink.export(Probe)
