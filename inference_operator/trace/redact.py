"""What a trace must never hold: secret values, replaced before a record is written.

A trace may be attached to a bug report or kept on a node's disk, so the values of ``env``
entries and the data of Secrets and ConfigMaps never reach it; what names them (an env
entry's name, a ``valueFrom`` reference) stays, so a reader still sees what was set.

Container args are the other usual place for a secret: vLLM takes ``--api-key=…`` (or
``--api-key …`` as two args), Hugging Face tools take ``--hf-token``/``--token``, and a model
or data URL may carry ``user:password@``. The value of a secret-looking flag and the
credentials of any URL are replaced wherever they occur in a record (args, commands, notes,
an API server's error quoting the object), so the flag's name and the URL's host stay readable.
"""

from __future__ import annotations

import re
from typing import Any

from inference_operator.core.objects import Obj

__all__ = ["REDACTED", "is_secret_flag", "redact", "redact_args", "redact_at", "redact_text"]

REDACTED = "<redacted>"
_SECRET_KINDS = ("Secret", "ConfigMap")
_SECRET_FIELDS = ("data", "stringData", "binaryData")
_ARG_LISTS = ("args", "command")

# A URL's userinfo: everything between "scheme://" and "@" that is not a path, query or space.
_URL_CREDENTIALS = re.compile(r"""\b([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/@?#"'<>\\]+@""")
# A flag and its value in free text: "--flag=value", "--flag value", and the two args of a
# list quoted by JSON or Go ("--flag", "value" / "--flag" "value"). A value never starts with "--".
_FLAG_VALUE = re.compile(
    r"""(?<![\w-])(-{1,2}[A-Za-z][\w.\-]*)(=|[ \t]+(?!--)(?=[^\s"'\\])|"[ \t]*,?[ \t]*"(?!--))([^\s"'\\,;]*)"""
)
_FLAG_ALONE = re.compile(r"-{1,2}[A-Za-z][\w.\-]*")
_SEGMENT = re.compile(r"[-_.]")
_SECRET_PARTS = ("secret", "key", "password", "passwd", "credential")


def is_secret_flag(flag: str) -> bool:
    """Whether a flag's value is a secret, by its name: any part (split at ``-``, ``_``,
    ``.``) containing secret, key, password, passwd or credential, or ending in ``token``
    (``--hf-token``, ``--token``; ``--tokenizer`` and ``--max-num-batched-tokens`` are not)."""
    parts = _SEGMENT.split(flag.lstrip("-").lower())
    return any(p.endswith("token") or any(s in p for s in _SECRET_PARTS) for p in parts)


def redact_text(text: str) -> str:
    """``text`` with the credentials of every URL and the value of every secret-looking flag
    replaced by :data:`REDACTED`."""
    if "://" in text:
        text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    if "-" in text:
        text = _FLAG_VALUE.sub(_redact_flag_value, text)
    return text


def _redact_flag_value(match: re.Match[str]) -> str:
    flag, separator, value = match.groups()
    if not value or not is_secret_flag(flag):
        return match.group(0)
    return f"{flag}{separator}{REDACTED}"


def redact_args(args: list[Any]) -> list[Any]:
    """A container's ``args`` (or ``command``) with secrets redacted: ``--api-key=v`` keeps
    its flag, and the arg after a secret-looking flag standing alone is replaced unless it is
    itself a flag (starts with ``--``)."""
    out: list[Any] = []
    hide_next = False
    for arg in args:
        if not isinstance(arg, str):
            out.append(redact(arg))
            hide_next = False
        elif hide_next and not arg.startswith("--"):
            out.append(REDACTED)
            hide_next = False
        else:
            hide_next = bool(_FLAG_ALONE.fullmatch(arg)) and is_secret_flag(arg)
            out.append(redact_text(arg))
    return out


def redact(value: Any) -> Any:
    """A copy of ``value`` with secrets replaced by :data:`REDACTED`: the ``value`` of every
    entry of every ``env`` list, the data/stringData/binaryData of a Secret or ConfigMap, secret
    flags in every ``args``/``command`` list, and URL credentials and secret flags in every
    string. References (``valueFrom``) stay: they name a key, they are not its value."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        secret = value.get("kind") in _SECRET_KINDS
        out: Obj = {}
        for k, v in value.items():
            if k == "env" and isinstance(v, list):
                out[k] = [_redact_env(e) for e in v]
            elif k in _ARG_LISTS and isinstance(v, list):
                out[k] = redact_args(v)
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
    list everything but names and references is a secret; an ``args``/``command`` list is
    redacted as args."""
    if path.endswith(tuple(f".{name}" for name in _ARG_LISTS)) and isinstance(value, list):
        return redact_args(value)
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
