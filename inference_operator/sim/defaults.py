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

import functools
import ipaddress
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any, Final

from ..errors import Invalid
from ..jsoncopy import copy_without_nulls
from .kinds import traits_of
from .validation import validate_deployment, validate_service

__all__ = [
    "Allocator",
    "Defaulter",
    "canonical_quantity",
    "ingest",
    "ingest_status",
    "initial_status",
    "prepare",
]

Obj = dict[str, Any]
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
    way ``omitempty`` drops them (``env: []``, ``value: ""``, ``nodeSelector: {}`` …). One
    copying pass does both, since this runs on every write.
    """
    if not traits_of(kind).built_in:
        return copy_without_nulls(dict(obj))
    out: Obj = {}
    for key, value in obj.items():
        if key in _ENVELOPE:
            if value is not None:
                out[key] = copy_without_nulls(value)
        elif type(value) is dict and _is_map(key, value):  # data, stringData: its "" values are values
            if value:
                out[key] = copy_without_nulls(value)
        elif type(value) is dict:
            out[key] = _copy_pruned(value)
        elif value is not None and value != "" and value != []:
            out[key] = copy_without_nulls(value)
    return out


def ingest_status(kind: str, status: Any) -> Any:
    """A copy of a status written through the status subresource (pruned as :func:`ingest`)."""
    if traits_of(kind).built_in and type(status) is dict:
        return _copy_pruned(status)
    return copy_without_nulls(status)


def prepare(kind: str, obj: Obj, old: Obj | None, allocator: Allocator, extra: Defaulter | None = None) -> None:
    """Default and validate an :func:`ingest`-ed ``obj`` in place, as the API server does.

    ``old`` is the stored object on update (``None`` on create): Services keep their
    allocated cluster IP and node ports when an update leaves them out. Only ``spec`` is
    modified (``status`` may be shared with the stored object and must stay untouched).
    """
    if kind == "Deployment":
        _default_deployment(obj)
    elif kind == "Service":
        _default_service(obj, old, allocator)
    if extra is not None:
        extra(obj)
    if kind == "Deployment":
        validate_deployment(obj, old)
    elif kind == "Service":
        validate_service(obj)


# --- omitempty ---------------------------------------------------------------------------

_MAP_FIELDS: Final = frozenset(
    {"labels", "annotations", "nodeSelector", "matchLabels", "limits", "requests", "data", "stringData", "binaryData"}
)
"""Go map fields: dropped when empty, and their values (label values …) are never pruned."""
_KEEP_EMPTY: Final = frozenset({"securityContext", "resources", "emptyDir", "loadBalancer"})
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


# --- Deployment ----------------------------------------------------------------------------


def _default_deployment(obj: Obj) -> None:
    spec = _child(obj, "spec")
    spec.setdefault("replicas", 1)
    strategy = _child(spec, "strategy")
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = _child(strategy, "rollingUpdate")
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _default_pod_spec(_child(_child(spec, "template"), "spec"))


def _default_pod_spec(pod: Obj) -> None:
    pod.setdefault("restartPolicy", "Always")
    pod.setdefault("terminationGracePeriodSeconds", 30)
    pod.setdefault("dnsPolicy", "ClusterFirst")
    pod.setdefault("securityContext", {})
    pod.setdefault("schedulerName", "default-scheduler")
    for field in ("initContainers", "containers"):
        for container in pod.get(field) or ():
            if isinstance(container, dict):
                _default_container(container)


def _default_container(container: Obj) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("imagePullPolicy", _pull_policy(str(container.get("image", ""))))
    resources = container.setdefault("resources", {})
    if isinstance(resources, dict):
        for section in ("limits", "requests"):
            values = resources.get(section)
            if isinstance(values, dict):
                resources[section] = {k: canonical_quantity(v) for k, v in values.items()}
    for port in container.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in container.get("env") or ():
        field_ref = env.get("valueFrom", {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(field_ref, dict):
            field_ref.setdefault("apiVersion", "v1")
    for probe_name in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(probe_name)
        if isinstance(probe, dict):
            probe.setdefault("timeoutSeconds", 1)
            probe.setdefault("periodSeconds", 10)
            probe.setdefault("successThreshold", 1)
            probe.setdefault("failureThreshold", 3)
            http_get = probe.get("httpGet")
            if isinstance(http_get, dict):
                http_get.setdefault("path", "/")
                http_get.setdefault("scheme", "HTTP")


def _pull_policy(image: str) -> str:
    """``Always`` for ``:latest`` or untagged images, else ``IfNotPresent`` (as the API server)."""
    if "@" in image:
        return "IfNotPresent"
    last_segment = image.rsplit("/", 1)[-1]
    tag = last_segment.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


# --- quantities ------------------------------------------------------------------------------

_QUANTITY_RE: Final = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))((?:[KMGTPE]i)|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_DECIMAL_EXPONENTS: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIXES: Final = {e: s for s, e in _DECIMAL_EXPONENTS.items()}
_BINARY_SUFFIXES: Final = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO: Final = Decimal("1e-9")


def canonical_quantity(value: Any) -> Any:
    """A resource quantity in the canonical form the API server stores and returns.

    ``2`` → ``"2"``, ``0.5`` → ``"500m"``, ``"1000m"`` → ``"1"``, ``"1024Mi"`` → ``"1Gi"``,
    ``"1.5Gi"`` → ``"1536Mi"``, ``"2000000"`` → ``"2M"``. Values that are not quantities are
    returned unchanged (the real API server would reject them).
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return value
    return _canonical_quantity(value)


@functools.lru_cache(maxsize=4096, typed=True)
def _canonical_quantity(value: int | float | str) -> Any:
    text = value.strip() if isinstance(value, str) else repr(value)
    match = _QUANTITY_RE.match(text)
    if match is None:
        return value
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:
        return value
    suffix = match.group(2) or ""
    if suffix in _BINARY_SUFFIXES:
        amount = number * (1024 ** (_BINARY_SUFFIXES.index(suffix) + 1))
        if amount == amount.to_integral_value() and abs(amount) >= 1024:
            return _format_binary(int(amount))
        return _format_decimal(amount, exponent_form=False)
    if suffix[:1] in ("e", "E"):
        return _format_decimal(number.scaleb(int(suffix[1:])), exponent_form=True)
    return _format_decimal(number.scaleb(_DECIMAL_EXPONENTS[suffix]), exponent_form=False)


def _format_binary(amount: int) -> str:
    for power in range(len(_BINARY_SUFFIXES), 0, -1):
        unit = 1024**power
        if amount % unit == 0:
            return f"{amount // unit}{_BINARY_SUFFIXES[power - 1]}"
    return str(amount)


def _format_decimal(amount: Decimal, *, exponent_form: bool) -> str:
    # Sub-nano precision is rounded up, as resource.Quantity does.
    nanos = int((amount / _NANO).to_integral_value(rounding=ROUND_CEILING))
    if nanos == 0:
        return "0"
    exponent = -9
    while exponent < 18 and nanos % 1000 == 0:
        nanos //= 1000
        exponent += 3
    if exponent_form:
        return f"{nanos}e{exponent}" if exponent else str(nanos)
    return f"{nanos}{_DECIMAL_SUFFIXES[exponent]}"


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


# --- helpers -----------------------------------------------------------------------------------


def _child(node: Obj, key: str) -> Obj:
    """``node[key]``, created as ``{}`` when absent (and replaced when not a dict)."""
    value = node.get(key)
    if not isinstance(value, dict):
        value = node[key] = {}
    return value


def _name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))
