"""The few validations of the real kube-apiserver that operators trip over, for the fake one.

A fake that stores whatever it is given would let an operator ship a Service named ``My_Svc``,
a label value with a space, two controller owner references or a Deployment whose selector does
not match its template, and then fail on the first real cluster. These checks reject what the
real API server rejects, with its wording (``metadata.name: Invalid value: …``), so the mistake
shows up in a unit test. Name and metadata checks run in the write strategy (:mod:`.strategy`);
the per-kind checks run right after defaulting (:func:`.defaults.prepare`). Nothing here changes
an object.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Final

from inference_operator.core.errors import Invalid
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver import syntax
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.podvalidation import pod_spec_problems

__all__ = [
    "name_problems",
    "path_segment_problem",
    "validate_deployment",
    "validate_metadata",
    "validate_name",
    "validate_replicaset",
    "validate_service",
    "validate_status",
]


_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL_1123: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAMED_KINDS: Final = frozenset({"Namespace", "Service"})
"""Kinds whose names are RFC 1123 labels (at most 63); Services since Kubernetes 1.36 (DNS-1035 before)."""
_SUBDOMAIN_RULE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_RULE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)


def validate_name(kind: str, name: str, *, generate_name: str = "") -> None:
    """Reject names the real API server rejects, and the ``generateName`` a generated name came from.

    Namespaces and Services need an RFC 1123 label (63 characters), every other kind an RFC 1123
    subdomain (253). A ``generateName`` is checked as a prefix: a trailing '-' is allowed.
    """
    problems = (
        [
            f'metadata.generateName: Invalid value: "{generate_name}": {message}'
            for message in name_problems(kind, generate_name, prefix=True)
        ]
        if generate_name
        else []
    )
    if not name:
        problems.append("metadata.name: Required value: name or generateName is required")
    problems += [f'metadata.name: Invalid value: "{name}": {message}' for message in name_problems(kind, name)]
    if kind == "Namespace" and name and not _valid_label_value(name):  # the name is also a label's value
        problems.append(f'metadata.labels: Invalid value: "{name}": {_LABEL_VALUE_RULE}')
    if problems:
        listed = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise Invalid(f'{kind} "{name}" is invalid: {listed}', kind=kind, name=name)


def name_problems(kind: str, name: str, *, prefix: bool = False) -> list[str]:
    """What is wrong with ``name`` (or, with ``prefix``, a ``generateName``) for ``kind``; [] if nothing."""
    if not name:
        return []
    if prefix and len(name) > 1 and name.endswith("-"):
        name = name[:-2] + "a"  # as apimachinery's maskTrailingDash (which drops two characters)
    label = kind in _LABEL_NAMED_KINDS
    limit, pattern, rule = (63, _DNS_LABEL_1123, _LABEL_RULE) if label else (253, _DNS_SUBDOMAIN, _SUBDOMAIN_RULE)
    problems = [f"must be no more than {limit} characters"] if len(name) > limit else []
    if not pattern.match(name):
        problems.append(rule)
    return problems


def path_segment_problem(name: str) -> str:
    """Why ``name`` cannot name an object in a request path ('' if it can), as apimachinery says it."""
    if name in (".", ".."):
        return f"may not be '{name}'"
    for forbidden in ("/", "%"):
        if forbidden in name:
            return f"may not contain '{forbidden}'"
    return ""


_LABEL_NAME: Final = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_VALUE_RULE: Final = (
    "a valid label must be an empty string or consist of at most 63 alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)


def validate_metadata(kind: str, meta: Obj) -> None:
    """Reject the metadata the real API server rejects: bad label keys/values, bad owner refs."""
    name = str(meta.get("name", ""))
    problems: list[str] = []
    for field in ("labels", "annotations"):
        values = meta.get(field, {})
        if not isinstance(values, dict):
            problems.append(f"metadata.{field}: Invalid value: must be a map of strings")
            continue
        for key, value in values.items():
            if not isinstance(value, str):
                problems.append(f"metadata.{field}[{key}]: Invalid value: {value!r}: must be a string")
            elif not _valid_label_key(key):
                problems.append(
                    f"metadata.{field}: Invalid value: {key!r}: name part must consist of "
                    "alphanumeric characters, '-', '_' or '.' (at most 63), with an optional "
                    "DNS subdomain prefix and '/'"
                )
            elif field == "labels" and not _valid_label_value(value):
                problems.append(f"metadata.labels: Invalid value: {value!r}: {_LABEL_VALUE_RULE}")
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and _size(annotations) > _ANNOTATIONS_MAX_BYTES:
        problems.append(f"metadata.annotations: Too long: may not be more than {_ANNOTATIONS_MAX_BYTES} bytes")
    problems.extend(_finalizer_problems(kind, meta.get("finalizers", [])))
    refs = meta.get("ownerReferences", [])
    for ref in refs if isinstance(refs, list) else [refs]:  # the real paths carry no index
        for field, what in (("apiVersion", "version"), ("kind", "kind"), ("name", "name"), ("uid", "uid")):
            if not isinstance(ref, dict) or not ref.get(field):
                problems.append(f'metadata.ownerReferences.{field}: Invalid value: "": {what} must not be empty')
    if isinstance(refs, list) and sum(1 for ref in refs if isinstance(ref, dict) and ref.get("controller")) > 1:
        problems.append("metadata.ownerReferences: Invalid value: only one reference can have controller set to true")
    if problems:
        raise Invalid(f'{kind} "{name}" is invalid: ' + "; ".join(problems), kind=kind, name=name)


_ANNOTATIONS_MAX_BYTES: Final = 256 * 1024
_STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def _size(values: dict[str, Any]) -> int:
    return sum(len(str(k).encode()) + len(str(v).encode()) for k, v in values.items())


def _finalizer_problems(kind: str, finalizers: Any) -> list[str]:
    """Finalizers are qualified names; Go-typed kinds also want a domain prefix (or a standard name)."""
    problems: list[str] = []
    for i, finalizer in enumerate(finalizers if isinstance(finalizers, list) else [finalizers]):
        if not isinstance(finalizer, str) or not _valid_label_key(finalizer):
            problems.append(
                f"metadata.finalizers: Invalid value: {finalizer!r}: a valid finalizer must be a qualified name "
                "(an optional DNS subdomain prefix and '/', and a name part of alphanumeric characters, "
                "'-', '_' or '.')"
            )
        if traits_of(kind).built_in and finalizer not in _STANDARD_FINALIZERS and "/" not in str(finalizer):
            problems.append(
                f"metadata.finalizers[{i}]: Invalid value: {finalizer!r}: "
                "name is neither a standard finalizer name nor is it fully qualified"
            )
    return problems


@functools.lru_cache(maxsize=4096)  # pure, and every write checks the same few labels again
def _valid_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


@functools.lru_cache(maxsize=4096)
def _valid_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return len(name) <= 63 and bool(_LABEL_NAME.match(name))


def validate_deployment(obj: Obj, old: Obj | None) -> None:
    """Reject a defaulted Deployment the real API server rejects (``old`` on update: selector immutable)."""
    _validate_workload("Deployment", obj, old)


def validate_replicaset(obj: Obj, old: Obj | None) -> None:
    """Reject a ReplicaSet the real API server rejects: its selector, template and replicas are
    checked as a Deployment's (a snapshot's ReplicaSets are created as they are)."""
    _validate_workload("ReplicaSet", obj, old)


def _validate_workload(kind: str, obj: Obj, old: Obj | None) -> None:
    name = _name(obj)
    spec = obj["spec"]
    problems: list[str] = []
    selector = spec.get("selector")
    match_labels = selector.get("matchLabels", {}) if isinstance(selector, dict) else {}
    if not isinstance(selector, dict) or not (match_labels or selector.get("matchExpressions")):
        problems.append("spec.selector: Required value")
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if any(template_labels.get(k) != v for k, v in match_labels.items()):
        problems.append(
            "spec.template.metadata.labels: Invalid value: "
            f"{template_labels!r}: `selector` does not match template `labels`"
        )
    if old is not None and old.get("spec", {}).get("selector") != selector:
        problems.append(f"spec.selector: Invalid value: {selector!r}: field is immutable")
    template = spec.get("template")
    pod = (template.get("spec") if isinstance(template, dict) else None) or {}
    if not pod.get("containers"):
        problems.append("spec.template.spec.containers: Required value")
    problems += pod_spec_problems(pod, "spec.template.spec")
    replicas = spec.get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        problems.append(f"spec.replicas: Invalid value: {replicas!r}: must be greater than or equal to 0")
    if problems:
        raise Invalid(f'{kind}.apps "{name}" is invalid: {_listed(problems)}', kind=kind, name=name)


def _listed(problems: list[str]) -> str:
    """Several problems as the real server lists them: ``[a, b]``; one alone as it is."""
    return problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"


def validate_service(obj: Obj) -> None:
    """Reject a defaulted Service the real API server rejects (ports missing, out of range,
    unnamed, or two with the same name or the same port and protocol)."""
    name = _name(obj)
    spec = obj["spec"]
    problems: list[str] = []
    ports = spec.get("ports") or []
    headless = spec.get("clusterIP") == "None"
    if not ports and spec.get("type") != "ExternalName" and not headless:
        problems.append("spec.ports: Required value")
    selector = spec.get("selector") or {}
    for key, value in selector.items() if isinstance(selector, dict) else ():
        if not _valid_label_key(key) or not isinstance(value, str) or not _valid_label_value(value):
            problems.append(f"spec.selector: Invalid value: {value!r}: {_LABEL_VALUE_RULE}")
    for i, port in enumerate(ports):
        number = port.get("port") if isinstance(port, dict) else None
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 65535:
            problems.append(f"spec.ports[{i}].port: Invalid value: {number!r}: must be between 1 and 65535")
        if isinstance(port, dict):
            problems += _service_port_problems(port, f"spec.ports[{i}]", service_type=spec.get("type", "ClusterIP"))
    if len(ports) > 1 and any(not (isinstance(p, dict) and p.get("name")) for p in ports):
        problems.append("spec.ports: Required value: name is required when a Service has several ports")
    problems += _duplicate_ports(ports)
    if problems:
        raise Invalid(f'Service "{name}" is invalid: ' + "; ".join(problems), kind="Service", name=name)


def _service_port_problems(port: Obj, at: str, *, service_type: str) -> list[str]:
    """A target port that names no valid port, a node port on a type that has none."""
    problems: list[str] = []
    target = port.get("targetPort")
    if isinstance(target, str):
        problems += [f'{at}.targetPort: Invalid value: "{target}": {p}' for p in syntax.port_name_problems(target)]
    elif isinstance(target, int) and (problem := syntax.port_number_problem(target)):
        problems.append(f"{at}.targetPort: Invalid value: {target}: {problem}")
    if port.get("nodePort") and service_type in ("ClusterIP", "ExternalName"):
        problems.append(f"{at}.nodePort: Forbidden: may not be used when `type` is '{service_type}'")
    return problems


def _duplicate_ports(ports: list[Any]) -> list[str]:
    """A port name, or a port and protocol, used twice: the real server names the later item."""
    problems, names, numbers = [], set(), set()
    for i, port in enumerate(p for p in ports if isinstance(p, dict)):
        name, number = port.get("name"), (port.get("port"), port.get("protocol", "TCP"))
        if name and name in names:
            problems.append(f'spec.ports[{i}].name: Duplicate value: "{name}"')
        if number in numbers:
            problems.append(f"spec.ports[{i}]: Duplicate value: port {number[0]}/{number[1]}")
        names.add(name)
        numbers.add(number)
    return problems


def _name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def validate_status(kind: str, obj: Obj) -> None:
    """Reject a status the real API server rejects (a load balancer ingress on a Service of another type)."""
    if kind != "Service":
        return
    ingress = (obj.get("status") or {}).get("loadBalancer", {}).get("ingress")
    service_type = (obj.get("spec") or {}).get("type")
    if ingress and service_type != "LoadBalancer":
        name = _name(obj)
        raise Invalid(
            f'Service "{name}" is invalid: status.loadBalancer.ingress: Forbidden: may only be used when '
            "`spec.type` is 'LoadBalancer'",
            kind="Service",
            name=name,
        )
