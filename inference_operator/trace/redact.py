"""What a trace must never hold: secret values, replaced before a record is written.

A trace may be attached to a bug report or kept on a node's disk, so the values of ``env``
entries and the data of Secrets and ConfigMaps never reach it; what names them (an env
entry's name, a ``valueFrom`` reference) stays, so a reader still sees what was set.
"""

from __future__ import annotations

from typing import Any

from inference_operator.core.objects import Obj

__all__ = ["REDACTED", "redact", "redact_at"]

REDACTED = "<redacted>"
_SECRET_KINDS = ("Secret", "ConfigMap")
_SECRET_FIELDS = ("data", "stringData", "binaryData")


def redact(value: Any) -> Any:
    """A copy of ``value`` with secrets replaced by :data:`REDACTED`: the ``value`` of every
    entry of every ``env`` list, and the ``data``/``stringData``/``binaryData`` of a Secret or
    ConfigMap. References (``valueFrom``) stay: they name a key, they are not its value."""
    if isinstance(value, dict):
        secret = value.get("kind") in _SECRET_KINDS
        out: Obj = {}
        for k, v in value.items():
            if k == "env" and isinstance(v, list):
                out[k] = [_redact_env(e) for e in v]
            elif secret and k in _SECRET_FIELDS and isinstance(v, dict):
                out[k] = dict.fromkeys(v, REDACTED)
            else:
                out[k] = redact(v)
        return out
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def _redact_env(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return REDACTED
    out = redact(entry)
    if "value" in out:
        out["value"] = REDACTED
    return out


def redact_at(path: str, value: Any) -> Any:
    """Redact a value found at ``path`` (a field path as ``drift`` prints it): below an ``env``
    list everything but names and references is a secret."""
    if ".env" not in path:
        return redact(value)
    tail = path.rsplit(".env", 1)[1]
    if not tail:  # the env list itself
        return [_redact_env(e) for e in value] if isinstance(value, list) else REDACTED
    if tail.startswith("[") and "]" in tail and tail.endswith("]"):  # one entry
        return _redact_env(value)
    if tail.endswith(".name"):
        return value
    return REDACTED
