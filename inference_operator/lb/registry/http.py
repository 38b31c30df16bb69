"""The registry's HTTP side: routing, request validation, bearer auth and JSON framing.

Split from ``RegistryServer`` (server.py) so that the server reads as the registry proper
(records, counters, faults under one lock) while everything about the wire lives here. This side
knows the registry only as :class:`Registry`, the few things a request needs of it, so the two
modules do not import each other. ``HttpLoadBalancer`` in ``inference_operator.lb.http`` is the
client that speaks this protocol.
"""

from __future__ import annotations

import dataclasses
import hmac
import http.server
import json
import logging
import re
import socket
import socketserver
import ssl
import urllib.parse
from typing import Any, Protocol, cast

from inference_operator import __version__
from inference_operator.core.ports import Registration

LOGGER_NAME = "inference_operator.lb.registry"  # one logger for the whole registry, named after its entry module
log = logging.getLogger(LOGGER_NAME)

MAX_BODY_BYTES = 64 * 1024
MAX_TARGET_LENGTH = 1024
CLIENT_TIMEOUT = 10.0  # seconds a client may stay silent mid-request; bounds how long stop() waits
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS_LABEL_RULE = "a DNS label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
FAULT_FIELDS = ("fail_registers", "fail_releases")


class HttpError(Exception):
    """Ends a request with ``status`` and the JSON body ``{"message": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Registry(Protocol):
    """What the HTTP side needs of the registry it serves (``RegistryServer`` is the one).

    Where to listen and how (``host``, ``port``, ``tls``, ``token``), and one method per request
    that changes or reads the records, each applied under the registry's own lock.
    """

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...

    @property
    def tls(self) -> ssl.SSLContext | None: ...

    @property
    def token(self) -> str | None: ...

    def register(self, namespace: str, name: str, target: str, *, caller: str) -> tuple[int, Registration]:
        """Register (or re-target) ``namespace/name``: the HTTP status (201 new, 200 otherwise) and the record."""
        ...

    def release(self, namespace: str, name: str, *, caller: str) -> Registration | None:
        """Release ``namespace/name``: the record it had, None if there was none."""
        ...

    def registrations(self) -> dict[str, Registration]: ...

    def stats(self) -> dict[str, Any]: ...

    def set_faults(self, *, fail_registers: int = 0, fail_releases: int = 0) -> dict[str, int]: ...


class RegistryHttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = False  # so server_close() waits for requests in flight
    block_on_close = True
    request_queue_size = 128  # the default 5 drops SYNs under a burst, costing clients a 1 s retransmit

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        if ":" in registry.host:
            self.address_family = socket.AF_INET6
        super().__init__((registry.host, registry.port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can hang where DNS is broken.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

    def get_request(self) -> tuple[socket.socket, Any]:
        """The accepted connection, inside TLS when the registry serves https (the handshake
        runs in the request's own thread, so a slow client cannot stall accepting)."""
        sock, address = super().get_request()
        tls = self.registry.tls
        if tls is not None:
            sock = tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("Dropped connection client=%s", client_address, exc_info=True)


class _Handler(http.server.BaseHTTPRequestHandler):
    server_version = f"inference-operator-lb-registry/{__version__}"
    sys_version = ""
    timeout = CLIENT_TIMEOUT

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Silenced: each request logs one line of its own (see ``_dispatch``)."""

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("HTTP server said client=%s message=%s", self.client_address[0], format % args)

    def _dispatch(self, method: str) -> None:
        path = urllib.parse.urlsplit(self.path).path
        try:
            self._authorize(path)
            status, payload = self._route(method, [urllib.parse.unquote(p) for p in path.strip("/").split("/")])
        except HttpError as err:
            status, payload = err.status, {"message": err.message}
            if status < 500:  # 5xx were logged where they happened
                log.warning("Rejected request method=%s path=%s status=%d message=%s", method, path, status, err)
        except OSError:
            raise  # the client went away or timed out; nothing to answer
        except Exception:
            log.exception("Failed request method=%s path=%s", method, path)
            status, payload = 500, {"message": "internal error in the registry; see its log"}
        else:
            if method == "GET":  # reads are polled often: their line is a debug one
                log.debug("Served method=GET path=%s status=%d", path, status)
        self._send(status, payload)

    def _route(self, method: str, parts: list[str]) -> tuple[int, Any]:
        registry = cast(RegistryHttpServer, self.server).registry
        match parts:
            case ["healthz"]:
                _allow(method, "GET")
                return 200, {"status": "ok"}
            case ["v1", "registrations"]:
                _allow(method, "GET")
                items = sorted(registry.registrations().items())
                return 200, {"items": [_record(key, reg) for key, reg in items]}
            case ["v1", "registrations", namespace, name]:
                _allow(method, "GET", "PUT", "DELETE")
                _check_label("namespace", namespace)
                _check_label("name", name)
                key = f"{namespace}/{name}"
                caller = self.headers.get("User-Agent") or "unknown"
                if method == "PUT":
                    target = _target(self._read_json())
                    status, registration = registry.register(namespace, name, target, caller=caller)
                    return status, _record(key, registration)
                if method == "DELETE":
                    if registry.release(namespace, name, caller=caller) is None:
                        return 404, {"message": f"no registration for {key}"}
                    return 204, None
                found = registry.registrations().get(key)
                return (200, _record(key, found)) if found else (404, {"message": f"no registration for {key}"})
            case ["v1", "stats"]:
                _allow(method, "GET")
                return 200, registry.stats()
            case ["v1", "faults"]:
                _allow(method, "POST", "DELETE")
                counts = _faults(self._read_json()) if method == "POST" else {}
                return 200, registry.set_faults(**counts)
        raise HttpError(404, f"no such endpoint: {self.path}")

    def _authorize(self, path: str) -> None:
        token = cast(RegistryHttpServer, self.server).registry.token
        if token is None or path.rstrip("/") == "/healthz":
            return
        sent = self.headers.get("Authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            raise HttpError(401, "missing or wrong bearer token in the Authorization header")

    def _read_json(self) -> Any:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise HttpError(400, "Content-Length is not a number") from None
        if length > MAX_BODY_BYTES or length < 0:
            self.close_connection = True
            raise HttpError(413, f"the body must be a JSON object of at most {MAX_BODY_BYTES} bytes")
        try:
            return json.loads(self.rfile.read(length))
        except ValueError:
            raise HttpError(400, "the body is not valid JSON") from None

    def _send(self, status: int, payload: Any) -> None:
        body = b"" if payload is None else (json.dumps(payload, sort_keys=True) + "\n").encode()
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _allow(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise HttpError(405, f"method {method} not allowed here; use {', '.join(allowed)}")


def _check_label(field: str, value: str) -> None:
    if not DNS_LABEL.fullmatch(value):
        raise HttpError(400, f"{field} {value!r} is not {DNS_LABEL_RULE}")


def _target(body: Any) -> str:
    target = body.get("target") if isinstance(body, dict) else None
    if not isinstance(target, str) or not target.strip():
        raise HttpError(400, 'the body must be a JSON object with a non-empty string "target"')
    if len(target) > MAX_TARGET_LENGTH:
        raise HttpError(400, f"target is longer than {MAX_TARGET_LENGTH} characters")
    return target


def _faults(body: Any) -> dict[str, int]:
    if not isinstance(body, dict) or set(body) - set(FAULT_FIELDS):
        raise HttpError(400, f"the body must be a JSON object with only {' and '.join(FAULT_FIELDS)}")
    counts = {field: body.get(field, 0) for field in FAULT_FIELDS}
    if any(type(n) is not int or n < 0 for n in counts.values()):
        raise HttpError(400, f"{' and '.join(FAULT_FIELDS)} must be non-negative integers")
    return counts


def _record(key: str, registration: Registration) -> dict[str, str]:
    return {"key": key, **dataclasses.asdict(registration)}
