"""service-for-deployment: gives each Deployment annotated ``wink.dev/expose: "true"`` a
Service it owns — recreated when deleted, updated when the Deployment's ports change, deleted
when the annotation goes.

A reconciler (``reconcile:`` in plugin.yaml): the host calls :meth:`reconcile` with the key of
a Deployment whenever the Deployment or a Service it controls changes. Each call reads the
current state from the cache and makes the Service match it, so it does the right thing
whatever changed, however many events were folded into one call.

The Service has the Deployment's name and namespace, its pod selector
(``spec.selector.matchLabels``) and one port per container port (named after it, or
``port-<number>``), and an owner reference naming the Deployment as its controller (so the
cluster's garbage collector deletes it with the Deployment). A Service of that name that the
Deployment does not control is left alone, with a Warning Event. Build with ``cargo xtask
build-plugins``.

Config::

    annotation: wink.dev/expose   # default
"""

from typing import Optional

import wink
from wink import cache, cluster, log


def desired_ports(deployment: dict) -> list:
    """A Service port for every container port of the pod template, in order."""
    ports = []
    containers = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])
    for container in containers:
        for port in container.get("ports", []) or []:
            number = port.get("containerPort")
            if not isinstance(number, int):
                continue
            ports.append(
                {
                    "name": port.get("name") or f"port-{number}",
                    "port": number,
                    "targetPort": number,
                    "protocol": port.get("protocol", "TCP"),
                }
            )
    return ports


def controlled_by_a_deployment_named(service: wink.Object, name: str) -> bool:
    """Whether ``service``'s controller is a Deployment called ``name`` (one that is gone)."""
    controller = wink.controller_of(service)
    return controller is not None and controller.kind == "Deployment" and controller.name == name


def owned_ports(service: wink.Object) -> list:
    """The ports of a Service as this plugin writes them (the fields it sets)."""
    keep = ("name", "port", "targetPort", "protocol")
    return [{k: p.get(k) for k in keep if k in p} for p in service.body.get("spec", {}).get("ports", [])]


class ServiceForDeployment(wink.Reconciler):
    def init(self, config) -> None:
        config = config or {}
        self.annotation = config.get("annotation", "wink.dev/expose")
        if not isinstance(self.annotation, str) or not self.annotation:
            raise ValueError("config.annotation must be an annotation key")

    def reconcile(self, key: wink.Key) -> Optional[wink.Requeue]:
        deployment = cache.get("apps/v1", "Deployment", key.key)
        service = cache.get("v1", "Service", key.key)
        wanted = deployment is not None and deployment.deletion_timestamp is None
        wanted = wanted and deployment.annotation(self.annotation) == "true"
        if not wanted:
            # Gone, going, or no longer annotated: remove the Service it controlled. (A
            # cluster's garbage collector would, for a deleted Deployment; not every cluster
            # wink runs against has one.)
            ours = deployment is not None and wink.is_controlled_by(service, deployment) if service is not None else False
            if service is not None and deployment is None:
                ours = controlled_by_a_deployment_named(service, key.name)
            if ours:
                cluster.delete("v1", "Service", key.namespace, key.name)
                log.info(f"{key.key}: not exposed any more, Service deleted")
            return None
        body = deployment.body
        ports = desired_ports(body)
        if not ports:
            cluster.record_event(deployment, "Warning", "NoPorts", "Expose", "no container declares a port")
            return None
        selector = body.get("spec", {}).get("selector", {}).get("matchLabels", {})
        if service is None:
            wanted = {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": key.name,
                    "namespace": key.namespace,
                    "labels": {"app.kubernetes.io/managed-by": "service-for-deployment"},
                },
                "spec": {"selector": selector, "ports": ports},
            }
            cluster.create(wink.set_controller_reference(deployment, wanted))
            cluster.record_event(deployment, "Normal", "ServiceCreated", "Expose", f"created Service {key.key}")
            log.info(f"{key.key}: Service created with ports {[p['port'] for p in ports]}")
            return None
        if not wink.is_controlled_by(service, deployment):
            note = f"Service {key.key} exists and is not controlled by this Deployment; left alone"
            cluster.record_event(deployment, "Warning", "ServiceExists", "Expose", note)
            return None
        current_selector = service.body.get("spec", {}).get("selector", {})
        if owned_ports(service) != ports or current_selector != selector:
            patch = {"spec": {"selector": selector, "ports": ports}}
            cluster.patch("v1", "Service", key.namespace, key.name, patch, type="merge")
            cluster.record_event(deployment, "Normal", "ServiceUpdated", "Expose", f"updated Service {key.key}")
            log.info(f"{key.key}: Service updated to ports {[p['port'] for p in ports]}")
        return None


Reconciler = wink.export(ServiceForDeployment)
