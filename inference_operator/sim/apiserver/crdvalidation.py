"""OpenAPI validation of a custom resource against its CRD's structural schema, as kube-apiserver does it.

After decoding (:mod:`.crdschema`: pruning, defaults), the real server validates the whole object
against the schema: types, bounds, lengths, patterns, enums, required fields, item and property
counts, and the uniqueness ``x-kubernetes-list-type`` ``map`` and ``set`` promise. Each error
names the real server's field path and error type, because clients and the conformance suite
read those; an update ratchets (a value it leaves as it was has no errors), so an object stored
under an older, laxer schema can still be written to. The CEL rules come after (:mod:`.cel`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final

from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.crdschema import (
    ABSENT,
    FieldError,
    PerSchemaNode,
    child_path,
    correlated_item,
    go_value,
    item_path,
    json_type,
    old_child,
    type_ok,
)

__all__ = ["validate", "validate_list_types"]

Schema = Mapping[str, Any]


def validate(obj: Obj, schema: Schema, old: Obj | None = None) -> list[FieldError]:
    """The OpenAPI errors of a whole object (the root's ``metadata`` is ObjectMeta's business).

    ``old`` (the stored object, on update) ratchets: a value equal to its correlated old value
    has no errors, as on the real server (which turns them into warnings), so an object stored
    under an older, laxer schema can still be written to where the write leaves it alone.
    """
    if old is not None and old == obj:
        return []
    errors: list[FieldError] = []
    properties = schema.get("properties") or {}
    for key in schema.get("required") or ():
        if key not in obj:
            errors.append(FieldError.of(key, "Required value"))
    for key, value in obj.items():
        if key in properties and key != "metadata":
            _validate(value, properties[key], key, errors, old_child(old, key) if old is not None else ABSENT)
    return errors


def _validate(value: Any, schema: Schema, path: str, errors: list[FieldError], old: Any) -> None:
    if old is not ABSENT and old == value:
        return  # ratcheted
    if not _check_type(value, schema, path, errors):
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(go_value(v) for v in schema["enum"])
        errors.append(FieldError.of(path, "Unsupported value", f"{go_value(value)}: supported values: {supported}"))
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        _check_number(value, schema, path, errors)
    elif isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif isinstance(value, list):
        _check_array(value, schema, path, errors, old)
    elif isinstance(value, dict):
        _check_object(value, schema, path, errors, old)


def _check_type(value: Any, schema: Schema, path: str, errors: list[FieldError]) -> bool:
    """False (and the errors) when ``value`` is not of the schema's type."""
    actual = json_type(value)
    if schema.get("x-kubernetes-int-or-string"):
        if actual in ("integer", "string"):
            return True
        errors.append(
            FieldError.of(path, "TypeInvalid", f'"{actual}": {path} in body must be of type integer,string: "{actual}"')
        )
        errors.append(FieldError.of("", "Invalid value", f'"": "{path}" must validate at least one schema (anyOf)'))
        return False
    wanted = schema.get("type")
    if not wanted or type_ok(value, wanted):
        return True
    errors.append(
        FieldError.of(path, "TypeInvalid", f'"{actual}": {path} in body must be of type {wanted}: "{actual}"')
    )
    return False


def _check_number(value: float, schema: Schema, path: str, errors: list[FieldError]) -> None:
    shown = go_value(value)
    if "minimum" in schema:
        low = schema["minimum"]
        if schema.get("exclusiveMinimum") and value <= low:
            errors.append(FieldError.of(path, "Invalid value", f"{shown}: {path} in body should be greater than {low}"))
        elif value < low:
            detail = f"{shown}: {path} in body should be greater than or equal to {low}"
            errors.append(FieldError.of(path, "Invalid value", detail))
    if "maximum" in schema:
        high = schema["maximum"]
        if schema.get("exclusiveMaximum") and value >= high:
            errors.append(FieldError.of(path, "Invalid value", f"{shown}: {path} in body should be less than {high}"))
        elif value > high:
            errors.append(
                FieldError.of(path, "Invalid value", f"{shown}: {path} in body should be less than or equal to {high}")
            )
    if "multipleOf" in schema and value % schema["multipleOf"]:
        detail = f"{shown}: {path} in body should be a multiple of {schema['multipleOf']}"
        errors.append(FieldError.of(path, "Invalid value", detail))


