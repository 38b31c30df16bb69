"""The production ``LoadBalancerProvider``: a small REST registry spoken to over plain HTTP.

The operator's worker threads call it concurrently, so it keeps no connection and no mutable
state: each call opens one connection, sends one request and closes it, all within one deadline
(``lb.deadline``: the timeout bounds the whole call, so a peer trickling bytes cannot hold a
worker). A register or release may be given a last check at the socket (``send_gate``: the
operator's leader fence, passed in from above, as this layer knows no election): asked once the
connection is made (TCP and TLS, where a frozen process may stand for any time) and before each
chunk of the request's bytes, so a process that woke there sends nothing it may no longer send.
Every
failure (the network, a timeout, a status it did not expect) becomes a ``LoadBalancerError``
whose message names the method, the URL and what went wrong, because that text ends up in a
status condition and an Event that a person on call reads. The wire format is the one the
reference server in ``inference_operator.lb.registry`` speaks.
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
import urllib.parse
from collections.abc import Callable
from typing import Any

from inference_operator import __version__
from inference_operator.core.ports import LoadBalancerError, Registration
from inference_operator.lb.answers import InvalidRegistration, bounded_text, check_registration
from inference_operator.lb.deadline import Deadline, DeadlineConnection

REGISTRATIONS_PATH = "/v1/registrations"
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
MAX_KEY = 63 + 1 + 253  # namespace/name
KEY = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-.a-z0-9]{0,251}[a-z0-9])?")
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
"""Where a bearer token may go over plain http: the token never leaves the machine."""
USER_AGENT = f"inference-operator/{__version__}"
MUTATING = ("PUT", "DELETE")
"""The methods a send gate is asked for: register and release; lookups and lists are reads."""

SendGate = Callable[[], None]
"""Asked before each chunk of a mutating request's bytes; it raises to refuse (nothing more is sent)."""


