"""What kube-apiserver 1.36 refuses in a Node: bad taints and bad resource quantities.

The simulator lets users describe their own nodes (``demo -f`` with Node manifests), and a
node that a real cluster would refuse must not quietly run pods here. The rules and words are
``ValidateNode`` of ``pkg/apis/core/validation`` (the name is a DNS subdomain and the labels are
checked with every kind's metadata, in :mod:`.validation`): each taint's key is a qualified name,
its value a label value, its effect one of three, and no (key, effect) pair twice; every
capacity and allocatable amount is non-negative, and an integer for extended resources such as
``nvidia.com/gpu``. Its quirks are kept: taint errors are reported under ``metadata.taints``,
and resource paths name the resource with a dot (``status.capacity.nvidia.com/gpu``).
A quantity that does not parse at all never gets that far: the request cannot be decoded (400).
"""

from __future__ import annotations

import re
from typing import Any, Final

from inference_operator.api.quantity import parse_quantity
from inference_operator.core.errors import Invalid
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.managedfields import BadRequest
from inference_operator.sim.apiserver.podtemplate import canonical_quantity

__all__ = ["TAINT_EFFECTS", "validate_node"]


TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_QUANTITY: Final = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_KEY_FORMAT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_KEY: Final = re.compile(f"^{_KEY_FORMAT}$")
_VALUE_FORMAT: Final = f"({_KEY_FORMAT})?"
_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_KEY_RULE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_KEY_FORMAT}')"
)
_VALUE_RULE: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
    f"validation is '{_VALUE_FORMAT}')"
)
_SUBDOMAIN_RULE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_INTEGER_RESOURCES: Final = frozenset({"pods"})


def validate_node(obj: Obj) -> None:
    """Raise :class:`Invalid` (or :class:`BadRequest`) for a Node the real API server refuses."""
    name = str((obj.get("metadata") or {}).get("name", ""))
    status = obj.get("status") or {}
    for field in ("capacity", "allocatable"):
        for value in (status.get(field) or {}).values():
            if not (isinstance(value, int | float) and not isinstance(value, bool)) and not (
                isinstance(value, str) and _QUANTITY.match(value.strip())
            ):
                raise BadRequest(
                    f'Node in version "v1" cannot be handled as a Node: quantities must match the regular '
                    f"expression '{_QUANTITY.pattern}'",
                    kind="Node",
                    name=name,
                )
    problems = _taint_problems((obj.get("spec") or {}).get("taints") or [])
    for field in ("capacity", "allocatable"):
        for resource, value in (status.get(field) or {}).items():
            problems += _quantity_problems(f"status.{field}.{resource}", resource, value)
    if problems:
        listed = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise Invalid(f'Node "{name}" is invalid: {listed}', kind="Node", name=name)


def _taint_problems(taints: list[Any]) -> list[str]:
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        path = f"metadata.taints[{i}]"
        taint = taint if isinstance(taint, dict) else {}
        key, value, effect = str(taint.get("key", "")), str(taint.get("value", "")), str(taint.get("effect", ""))
        problems += [f'{path}.key: Invalid value: "{key}": {message}' for message in _key_problems(key)]
        if len(value) > 63:
            problems.append(f'{path}.value: Invalid value: "{value}": must be no more than 63 bytes')
        elif not re.match(f"^{_VALUE_FORMAT}$", value):
            problems.append(f'{path}.value: Invalid value: "{value}": {_VALUE_RULE}')
        if not effect:
            problems.append(f"{path}.effect: Required value")
        elif effect not in TAINT_EFFECTS:
            supported = ", ".join(f'"{e}"' for e in TAINT_EFFECTS)
            problems.append(f'{path}.effect: Unsupported value: "{effect}": supported values: {supported}')
        if (key, effect) in seen:
            problems.append(
                f"{path}: Duplicate value: {_go_taint(taint)}: taints must be unique by key and effect pair"
            )
        seen.add((key, effect))
    return problems


def _go_taint(taint: Obj) -> str:
    """How Go prints a core.Taint in a Duplicate error (``%#v``-ish, as field.Duplicate does)."""
    key, value, effect = taint.get("key", ""), taint.get("value", ""), taint.get("effect", "")
    return f'core.Taint{{Key:"{key}", Value:"{value}", Effect:"{effect}", TimeAdded:<nil>}}'


def _key_problems(key: str) -> list[str]:
    """apimachinery's ``IsQualifiedName`` (a label key): optional DNS-subdomain prefix and '/'."""
    parts = key.split("/")
    if len(parts) > 2:
        return [
            f"a valid label key {_KEY_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                problems.append("prefix part must be no more than 253 bytes")
            if not _SUBDOMAIN.match(prefix):
                problems.append(f"prefix part {_SUBDOMAIN_RULE}")
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 bytes")
    if not _KEY.match(name):
        problems.append(f"name part {_KEY_RULE}")
    return problems


def _quantity_problems(path: str, resource: str, value: Any) -> list[str]:
    number = parse_quantity(value)
    if number is None:
        return []
    problems = []
    canonical = canonical_quantity(value)  # Go prints a Quantity in canonical form
    if number < 0:
        problems.append(f'{path}: Invalid value: "{canonical}": must be greater than or equal to 0')
    extended = "/" in resource and not resource.startswith("kubernetes.io/") and not resource.startswith("requests.")
    if (resource in _INTEGER_RESOURCES or extended) and (number * 1000) % 1000 != 0:
        problems.append(f"{path}: Invalid value: {canonical}: must be an integer")  # a Stringer: unquoted
    return problems
