"""namespace-defaults: gives every team's Namespace a ResourceQuota and a RoleBinding.

A Namespace labelled ``<teamLabel>: <team>`` gets, from the config:

- ResourceQuota ``team-defaults`` with ``spec.hard`` = ``quota``;
- RoleBinding ``team-<team>`` granting ClusterRole ``role`` to the group ``team-<team>``.

A reconciler (``reconcile:`` in plugin.yaml): the host calls :meth:`reconcile` with a
Namespace's name whenever the Namespace, or a ResourceQuota or RoleBinding it controls,
changes — so a deleted or edited default comes back. Each object is read live and written
only when it differs (created when missing, with the Namespace as its controller owner), so
the plugin is idempotent. A failed write is recorded as a Warning Event on the Namespace and
retried with backoff when transient. Build with ``cargo xtask build-plugins``.

Config::

    teamLabel: team                       # default "team"
    quota: {pods: "50", requests.cpu: "20"}   # required
    role: edit                            # default "edit"
"""

import wink
from wink import cache, cluster, log


def desired(ns: wink.Object, team: str, quota: dict, role: str) -> list:
    """The objects a team's Namespace must hold."""
    namespace = ns.name
    objects = [
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "team-defaults", "namespace": namespace, "labels": {"team": team}},
            "spec": {"hard": quota},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"team-{team}", "namespace": namespace, "labels": {"team": team}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": f"team-{team}"}],
        },
    ]
    return [wink.set_controller_reference(ns, obj) for obj in objects]


def differs(live: dict, want: dict) -> bool:
    """Whether ``live`` lacks anything ``want`` sets (labels, spec, roleRef, subjects)."""
    for field in ("spec", "roleRef", "subjects"):
        if field in want and live.get(field) != want[field]:
            return True
    labels = live.get("metadata", {}).get("labels") or {}
    owners = live.get("metadata", {}).get("ownerReferences") or []
    controlled = any(o.get("uid") == want["metadata"]["ownerReferences"][0]["uid"] for o in owners)
    return not controlled or any(labels.get(k) != v for k, v in want["metadata"]["labels"].items())


def ensure(want: dict) -> str:
    """Creates or updates ``want``; returns what was done."""
    meta = want["metadata"]
    try:
        live = cluster.get(want["apiVersion"], want["kind"], meta["namespace"], meta["name"]).body
    except wink.RequestError as e:
        if e.reason != "not-found":
            raise
        cluster.create(want)
        return "created"
    if not differs(live, want):
        return "unchanged"
    merged = dict(live)
    for field in ("spec", "roleRef", "subjects"):
        if field in want:
            merged[field] = want[field]
    merged["metadata"] = dict(live["metadata"])
    merged["metadata"]["labels"] = {**(live["metadata"].get("labels") or {}), **meta["labels"]}
    owners = [o for o in live["metadata"].get("ownerReferences") or [] if not o.get("controller")]
    merged["metadata"]["ownerReferences"] = owners + meta["ownerReferences"]
    cluster.update(merged)
    return "updated"


class NamespaceDefaults(wink.Reconciler):
    def init(self, config):
        if not isinstance(config, dict) or not isinstance(config.get("quota"), dict) or not config["quota"]:
            raise ValueError('config.quota is required, e.g. {"quota": {"pods": "50"}}')
        self.team_label = config.get("teamLabel", "team")
        self.quota = {str(k): str(v) for k, v in config["quota"].items()}
        self.role = config.get("role", "edit")

    def reconcile(self, key: wink.Key):
        ns = cache.get("v1", "Namespace", key.key)
        if ns is None:
            return None  # deleted: what it held goes with it
        team = ns.label(self.team_label)
        if not team or ns.deletion_timestamp is not None:
            return None
        for want in desired(ns, team, self.quota, self.role):
            what = f"{want['kind']} {ns.name}/{want['metadata']['name']}"
            try:
                done = ensure(want)
            except wink.RequestError as e:
                note = f"cannot write {what}: {e.reason}: {e}"
                log.warn(f"Namespace {ns.name}: {note}")
                try:
                    cluster.record_event(ns, "Warning", "DefaultsFailed", "Reconcile", note)
                except wink.RequestError as event_error:
                    log.debug(f"no Event recorded: {event_error}")
                raise
            if done != "unchanged":
                log.info(f"Namespace {ns.name} (team {team}): {what} {done}")
        return None


Reconciler = wink.export(NamespaceDefaults)
