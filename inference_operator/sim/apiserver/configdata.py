"""ConfigMaps and Secrets on their way into the fake API server: defaults, conversion, validation.

Operators keep settings and credentials in these two kinds, and the real API server treats them
in ways a plain store would not: a Secret's ``stringData`` is merged into ``data`` (base64) and
never stored, ``type`` defaults to ``Opaque``, ``data`` must be base64 (a 400 before anything
else), keys must be config keys and may not appear in both ``data`` and ``binaryData``, a TLS
Secret needs its two keys, and an ``immutable`` object keeps its data (and stays immutable).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

from inference_operator.core.errors import Invalid
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.managedfields import BadRequest

__all__ = ["prepare"]


_CONFIG_KEY: Final = re.compile(r"^[-._a-zA-Z0-9]+$")
_TLS_KEYS: Final = ("tls.crt", "tls.key")


def prepare(kind: str, obj: Obj, old: Obj | None) -> None:
    """Default, convert and validate a ConfigMap or Secret in place (``old``: the stored one on update)."""
    name = str(obj.get("metadata", {}).get("name", ""))
    binary_field = "binaryData" if kind == "ConfigMap" else "data"
    for value in (obj.get(binary_field) or {}).values():
        _check_base64(kind, value)
    if kind == "Secret":
        _merge_string_data(obj)
        obj.setdefault("type", "Opaque")
    problems = _key_problems(kind, obj)
    if kind == "Secret" and obj["type"] == "kubernetes.io/tls":
        problems += [f"data[{key}]: Required value" for key in _TLS_KEYS if key not in (obj.get("data") or {})]
    if old is not None and old.get("immutable") is True:
        if obj.get("immutable") is not True:
            problems.append("immutable: Forbidden: field is immutable when `immutable` is set")
        for field in ("data", "binaryData"):
            if (obj.get(field) or {}) != (old.get(field) or {}):
                problems.append(f"{field}: Forbidden: field is immutable when `immutable` is set")
    if problems:
        raise Invalid(f'{kind} "{name}" is invalid: ' + "; ".join(problems), kind=kind, name=name)


def _check_base64(kind: str, value: Any) -> None:
    try:
        base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as err:
        raise BadRequest(
            f'{kind} in version "v1" cannot be handled as a {kind}: illegal base64 data ({err})', kind=kind
        ) from err


def _merge_string_data(secret: Obj) -> None:
    """``stringData`` goes into ``data`` (its values base64-encoded, winning over ``data``'s)."""
    string_data = secret.pop("stringData", None) or {}
    if string_data:
        encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()}
        secret["data"] = {**(secret.get("data") or {}), **encoded}


def _key_problems(kind: str, obj: Obj) -> list[str]:
    problems: list[str] = []
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    for field, values in (("data", data), ("binaryData", binary)):
        for key in values:
            if not _CONFIG_KEY.match(key) or key in (".", ".."):
                problems.append(
                    f'{field}[{key}]: Invalid value: "{key}": a valid config key must consist of alphanumeric '
                    "characters, '-', '_' or '.'"
                )
    if kind == "ConfigMap":
        duplicates = [key for key in data if key in binary]
        problems += [f'data[{k}]: Invalid value: "{k}": duplicate of key present in binaryData' for k in duplicates]
    return problems
