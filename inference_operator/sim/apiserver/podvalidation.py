"""The validation kube-apiserver runs on a pod template, for the fields the operator writes.

Every field the operator builds from an InferenceService's spec ends up in a Deployment's pod
template: resources, tolerations, the node selector, env, args, ports, probes, the container's
name and image. A fake that accepted what the real server refuses would show ``Ready`` where a
cluster answers 422, so each rule here is the real one (pkg/apis/core/validation), with its field
path and words, and checked against a real kube-apiserver by the differential conformance suite
(tests/shared/conformance/checks/podtemplate.py). The template has been defaulted when it gets
here (requests copied from limits, quantities canonical, protocols and probe periods filled in).
"""

from __future__ import annotations

import re
from typing import Any, Final

from inference_operator.api.quantity import parse_quantity
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver import syntax

__all__ = ["QUANTITY_SYNTAX", "pod_spec_problems", "quantity_syntax_error"]


QUANTITY_SYNTAX: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY: Final = re.compile(QUANTITY_SYNTAX)
_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_OVERCOMMITTABLE: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_ENV_SOURCES: Final = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
_FIELD_PATHS: Final = frozenset(
    {
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.serviceAccountName",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    }
)
_SUBSCRIPTED_FIELD: Final = re.compile(r"^metadata\.(labels|annotations)\['[^']+'\]$")
_RESOURCE_FIELDS: Final = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
_HANDLERS: Final = ("exec", "httpGet", "tcpSocket", "grpc")
_PROBE_NUMBERS: Final = (
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
)


def _show(value: Any) -> str:
    """A value as Go's field errors print it: strings quoted, numbers bare."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def _invalid(path: str, value: Any, detail: str) -> str:
    return f"{path}: Invalid value: {_show(value)}: {detail}"


def _unsupported(path: str, value: Any, supported: tuple[str, ...]) -> str:
    listed = ", ".join(f'"{s}"' for s in supported)
    return f"{path}: Unsupported value: {_show(value)}: supported values: {listed}"


def quantity_syntax_error(pod: Obj) -> str:
    """Why a resource quantity of ``pod`` cannot be decoded ("" when all can): the real server
    refuses such a body before validation, with 400 and this sentence."""
    for container in _containers(pod):
        resources = container.get("resources") or {}
        for field in ("limits", "requests"):
            values = resources.get(field) if isinstance(resources, dict) else None
            for value in (values or {}).values() if isinstance(values, dict) else ():
                if isinstance(value, str) and not (
                    _QUANTITY.match(value.strip()) and parse_quantity(value) is not None
                ):
                    return f"quantities must match the regular expression '{QUANTITY_SYNTAX}'"
    return ""


def pod_spec_problems(pod: Obj, path: str) -> list[str]:
    """What the real server says is wrong with the (defaulted) pod spec at ``path``; [] if nothing."""
    problems: list[str] = []
    names: set[str] = set()
    for i, container in enumerate(_containers(pod)):
        where = f"{path}.containers[{i}]"
        name = str(container.get("name") or "")
        if name and name in names:
            problems.append(f'{where}.name: Duplicate value: "{name}"')
        names.add(name)
        problems += _container_problems(container, where)
    problems += _toleration_problems(pod.get("tolerations") or [], f"{path}.tolerations")
    problems += _node_selector_problems(pod.get("nodeSelector") or {}, f"{path}.nodeSelector")
    return problems


def _containers(pod: Obj) -> list[Obj]:
    return [c for c in pod.get("containers") or [] if isinstance(c, dict)]


def _container_problems(container: Obj, where: str) -> list[str]:
    problems: list[str] = []
    name = container.get("name")
    if not name:
        problems.append(f"{where}.name: Required value")
    else:
        problems += [_invalid(f"{where}.name", name, p) for p in syntax.dns_label_problems(str(name))]
    if not container.get("image"):
        problems.append(f"{where}.image: Required value")
    problems += _resource_problems(container.get("resources") or {}, f"{where}.resources")
    problems += _env_problems(container.get("env") or [], f"{where}.env")
    problems += _port_problems(container.get("ports") or [], f"{where}.ports")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(container.get(probe), dict):
            problems += _probe_problems(container[probe], f"{where}.{probe}", once=probe != "readinessProbe")
    return problems


# -- resources ------------------------------------------------------------------------------------


def _is_extended(name: str) -> bool:
    """A resource the cluster does not overcommit: a fully qualified name outside kubernetes.io."""
    return "/" in name and not name.startswith("kubernetes.io/") and not name.startswith("hugepages-")


def _resource_problems(resources: Obj, where: str) -> list[str]:
    problems: list[str] = []
    limits: Obj = resources.get("limits") or {}
    requests: Obj = resources.get("requests") or {}
    for field, values in (("limits", limits), ("requests", requests)):
        for name, value in values.items():
            at = f"{where}.{field}[{name}]"
            if "/" not in name and name not in _CONTAINER_RESOURCES and not name.startswith("hugepages-"):
                problems.append(_invalid(at, name, "must be a standard resource type or fully qualified"))
                problems.append(_invalid(at, name, "must be a standard resource for containers"))
            amount = parse_quantity(value)
            if amount is None:
                continue
            if amount < 0:
                problems.append(_invalid(at, str(value), "must be greater than or equal to 0"))
            if _is_extended(name) and amount != amount.to_integral_value():
                problems.append(_invalid(at, str(value), "must be an integer"))
    for name, value in requests.items():
        request, limit = parse_quantity(value), parse_quantity(limits.get(name))
        if request is None:
            continue
        if limit is None:
            if _is_extended(name):
                problems.append(f"{where}.limits: Required value: Limit must be set for non overcommitable resources")
        elif name in _OVERCOMMITTABLE and request > limit:
            problems.append(
                _invalid(
                    f"{where}.requests", str(value), f"must be less than or equal to {name} limit of {limits[name]}"
                )
            )
        elif name not in _OVERCOMMITTABLE and request != limit:
            problems.append(
                _invalid(f"{where}.requests", str(value), f"must be equal to {name} limit of {limits[name]}")
            )
    return problems


# -- scheduling: tolerations and the node selector ---------------------------------------------------


def _toleration_problems(tolerations: list[Any], where: str) -> list[str]:
    problems: list[str] = []
    for i, toleration in enumerate(t for t in tolerations if isinstance(t, dict)):
        at = f"{where}[{i}]"
        key, operator = str(toleration.get("key") or ""), str(toleration.get("operator") or "")
        value, effect = str(toleration.get("value") or ""), str(toleration.get("effect") or "")
        if key:
            problems += [_invalid(f"{at}.key", key, p) for p in syntax.label_key_problems(key)]
        elif operator != "Exists":
            problems.append(
                _invalid(
                    f"{at}.operator",
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values and all keys"',
                )
            )
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            problems.append(
                _invalid(f"{at}.effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set")
            )
        if operator in ("", "Equal"):
            # The real server names the operator's path for a bad value, not the value's.
            problems += [_invalid(f"{at}.operator", value, p) for p in syntax.label_value_problems(value)]
        elif operator == "Exists":
            if value:
                problems.append(_invalid(f"{at}.operator", value, "value must be empty when `operator` is 'Exists'"))
        else:
            problems.append(_unsupported(f"{at}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in _EFFECTS:
            problems.append(_unsupported(f"{at}.effect", effect, _EFFECTS))
    return problems


def _node_selector_problems(selector: Obj, where: str) -> list[str]:
    problems: list[str] = []
    for key, value in selector.items():
        problems += [_invalid(where, key, p) for p in syntax.label_key_problems(str(key))]
        problems += [_invalid(where, value, p) for p in syntax.label_value_problems(str(value))]
    return problems


# -- env ------------------------------------------------------------------------------------------------


def _env_problems(env: list[Any], where: str) -> list[str]:
    problems: list[str] = []
    for i, var in enumerate(v for v in env if isinstance(v, dict)):
        at = f"{where}[{i}]"
        name = str(var.get("name") or "")
        if not name:
            problems.append(f"{at}.name: Required value")
        else:
            problems += [_invalid(f"{at}.name", name, p) for p in syntax.env_name_problems(name)]
        source = var.get("valueFrom")
        if isinstance(source, dict):
            problems += _env_source_problems(source, f"{at}.valueFrom", has_value=bool(var.get("value")))
    return problems


def _env_source_problems(source: Obj, at: str, *, has_value: bool) -> list[str]:
    given = [field for field in _ENV_SOURCES if source.get(field) is not None]
    problems: list[str] = []
    if not given:
        listed = ", ".join(f"`{f}`" for f in _ENV_SOURCES[:-1]) + f" or `{_ENV_SOURCES[-1]}`"
        problems.append(_invalid(at, "", f"must specify one of: {listed}"))
    if has_value and given:
        problems.append(_invalid(at, "", "may not be specified when `value` is not empty"))
    if len(given) > 1:
        problems.append(_invalid(at, "", "may not have more than one field specified at a time"))
    field_ref = source.get("fieldRef")
    if isinstance(field_ref, dict):
        path = str(field_ref.get("fieldPath") or "")
        if not path:
            problems.append(f"{at}.fieldRef.fieldPath: Required value")
        elif path not in _FIELD_PATHS and not _SUBSCRIPTED_FIELD.match(path):
            detail = f"error converting fieldPath: field label not supported: {path}"
            problems.append(_invalid(f"{at}.fieldRef.fieldPath", path, detail))
    resource_ref = source.get("resourceFieldRef")
    if isinstance(resource_ref, dict):
        resource = str(resource_ref.get("resource") or "")
        if not resource:
            problems.append(f"{at}.resourceFieldRef.resource: Required value")
        elif resource not in _RESOURCE_FIELDS:
            problems.append(_unsupported(f"{at}.resourceFieldRef.resource", resource, _RESOURCE_FIELDS))
    for ref in ("configMapKeyRef", "secretKeyRef"):
        selector = source.get(ref)
        if isinstance(selector, dict):
            problems += _key_selector_problems(selector, f"{at}.{ref}")
    return problems


def _key_selector_problems(selector: Obj, at: str) -> list[str]:
    name, key = str(selector.get("name") or ""), str(selector.get("key") or "")
    problems = [_invalid(f"{at}.name", name, p) for p in syntax.subdomain_problems(name)]
    if not key:
        problems.append(f"{at}.key: Required value")
    else:
        problems += [_invalid(f"{at}.key", key, p) for p in syntax.config_key_problems(key)]
    return problems


# -- ports and probes -------------------------------------------------------------------------------


def _port_problems(ports: list[Any], where: str) -> list[str]:
    problems: list[str] = []
    names: set[str] = set()
    for i, port in enumerate(p for p in ports if isinstance(p, dict)):
        at = f"{where}[{i}]"
        name = port.get("name")
        if name:
            problems += [_invalid(f"{at}.name", name, p) for p in syntax.port_name_problems(str(name))]
            if name in names:
                problems.append(f'{at}.name: Duplicate value: "{name}"')
            names.add(name)
        number = port.get("containerPort")
        if not number:
            problems.append(f"{at}.containerPort: Required value")
        elif problem := syntax.port_number_problem(number):
            problems.append(_invalid(f"{at}.containerPort", number, problem))
        protocol = port.get("protocol")
        if protocol not in _PROTOCOLS:
            problems.append(_unsupported(f"{at}.protocol", protocol, _PROTOCOLS))
    return problems


def _probe_problems(probe: Obj, at: str, *, once: bool) -> list[str]:
    """``once``: a liveness or startup probe, whose success threshold must be 1."""
    problems: list[str] = []
    handlers = [h for h in _HANDLERS if probe.get(h) is not None]
    if not handlers:
        problems.append(f"{at}: Required value: must specify a handler type")
    problems += [f"{at}.{h}: Forbidden: may not specify more than 1 handler type" for h in handlers[1:]]
    for handler in ("httpGet", "tcpSocket"):
        if isinstance(probe.get(handler), dict):
            problems += _probe_port_problems(probe[handler].get("port"), f"{at}.{handler}.port")
    for field in _PROBE_NUMBERS:
        value = probe.get(field)
        if isinstance(value, int) and value < 0:
            problems.append(_invalid(f"{at}.{field}", value, "must be greater than or equal to 0"))
    threshold = probe.get("successThreshold")
    if once and isinstance(threshold, int) and threshold != 1:
        problems.append(_invalid(f"{at}.successThreshold", threshold, "must be 1"))
    return problems


def _probe_port_problems(port: Any, at: str) -> list[str]:
    if isinstance(port, str):
        return [_invalid(at, port, p) for p in syntax.port_name_problems(port)]
    problem = syntax.port_number_problem(port)
    return [_invalid(at, port, problem)] if problem else []