class HttpLoadBalancer:
    """Implements ``LoadBalancerProvider`` against ``{base_url}/v1/registrations/{namespace}/{name}``.

    ``timeout`` (seconds) bounds each whole call: connect, TLS, send and every read; ``token``,
    when given, is sent as ``Authorization: Bearer <token>`` and never appears in messages or ``repr``; ``ca_file``
    (https only) is the PEM bundle the registry's certificate must chain to, instead of the
    system's trust store; ``identity`` (the replica's) goes into the User-Agent, so the
    balancer's own logs say which replica made a call, as the API server's audit log does;
    ``send_gate``, when given, is asked (it raises to refuse) after the connection of a register or
    release is made and before each chunk of its bytes, and whatever it raises propagates (the
    connection is closed, the registry sees no request).
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 5.0,
        token: str | None = None,
        ca_file: str | None = None,
        identity: str = "",
        send_gate: SendGate | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(f"load balancer URL must look like http://host:port, got {base_url!r}")
        if parts.username is not None or parts.password is not None:
            raise ValueError("load balancer URL must not carry credentials: pass token= instead")
        _ = parts.port  # raises ValueError on a port that is not a number in range
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if token is not None and (not token or any(c in token for c in "\r\n")):
            raise ValueError("token must be a non-empty single line")
        if token is not None and parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
            raise ValueError(
                f"a bearer token needs an https:// load balancer URL, got {base_url!r}: over plain http it "
                "would cross the network readable by anyone on the path (plain http is allowed to "
                "127.0.0.1, ::1 and localhost only)"
            )
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._scheme = parts.scheme
        self._netloc = parts.netloc
        self._prefix = parts.path.rstrip("/")
        self._token = token
        self._user_agent = f"{USER_AGENT} ({identity})" if identity else USER_AGENT
        self._send_gate = send_gate
        self._tls: ssl.SSLContext | None = None
        if parts.scheme == "https":
            try:
                self._tls = ssl.create_default_context(cafile=ca_file)
            except (OSError, ssl.SSLError) as err:
                raise ValueError(f"cannot load the load balancer CA bundle {ca_file!r}: {err}") from None
        elif ca_file is not None:
            raise ValueError(f"a CA bundle only applies to an https:// load balancer URL, got {base_url!r}")

    def __repr__(self) -> str:
        return f"HttpLoadBalancer({self.base_url!r}, timeout={self.timeout})"

    def register(self, key: str, *, target: str) -> Registration:
        """``PUT`` the record for ``key``; the registry keeps its id when the record exists."""
        path = _registration_path(key)
        status, reason, body = self._request("PUT", path, {"target": target})
        if status not in (200, 201):
            raise self._status_error("PUT", path, status, reason, body)
        return self._registration("PUT", path, _decode(body), f"HTTP {status} {bounded_text(reason, 80)} without")

    def release(self, key: str) -> None:
        """``DELETE`` the record for ``key``; a 404 means it is already gone, which is success."""
        path = _registration_path(key)
        status, reason, body = self._request("DELETE", path, None)
        if status not in (200, 204, 404):
            raise self._status_error("DELETE", path, status, reason, body)

    def lookup(self, key: str) -> Registration | None:
        """``GET`` the record for ``key``; None when the registry has none (404)."""
        path = _registration_path(key)
        status, reason, body = self._request("GET", path, None)
        if status == 404:
            return None
        if status != 200:
            raise self._status_error("GET", path, status, reason, body)
        return self._registration("GET", path, _decode(body), f"HTTP {status} {bounded_text(reason, 80)} without")

    def list_registrations(self) -> dict[str, Registration]:
        """Every record at the registry, keyed ``namespace/name`` (to check that nothing leaked)."""
        status, reason, body = self._request("GET", REGISTRATIONS_PATH, None)
        if status != 200:
            raise self._status_error("GET", REGISTRATIONS_PATH, status, reason, body)
        data = _decode(body)
        items = data.get("items") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise self._error("GET", REGISTRATIONS_PATH, "answered without a list of items")
        result: dict[str, Registration] = {}
        for item in items:
            key = item.get("key") if isinstance(item, dict) else None
            if not isinstance(key, str) or len(key) > MAX_KEY or not KEY.fullmatch(key):
                shown = bounded_text(repr(key), 80)
                raise self._error(
                    "GET", REGISTRATIONS_PATH, f"answered with a registration whose key {shown} is not namespace/name"
                )
            result[key] = self._registration(
                "GET", REGISTRATIONS_PATH, item, f"answered for {bounded_text(key)} without"
            )
        return result

    def _registration(self, method: str, path: str, data: Any, answered: str) -> Registration:
        """The registration in ``data``, or a LoadBalancerError: "``answered`` a valid registration: why"."""
        try:
            return check_registration(data)
        except InvalidRegistration as err:
            raise self._error(method, path, f"{answered} a valid registration: {err}") from None

    def _request(self, method: str, path: str, payload: dict[str, Any] | None) -> tuple[int, str, bytes]:
        """One request on a fresh connection: ``(status, reason, body)``, or LoadBalancerError."""
        gate = self._send_gate if method in MUTATING else None
        connection = _GatedConnection(self._netloc, deadline=Deadline(self.timeout), tls=self._tls, send_gate=gate)
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode()
            headers["Content-Type"] = "application/json"
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        try:
            connection.request(method, self._prefix + path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.reason, response.read(MAX_RESPONSE_BYTES)
        except TimeoutError:
            raise self._error(method, path, f"no answer within {self.timeout:g} s (timed out)") from None
        except ssl.SSLError as err:
            raise self._error(method, path, f"TLS failed: {err.reason or err}") from None
        except OSError as err:
            detail = f"{err.strerror} [errno {err.errno}]" if err.strerror else (str(err) or type(err).__name__)
            raise self._error(method, path, f"connection failed: {detail}") from None
        except http.client.HTTPException as err:
            raise self._error(method, path, f"broken HTTP response: {type(err).__name__} {err}".rstrip()) from None
        finally:
            connection.close()

    def _status_error(self, method: str, path: str, status: int, reason: str, body: bytes) -> LoadBalancerError:
        data = _decode(body)
        message = data.get("message") if isinstance(data, dict) else None
        detail = f"HTTP {status} {bounded_text(reason, 80)}".rstrip()
        if isinstance(message, str) and message:
            detail += f": {bounded_text(message)}"
        return self._error(method, path, detail)

    def _error(self, method: str, path: str, detail: str) -> LoadBalancerError:
        return LoadBalancerError(f"load balancer registry {method} {self.base_url}{path}: {detail}")


class _GatedConnection(DeadlineConnection):
    """A :class:`DeadlineConnection` whose request bytes go out only once ``send_gate`` allowed
    them, asked after the connection is made and before each chunk (the head, then the body)."""

    def __init__(
        self, netloc: str, *, deadline: Deadline, tls: ssl.SSLContext | None, send_gate: SendGate | None
    ) -> None:
        super().__init__(netloc, deadline=deadline, tls=tls)
        self._send_gate = send_gate

    def send(self, data: Any) -> None:
        if self._send_gate is not None:
            if self.sock is None:
                self.connect()  # what http.client does first in send: connect, then ask
            self._send_gate()
        super().send(data)


def _registration_path(key: str) -> str:
    namespace, sep, name = key.partition("/")
    if not sep or not namespace or not name:
        raise ValueError(f"load balancer key must be namespace/name, got {key!r}")
    quote = urllib.parse.quote
    return f"{REGISTRATIONS_PATH}/{quote(namespace, safe='')}/{quote(name, safe='')}"


def _decode(body: bytes) -> Any:
    """The JSON document in ``body``, or None when it is not JSON (proxies answer in HTML)."""
    try:
        return json.loads(body)
    except ValueError:
        return None


__all__ = ["HttpLoadBalancer"]
