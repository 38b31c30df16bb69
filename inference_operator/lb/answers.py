"""What the operator accepts from a load balancer registry: bounded text, well-formed registrations.

A registry is another system, possibly misbehaving or hostile. Whatever it says goes into an
InferenceService's status, the operator's logs, Events and traces, and ``status.url`` is shown
by tools as a link. So its error messages are cut to :data:`MAX_REGISTRY_MESSAGE` characters
with control characters escaped (one log line stays one line), and a registration is accepted
only with an id, an http(s) address and a ``host:port`` target of sane syntax and length — a
4 MiB id or a ``javascript:`` address is an error that names the field, never a record.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from inference_operator.api.constants import MAX_LB_ADDRESS, MAX_LB_ID, MAX_LB_TARGET
from inference_operator.core.ports import Registration
from inference_operator.core.text import bounded_text as _bounded

__all__ = ["MAX_REGISTRY_MESSAGE", "InvalidRegistration", "bounded_text", "check_registration"]

MAX_REGISTRY_MESSAGE = 1024
"""Characters of a registry's own words kept in an error (status, logs, Events, traces)."""
_SHOWN = 80  # characters of a refused value quoted back in the error
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+=-]*")
_TARGET = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?:[0-9]{1,5}")
_URL_FORBIDDEN = re.compile(r"[\s\x00-\x1f\x7f-\x9f<>\"'`\\]")


class InvalidRegistration(ValueError):
    """A registry's answer is not a registration the operator will record; says which field and why."""


def bounded_text(text: str, limit: int = MAX_REGISTRY_MESSAGE) -> str:
    """A registry's ``text`` on one line (control characters escaped) and at most ``limit``
    characters long, saying how long it was."""
    return _bounded(text, limit)


def check_registration(data: Any) -> Registration:
    """The registration in a registry's JSON answer, or :class:`InvalidRegistration`."""
    if not isinstance(data, dict):
        raise InvalidRegistration("the answer is not a registration (id, address, target)")
    id_, address, target = (_string(data, name) for name in ("id", "address", "target"))
    _check(id_, "id", MAX_LB_ID, _ID.fullmatch(id_) is not None, "letters, digits and ._:/@+=-")
    _check(target, "target", MAX_LB_TARGET, _TARGET.fullmatch(target) is not None, "host:port")
    _check(address, "address", MAX_LB_ADDRESS, _is_web_url(address), "an http:// or https:// URL")
    return Registration(id=id_, address=address, target=target)


def _string(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidRegistration(f"{name} is missing or not a non-empty string")
    return value


def _check(value: str, name: str, limit: int, well_formed: bool, expected: str) -> None:
    if len(value) > limit:
        raise InvalidRegistration(f"{name} is {len(value)} characters long, at most {limit} are accepted")
    if not well_formed:
        raise InvalidRegistration(f"{name} {bounded_text(value, _SHOWN)!r} is not {expected}")


def _is_web_url(value: str) -> bool:
    """An absolute http(s) URL with a host, without credentials, spaces or quotes."""
    if _URL_FORBIDDEN.search(value):
        return False
    try:
        parts = urllib.parse.urlsplit(value)
        _ = parts.port  # a port that is not a number in range
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and "@" not in parts.netloc
