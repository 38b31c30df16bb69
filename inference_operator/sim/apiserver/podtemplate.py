"""The defaults kube-apiserver fills into Deployments and their pod templates, and quantities.

Split from :mod:`.defaults` (which decides, per kind, what runs on a write): a pod template has
the most defaults of anything the operator writes (``dnsPolicy``, probe timeouts, volume modes
``420``, ``fieldRef.apiVersion``, ``resourceFieldRef.divisor`` …) and its resource quantities are
stored in canonical form (``0.5`` → ``500m``), so an operator that compares what it sent with
what it reads back would see a difference on every pass if the fake left them out.
"""

from __future__ import annotations

import functools
import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Any, Final

from inference_operator.core.objects import Obj

__all__ = ["canonical_quantity", "default_deployment", "default_pod_spec", "default_replicaset"]


DEFAULT_MODE: Final = 0o644
"""``defaultMode`` of configMap, secret, projected and downwardAPI volumes (420)."""


def default_deployment(obj: Obj) -> None:
    """Fill a Deployment's defaults in place, pod template included."""
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
    default_pod_spec(_child(_child(spec, "template"), "spec"))


def default_replicaset(obj: Obj) -> None:
    """Fill a ReplicaSet's defaults in place, pod template included (one the Deployment
    controller makes has them from its Deployment already; one created as it is may not)."""
    spec = _child(obj, "spec")
    spec.setdefault("replicas", 1)
    default_pod_spec(_child(_child(spec, "template"), "spec"))


def default_pod_spec(pod: Obj) -> None:
    """Fill a pod spec's defaults in place: the pod's, its containers' and its volumes'."""
    pod.setdefault("restartPolicy", "Always")
    pod.setdefault("terminationGracePeriodSeconds", 30)
    pod.setdefault("dnsPolicy", "ClusterFirst")
    pod.setdefault("securityContext", {})
    pod.setdefault("schedulerName", "default-scheduler")
    for field in ("initContainers", "containers"):
        for container in pod.get(field) or ():
            if isinstance(container, dict):
                _default_container(container)
    for volume in pod.get("volumes") or ():
        if isinstance(volume, dict):
            _default_volume(volume)


def _default_volume(volume: Obj) -> None:
    empty_dir = volume.get("emptyDir")
    if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
        empty_dir["sizeLimit"] = canonical_quantity(empty_dir["sizeLimit"])  # stored as a Quantity
    for source in ("configMap", "secret", "projected", "downwardAPI"):
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", DEFAULT_MODE)
    downward = volume.get("downwardAPI")
    for item in downward.get("items") or () if isinstance(downward, dict) else ():
        if isinstance(item, dict):
            _default_references(item)
    projected = volume.get("projected")
    for projection in projected.get("sources") or () if isinstance(projected, dict) else ():
        downward = projection.get("downwardAPI") if isinstance(projection, dict) else None
        for item in downward.get("items") or () if isinstance(downward, dict) else ():
            if isinstance(item, dict):
                _default_references(item)


def _default_references(source: Obj) -> None:
    """``fieldRef.apiVersion`` and ``resourceFieldRef.divisor`` of an env source or downward item."""
    field_ref = source.get("fieldRef")
    if isinstance(field_ref, dict):
        field_ref.setdefault("apiVersion", "v1")
    resource_ref = source.get("resourceFieldRef")
    if isinstance(resource_ref, dict):
        resource_ref["divisor"] = canonical_quantity(resource_ref.get("divisor", "0"))


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
        source = env.get("valueFrom") if isinstance(env, dict) else None
        if isinstance(source, dict):
            _default_references(source)
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


def _child(node: Obj, key: str) -> Obj:
    """``node[key]``, created as ``{}`` when absent (and replaced when not a dict)."""
    value = node.get(key)
    if not isinstance(value, dict):
        value = node[key] = {}
    return value
