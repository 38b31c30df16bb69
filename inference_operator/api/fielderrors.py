"""Spec errors worded as kube-apiserver words them, and the strict scalar types behind them.

Why this exists: the parser and the API server must refuse the same specs for the same
reasons, and a user who reads ``spec.replicas: Invalid value: "string": spec.replicas in body
must be of type integer: "string"`` from ``demo -f`` should read the same line from
``kubectl apply``. pydantic's own wording (``Input should be a valid integer``) names no type
the user wrote and, in its lax mode, it would have turned ``"3"`` into 3 and ``"yes"`` into
true where the real server refuses both. So the models run in strict mode, and this module
holds the two things strict mode needs from us:

- :data:`Integer` and :func:`int_or_string`: what the CRD's ``type: integer`` and
  ``x-kubernetes-int-or-string`` accept. JSON has one number type, so the real server takes
  ``3.0`` for an integer (it is a JSON integer); it takes no string, no boolean, no ``3.5``.
- :func:`format_validation_error`: each pydantic error as the server's ``field: type: detail``.

Messages of the models' own validators (``@path@ message``, see :func:`at`) are kept as written.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, ValidationError
from pydantic_core import PydanticCustomError

__all__ = ["WHOLE", "Integer", "at", "format_validation_error", "int_or_string", "json_type", "without_nulls"]

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}
_EXPECTED = {  # pydantic error type -> the JSON type the schema wanted
    "int_type": "integer",
    "int_from_float": "integer",
    "int_parsing": "integer",
    "finite_number": "integer",
    "string_type": "string",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "tuple_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "float_type": "number",
}
TYPE_INVALID = "type_invalid"
"""The error type our before-validators raise; its context carries ``expected``."""


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value, as the API server names it (``null`` for None)."""
    return _JSON_TYPES.get(type(value), "null")


def _whole(value: Any) -> Any:
    """A float with no fraction is the JSON integer it spells (``3.0`` is 3, as on the server)."""
    if type(value) is float and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


WHOLE = BeforeValidator(_whole)
"""Put last in an ``Annotated[int, Field(bounds), WHOLE]``: after the bounds, or pydantic can no
longer turn them into the JSON Schema's ``minimum``/``maximum`` inside an optional field."""
Integer = Annotated[int, WHOLE]
"""An OpenAPI ``type: integer``: an int, or a float without a fraction; never a bool or string."""


def int_or_string(value: Any) -> Any:
    """The before-validator of an ``x-kubernetes-int-or-string`` field (a quantity)."""
    value = _whole(value)
    if type(value) in (int, str):
        return value
    raise PydanticCustomError(TYPE_INVALID, "must be of type integer,string", {"expected": "integer,string"})


def without_nulls(value: Any) -> Any:
    """``value`` without the map entries whose value is null, at any depth (list items stay):
    what the API server does to a custom resource before defaulting, so a null means unset."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def at(path: str, message: str) -> str:
    """Tag a validator message with the sub-field it is about; see :func:`format_validation_error`."""
    return f"@{path}@ {message}"


def go_value(value: Any) -> str:
    """``value`` as the API server prints it in a field error (``%q`` strings, JSON otherwise)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    except ValueError:  # a NaN inside a list: shown, not sent anywhere
        return repr(value)


def _location(prefix: str, loc: tuple[int | str, ...]) -> tuple[str, bool]:
    """The field path of an error (``spec.env[0].name``) and whether it is about a map's key."""
    parts = list(loc)
    is_key = bool(parts) and parts[-1] == "[key]"
    if is_key:
        parts = parts[:-1]
    path = prefix
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path, is_key


def _literals(expected: str) -> list[str]:
    return re.findall(r"'((?:[^'\\]|\\.)*)'", expected)


def _describe(err: Any, path: str, is_key: bool) -> str:
    """One pydantic error as ``path: <error type>: detail``, the API server's words."""
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    actual = json_type(value)
    expected = ctx.get("expected") if kind == TYPE_INVALID else _EXPECTED.get(kind)
    if kind == "literal_error" and (is_key or actual != "string"):
        if is_key:
            allowed = ", ".join(_literals(str(ctx.get("expected", ""))))
            return f"{path}: field not declared in schema (the keys allowed are {allowed})"
        expected = "string"
    if expected is not None:
        return f'{path}: Invalid value: "{actual}": {path} in body must be of type {expected}: "{actual}"'
    if kind == "literal_error":
        supported = ", ".join(json.dumps(v) for v in _literals(str(ctx.get("expected", ""))))
        return f"{path}: Unsupported value: {go_value(value)}: supported values: {supported}"
    shown = go_value(value)
    words = {
        "missing": f"{path}: Required value",
        "extra_forbidden": f"{path}: field not declared in schema",
        "greater_than_equal": f"{path}: Invalid value: {shown}: {path} in body should be greater than or equal to "
        f"{ctx.get('ge')}",
        "less_than_equal": f"{path}: Invalid value: {shown}: {path} in body should be less than or equal to "
        f"{ctx.get('le')}",
        "string_too_short": f"{path}: Invalid value: {shown}: {path} in body should be at least "
        f"{ctx.get('min_length')} chars long",
        "string_too_long": f"{path}: Too long: may not be more than {ctx.get('max_length')} bytes",
        "too_long": f"{path}: Too many: {ctx.get('actual_length')}: must have at most {ctx.get('max_length')} items",
        "string_pattern_mismatch": f"{path}: Invalid value: {shown}: {path} in body should match "
        f"'{ctx.get('pattern')}'",
    }
    if kind in words:
        return words[kind]
    message = str(err["msg"]).removeprefix("Value error, ")
    if message.startswith("@"):
        sub, _, message = message[1:].partition("@ ")
        path = f"{path}.{sub}" if sub else path
    return f"{path}: {message}"


def format_validation_error(error: ValidationError, prefix: str = "spec") -> str:
    """Every problem, ``; ``-separated, each naming its field path (``spec.replicas: …``)."""
    parts: list[str] = []
    for err in error.errors(include_url=False):
        path, is_key = _location(prefix, tuple(err["loc"]))
        line = _describe(err, path, is_key)
        if line not in parts:
            parts.append(line)
    return "; ".join(parts)
