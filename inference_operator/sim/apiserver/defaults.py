"""What the real kube-apiserver does to an object on its way into storage, per kind.

An operator that compares whole objects against what it sent sees a difference on every pass,
because the API server fills in defaults (``dnsPolicy``, ``clusterIP``, probe timeouts …),
drops empty fields the way Go's ``omitempty`` does, and rewrites resource quantities into
canonical form (``0.5`` → ``500m``). The fake API server must do the same, or the simulator
would bless exactly the endless-patch bug that a real cluster exposes. This module holds those
per-kind rules; the checks that follow them are in :mod:`.validation`, and the per-kind traits
(status subresource, generation, scope) in :mod:`.kinds`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any, Final

from inference_operator.core.errors import Invalid
from inference_operator.core.jsoncopy import copy_without_nulls
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver import configdata
from inference_operator.sim.apiserver.crdrules import validate_crd_rules
from inference_operator.sim.apiserver.crdschema import metadata_copy, request_copy
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.knownfields import prune_unknown
from inference_operator.sim.apiserver.nodevalidation import validate_node
from inference_operator.sim.apiserver.podtemplate import canonical_quantity, default_deployment, default_replicaset
from inference_operator.sim.apiserver.validation import (
    validate_deployment,
    validate_replicaset,
    validate_service,
)

__all__ = [
    "Allocator",
    "Defaulter",
    "canonical_quantity",
    "ingest",
    "ingest_status",
    "initial_status",
    "prepare",
]

Defaulter = Callable[[Obj], None]
"""Fills defaults into an object in place (the hook for a CRD's schema defaults)."""


def initial_status(kind: str) -> Obj | None:
    """The status a freshly created object has: the client's status is reset on create.

    Go-typed kinds serialise their empty status struct (``status: {}``; a Service's has an
    empty ``loadBalancer``); a custom resource with a status subresource has no status at all.
    """
    if kind == "Service":
        return {"loadBalancer": {}}
    if traits_of(kind).built_in:
        return {}
    return None


class Allocator:
    """Hands out Service cluster IPs (198.19.0.0/16, as the local control plane) and node
    ports, deterministically."""

    SERVICE_CIDR: Final = ipaddress.IPv4Network("198.19.0.0/16")
    NODE_PORTS: Final = range(30000, 32768)

    def __init__(self) -> None:
        self._next_ip = 10  # .1 is the kubernetes Service, .10 is usually kube-dns
        self._next_port = 0

    def cluster_ip(self) -> str:
        if self._next_ip >= self.SERVICE_CIDR.num_addresses - 1:
            raise Invalid(f"spec.clusterIPs: Internal error: range is full ({self.SERVICE_CIDR})", kind="Service")
        address = self.SERVICE_CIDR.network_address + self._next_ip
        self._next_ip += 1
        return str(address)

    def node_port(self) -> int:
        if self._next_port >= len(self.NODE_PORTS):
            raise Invalid("spec.ports.nodePort: Internal error: range is full (30000-32767)", kind="Service")
        port = self.NODE_PORTS[self._next_port]
        self._next_port += 1
        return port


def ingest(kind: str, obj: Mapping[str, Any]) -> Obj:
    """A copy of a client's object as the API server decodes it, owned by the caller.

    Entries set to ``null`` are dropped; for Go-typed kinds, so are empty optional fields, the
    way ``omitempty`` drops them (``env: []``, ``value: ""``, ``nodeSelector: {}`` …), and
    fields their Go type does not declare (:mod:`.knownfields`). One copying pass does the
    first two, since this runs on every write. ``metadata.managedFields`` is not copied
    (:func:`.crdschema.request_copy`).
    """
    if not traits_of(kind).built_in:
        return request_copy(obj)
    out: Obj = {}
    for key, value in obj.items():
        if key in _ENVELOPE:
            if value is not None:
                metadata = key == "metadata" and type(value) is dict
                out[key] = metadata_copy(value) if metadata else copy_without_nulls(value)
        elif type(value) is dict and _is_map(key, value):  # data, stringData: its "" values are values
            if value:
                out[key] = copy_without_nulls(value)
        elif type(value) is dict:
            if value or not _is_map(key, value):  # an empty top-level map (``data: {}``) is dropped
                out[key] = _copy_pruned(value)
        elif value is not None and value != "" and value != []:
            out[key] = copy_without_nulls(value)
    return prune_unknown(kind, out)


def ingest_status(kind: str, status: Any) -> Any:
    """A copy of a status written through the status subresource (pruned as :func:`ingest`)."""
    if traits_of(kind).built_in and type(status) is dict:
        return _copy_pruned(status)
    return copy_without_nulls(status)


def prepare(kind: str, obj: Obj, old: Obj | None, allocator: Allocator, extra: Defaulter | None = None) -> None:
    """Default and validate an :func:`ingest`-ed ``obj`` in place, as the API server does.

    ``old`` is the stored object on update (``None`` on create): Services keep their
    allocated cluster IP and node ports when an update leaves them out. Only ``spec`` is
    modified (``status`` may be shared with the stored object and must stay untouched; a
    created Node's status is replaced by a canonical copy, never changed in place).
    """
    if kind == "Deployment":
        default_deployment(obj)
    elif kind == "ReplicaSet":
        default_replicaset(obj)
    elif kind == "Service":
        _default_service(obj, old, allocator)
    elif kind in ("ConfigMap", "Secret"):
        configdata.prepare(kind, obj, old)
    elif kind == "Node":
        validate_node(obj)  # before canonical form: a quantity that does not parse is refused as sent
        if old is None:
            _canonical_node_resources(obj)
    if extra is not None:
        extra(obj)
    if kind == "Deployment":
        validate_deployment(obj, old)
    elif kind == "ReplicaSet":
        validate_replicaset(obj, old)
    elif kind == "Service":
        validate_service(obj)
    elif kind == "Node":
        validate_node(obj)
    elif kind == "CustomResourceDefinition":
        validate_crd_rules(obj)


# --- omitempty ---------------------------------------------------------------------------

_MAP_FIELDS: Final = frozenset(
    {"labels", "annotations", "nodeSelector", "matchLabels", "limits", "requests", "data", "stringData", "binaryData"}
)
"""Go map fields: dropped when empty, and their values (label values …) are never pruned."""
_KEEP_EMPTY: Final = frozenset(
    {
        "securityContext",
        "resources",
        "emptyDir",
        "loadBalancer",
        "affinity",
        # pointers whose emptiness validation refuses: an env source or a probe that names none
        "valueFrom",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
    }
)
"""Pointer-to-struct or plain struct fields that Go serialises as ``{}`` when empty."""
_ENVELOPE: Final = frozenset({"apiVersion", "kind", "metadata"})
_ATOMS: Final = frozenset({str, int, float, bool})


def _is_map(key: str, value: Obj) -> bool:
    if key == "selector":  # a Service's selector is a map; a workload's is a LabelSelector struct
        return "matchLabels" not in value and "matchExpressions" not in value
    return key in _MAP_FIELDS


def _copy_pruned(node: Obj) -> Obj:
    out: Obj = {}
    for key, value in node.items():
        kind = type(value)
        if kind in _ATOMS:
            if value != "":
                out[key] = value
        elif kind is dict:
            if _is_map(key, value):
                if value:
                    out[key] = copy_without_nulls(value)
                continue
            child = _copy_pruned(value)
            if child or key in _KEEP_EMPTY:
                out[key] = child
        elif kind is list:
            if value:
                out[key] = [_copy_pruned(item) if type(item) is dict else copy_without_nulls(item) for item in value]
        elif value is not None:
            out[key] = copy_without_nulls(value)
    return out


# --- Service -----------------------------------------------------------------------------------


def _default_service(obj: Obj, old: Obj | None, allocator: Allocator) -> None:
    spec = _child(obj, "spec")
    old_spec: Obj = old.get("spec", {}) if old is not None else {}
    service_type = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "ClientIP":
        config = _child(_child(spec, "sessionAffinityConfig"), "clientIP")
        config.setdefault("timeoutSeconds", 10800)
    old_ports = {
        (p.get("port"), p.get("protocol", "TCP")): p for p in old_spec.get("ports") or () if isinstance(p, dict)
    }
    needs_node_ports = service_type in ("NodePort", "LoadBalancer")
    for port in spec.get("ports") or ():
        if not isinstance(port, dict):
            continue
        port.setdefault("protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
        if needs_node_ports and not port.get("nodePort"):
            previous = old_ports.get((port.get("port"), port["protocol"]), {})
            port["nodePort"] = previous.get("nodePort") or allocator.node_port()
    if old is not None:
        _drop_type_dependent_fields(spec, old_spec, old_ports)
    if needs_node_ports:
        spec.setdefault("externalTrafficPolicy", "Cluster")
    if service_type == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)
    if service_type == "ExternalName":
        return
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if not spec.get("clusterIP") and not spec.get("clusterIPs"):
        if old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
            spec["clusterIPs"] = list(old_spec.get("clusterIPs") or [old_spec["clusterIP"]])
        else:
            spec["clusterIP"] = allocator.cluster_ip()
    cluster_ip = spec.get("clusterIP") or spec["clusterIPs"][0]
    spec["clusterIP"] = cluster_ip
    spec.setdefault("clusterIPs", [cluster_ip])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if old_spec.get("clusterIP") and old_spec["clusterIP"] != cluster_ip:
        raise Invalid(
            f'Service "{_name(obj)}" is invalid: spec.clusterIPs[0]: Invalid value: "{cluster_ip}": '
            "may not change once set",
            kind="Service",
            name=_name(obj),
        )


def _drop_type_dependent_fields(spec: Obj, old_spec: Obj, old_ports: dict[Any, Obj]) -> None:
    """A Service changed to a type that no longer needs node ports (or a load balancer) loses
    what only the old type used, unless this very update set it: the real strategy's
    ``dropTypeDependentFields``."""
    old_type, new_type = old_spec.get("type", "ClusterIP"), spec.get("type")
    if old_type in ("NodePort", "LoadBalancer") and new_type not in ("NodePort", "LoadBalancer"):
        for port in spec.get("ports") or ():
            if not isinstance(port, dict) or not port.get("nodePort"):
                continue
            previous = old_ports.get((port.get("port"), port.get("protocol", "TCP")), {})
            if port["nodePort"] == previous.get("nodePort"):
                del port["nodePort"]
        if spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
            spec.pop("externalTrafficPolicy", None)
    allocate = spec.get("allocateLoadBalancerNodePorts")
    if (
        old_type == "LoadBalancer"
        and new_type != "LoadBalancer"
        and allocate == old_spec.get("allocateLoadBalancerNodePorts")
    ):
        spec.pop("allocateLoadBalancerNodePorts", None)


# --- Node ------------------------------------------------------------------------------------


def _canonical_node_resources(obj: Obj) -> None:
    """A created Node's capacity and allocatable, stored in canonical form (a new status dict:
    the caller's may be shared)."""
    status = obj.get("status")
    if not isinstance(status, dict):
        return
    status = obj["status"] = dict(status)
    for field in ("capacity", "allocatable"):
        if isinstance(status.get(field), dict):
            status[field] = {name: canonical_quantity(value) for name, value in status[field].items()}


# --- helpers -----------------------------------------------------------------------------------


def _child(node: Obj, key: str) -> Obj:
    """``node[key]``, created as ``{}`` when absent (and replaced when not a dict)."""
    value = node.get(key)
    if not isinstance(value, dict):
        value = node[key] = {}
    return value


def _name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))