def _check_string(value: str, schema: Schema, path: str, errors: list[FieldError]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(FieldError.of(path, "Too long", f"may not be more than {schema['maxLength']} bytes"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        detail = f"{go_value(value)}: {path} in body should be at least {schema['minLength']} chars long"
        errors.append(FieldError.of(path, "Invalid value", detail))
    pattern = schema.get("pattern")
    if pattern and not _regex(pattern).search(value):
        errors.append(
            FieldError.of(path, "Invalid value", f"{go_value(value)}: {path} in body should match '{pattern}'")
        )


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _check_array(value: list[Any], schema: Schema, path: str, errors: list[FieldError], old: Any) -> None:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(FieldError.of(path, "Too many", f"{len(value)}: must have at most {schema['maxItems']} items"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        detail = f"{len(value)}: {path} in body should have at least {schema['minItems']} items"
        errors.append(FieldError.of(path, "Invalid value", detail))
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            _validate(item, items, item_path(path, index), errors, correlated_item(item, old, schema))


def _check_object(value: Obj, schema: Schema, path: str, errors: list[FieldError], old: Any) -> None:
    count = len(value)
    if "maxProperties" in schema and count > schema["maxProperties"]:
        errors.append(FieldError.of(path, "Too many", f"{count}: must have at most {schema['maxProperties']} items"))
    if "minProperties" in schema and count < schema["minProperties"]:
        detail = f"{count}: {path} in body should have at least {schema['minProperties']} properties"
        errors.append(FieldError.of(path, "Invalid value", detail))
    for key in schema.get("required") or ():
        if key not in value:
            errors.append(FieldError.of(child_path(path, key), "Required value"))
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for key, child in value.items():
        if key in properties:
            _validate(child, properties[key], child_path(path, key), errors, old_child(old, key))
        elif isinstance(extra, Mapping):
            _validate(child, extra, child_path(path, key), errors, old_child(old, key))


# --- list types ----------------------------------------------------------------------------


def validate_list_types(obj: Obj, schema: Schema, old: Obj | None = None) -> list[FieldError]:
    """``x-kubernetes-list-type`` ``map`` and ``set``: no two items with the same key (or value);
    ratcheted like :func:`validate`."""
    errors: list[FieldError] = []
    _list_types(obj, schema, "", errors, old if old is not None else ABSENT)
    return errors


def _list_types(node: Any, schema: Schema, path: str, errors: list[FieldError], old: Any) -> None:
    if (old is not ABSENT and old == node) or not _checks_lists(schema):
        return
    if isinstance(node, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, value in node.items():
            if path == "" and key == "metadata":
                continue
            sub = properties.get(key, extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                _list_types(value, sub, child_path(path, key), errors, old_child(old, key))
        return
    if not isinstance(node, list):
        return
    list_type = schema.get("x-kubernetes-list-type")
    seen: list[Any] = []
    for index, item in enumerate(node):
        if list_type == "map" and isinstance(item, dict):
            keys = {k: item[k] for k in schema.get("x-kubernetes-list-map-keys") or () if k in item}
            if keys in seen:
                errors.append(FieldError.of(item_path(path, index), "Duplicate value", go_value(keys)))
            seen.append(keys)
        elif list_type == "set":
            if item in seen:
                errors.append(FieldError.of(item_path(path, index), "Duplicate value", go_value(item)))
            seen.append(item)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(node):
            _list_types(item, items, item_path(path, index), errors, correlated_item(item, old, schema))


def _lists_below(schema: Schema) -> bool:
    """Whether a ``map`` or ``set`` list type lies at or below ``schema``, along the edges
    :func:`_list_types` follows: elsewhere it has nothing to find. A CRD's schema has a few such
    lists (the conditions), so a write's walk goes to them only."""
    extra, items = schema.get("additionalProperties"), schema.get("items")
    below = [*(schema.get("properties") or {}).values(), *(s for s in (extra, items) if isinstance(s, Mapping))]
    return schema.get("x-kubernetes-list-type") in ("map", "set") or any(
        _checks_lists(sub) for sub in below if isinstance(sub, Mapping)
    )


_checks_lists: Final = PerSchemaNode(_lists_below, size=65_536)
