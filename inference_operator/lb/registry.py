"""The reference load balancer registry: a real external system for kind users and the e2e suite.

The operator's promise is that nothing it registers outside the cluster is leaked or forgotten.
That can only be checked against something that outlives the operator, so this is a small HTTP
server (stdlib only) that keeps its records in a JSON state file, counts every register and
release call per key (``GET /v1/stats``: "released exactly once"), and can be told to fail the
next calls (``POST /v1/faults``) to exercise the retry and finalizer paths. ``HttpLoadBalancer``
in ``inference_operator.lb.http`` is its client.

Run it with ``python -m inference_operator.lb.registry serve --port 9090``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import hmac
import http.server
import json
import logging
import os
import re
import signal
import socket
import socketserver
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from .. import __version__
from ..backend import LoadBalancerError, Registration
from .http import HttpLoadBalancer

log = logging.getLogger("inference_operator.lb.registry")

DEFAULT_ADDRESS_TEMPLATE = "http://{name}.{namespace}.lb.local"
STATE_VERSION = 1
MAX_BODY_BYTES = 64 * 1024
MAX_TARGET_LENGTH = 1024
POLL_INTERVAL = 0.05  # seconds; how long stop() may wait for the accept loop to notice
CLIENT_TIMEOUT = 10.0  # seconds a client may stay silent mid-request; bounds how long stop() waits
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS_LABEL_RULE = "a DNS label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
FAULT_FIELDS = ("fail_registers", "fail_releases")


class RegistryStateError(Exception):
    """The state file cannot be read or does not hold registry state; the server does not start."""


class _HttpError(Exception):
    """Ends a request with ``status`` and the JSON body ``{"message": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class RegistryServer:
    """Serves the registry on ``host:port`` (port 0 picks a free one; ``url`` tells which).

    Registrations are loaded from ``state_file`` here and saved to it atomically after every
    change. ``token``, when set, must be sent as ``Authorization: Bearer <token>`` (except to
    ``/healthz``). Call counters and faults live in memory only.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        state_file: Path | None = None,
        *,
        address_template: str = DEFAULT_ADDRESS_TEMPLATE,
        fail_registers: int = 0,
        fail_releases: int = 0,
        token: str | None = None,
    ) -> None:
        check_address_template(address_template)
        self.host = host
        self.port = port
        self.state_file = state_file
        self.address_template = address_template
        self.token = token
        self._registrations, self._next_id = load_state(state_file) if state_file else ({}, 0)
        self._faults = {"fail_registers": fail_registers, "fail_releases": fail_releases}
        self._register_calls: collections.Counter[str] = collections.Counter()
        self._release_calls: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the registry is not started")
        port = self._httpd.server_address[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{port}"

    def start(self) -> None:
        """Bind, then serve from a background thread; requests are accepted as soon as this returns."""
        httpd = self._bind()
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(POLL_INTERVAL,), name="lb-registry", daemon=True
        )
        self._thread.start()

    def serve_forever(self) -> None:
        """Bind and serve in the calling thread until ``stop()`` is called from another thread."""
        self._bind().serve_forever(POLL_INTERVAL)

    def stop(self) -> None:
        """Stop accepting, let requests in flight finish, close the socket. Idempotent."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        log.info("Stopped load balancer registry host=%s port=%d", self.host, httpd.server_address[1])

    def __enter__(self) -> RegistryServer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _bind(self) -> _HttpServer:
        if self._httpd is not None:
            raise RuntimeError("the registry is already started")
        httpd = self._httpd = _HttpServer(self)
        log.info(
            "Serving load balancer registry url=%s state=%s registrations=%d",
            self.url,
            self.state_file or "(memory only)",
            len(self._registrations),
        )
        return httpd

    # The registry proper: each method applies one request under the lock (the handler calls them).

    def _register(self, namespace: str, name: str, target: str) -> tuple[int, Registration]:
        key = f"{namespace}/{name}"
        with self._lock:
            self._register_calls[key] += 1
            self._take_fault("fail_registers", "PUT", key)
            existing = self._registrations.get(key)
            if existing is not None and existing.target == target:
                log.info("Registration unchanged key=%s id=%s target=%s", key, existing.id, target)
                return 200, existing
            next_id = self._next_id
            if existing is None:
                next_id += 1
                address = self.address_template.format(namespace=namespace, name=name)
                registration = Registration(id=f"lb-{next_id}", address=address, target=target)
            else:
                registration = dataclasses.replace(existing, target=target)
            self._commit({**self._registrations, key: registration}, next_id)
        if existing is None:
            log.info("Registered key=%s id=%s target=%s address=%s", key, registration.id, target, registration.address)
            return 201, registration
        log.info(
            "Updated registration key=%s id=%s target=%s previous=%s", key, registration.id, target, existing.target
        )
        return 200, registration

    def _release(self, namespace: str, name: str) -> Registration | None:
        key = f"{namespace}/{name}"
        with self._lock:
            self._release_calls[key] += 1
            self._take_fault("fail_releases", "DELETE", key)
            existing = self._registrations.get(key)
            if existing is not None:
                self._commit({k: v for k, v in self._registrations.items() if k != key}, self._next_id)
        if existing is None:
            log.info("Released nothing key=%s reason=NotFound", key)
        else:
            log.info("Released key=%s id=%s target=%s", key, existing.id, existing.target)
        return existing

    def registrations(self) -> dict[str, Registration]:
        with self._lock:
            return dict(self._registrations)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "register_calls": dict(self._register_calls),
                "release_calls": dict(self._release_calls),
                "registrations": len(self._registrations),
                "faults": dict(self._faults),
            }

    def set_faults(self, *, fail_registers: int = 0, fail_releases: int = 0) -> dict[str, int]:
        """Answer the next ``fail_registers`` PUTs and ``fail_releases`` DELETEs with 503."""
        with self._lock:
            self._faults = {"fail_registers": fail_registers, "fail_releases": fail_releases}
            log.info("Set faults fail_registers=%d fail_releases=%d", fail_registers, fail_releases)
            return dict(self._faults)

    def _take_fault(self, field: str, method: str, key: str) -> None:
        if self._faults[field] > 0:
            self._faults[field] -= 1
            log.warning("Injected failure method=%s key=%s remaining=%d", method, key, self._faults[field])
            raise _HttpError(503, f"injected failure ({field}): the registry is unavailable, retry later")

    def _commit(self, registrations: dict[str, Registration], next_id: int) -> None:
        """Save first, then change memory: a record is never acknowledged without being saved."""
        if self.state_file is not None:
            try:
                save_state(self.state_file, registrations, next_id)
            except OSError as err:
                log.error("Failed to save state file=%s error=%s", self.state_file, err)
                raise _HttpError(500, f"could not save the registry state to {self.state_file}: {err}") from None
        self._registrations, self._next_id = registrations, next_id


def check_address_template(template: str) -> str:
    try:
        template.format(namespace="namespace", name="name")
    except (KeyError, IndexError, ValueError) as err:
        raise ValueError(f"address template {template!r} may only use {{namespace}} and {{name}}: {err}") from None
    return template


def load_state(path: Path) -> tuple[dict[str, Registration], int]:
    """``(registrations, last issued id number)`` from ``path``; empty when the file does not exist."""
    if not path.parent.is_dir():
        raise RegistryStateError(f"{path}: the directory {path.parent} does not exist")
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}, 0
    except OSError as err:
        raise RegistryStateError(f"{path}: cannot read: {err.strerror}") from None
    except ValueError as err:
        raise RegistryStateError(f"{path}: not valid JSON: {err}") from None
    try:
        if doc["version"] != STATE_VERSION:
            raise RegistryStateError(f"{path}: state version {doc['version']!r}, expected {STATE_VERSION}")
        registrations = {key: _registration_from(record) for key, record in doc["registrations"].items()}
        next_id = int(doc["next_id"])
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise RegistryStateError(f"{path}: not a registry state file ({type(err).__name__}: {err})") from None
    issued = [int(r.id[3:]) for r in registrations.values() if re.fullmatch(r"lb-\d+", r.id)]
    return registrations, max([next_id, *issued])


def _registration_from(record: Any) -> Registration:
    registration = Registration(**record)
    if not all(isinstance(v, str) and v for v in dataclasses.astuple(registration)):
        raise ValueError(f"a registration needs non-empty strings id, address and target, got {record!r}")
    return registration


def save_state(path: Path, registrations: dict[str, Registration], next_id: int) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it (atomic on POSIX)."""
    doc = {
        "version": STATE_VERSION,
        "next_id": next_id,
        "registrations": {key: dataclasses.asdict(reg) for key, reg in sorted(registrations.items())},
    }
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as file:
            json.dump(doc, file, indent=2, sort_keys=True)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class _HttpServer(http.server.ThreadingHTTPServer):
    daemon_threads = False  # so server_close() waits for requests in flight
    block_on_close = True
    request_queue_size = 128  # the default 5 drops SYNs under a burst, costing clients a 1 s retransmit

    def __init__(self, registry: RegistryServer) -> None:
        self.registry = registry
        if ":" in registry.host:
            self.address_family = socket.AF_INET6
        super().__init__((registry.host, registry.port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can hang where DNS is broken.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

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
        except _HttpError as err:
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
        registry = cast(_HttpServer, self.server).registry
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
                if method == "PUT":
                    status, registration = registry._register(namespace, name, _target(self._read_json()))
                    return status, _record(key, registration)
                if method == "DELETE":
                    if registry._release(namespace, name) is None:
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
        raise _HttpError(404, f"no such endpoint: {self.path}")

    def _authorize(self, path: str) -> None:
        token = cast(_HttpServer, self.server).registry.token
        if token is None or path.rstrip("/") == "/healthz":
            return
        sent = self.headers.get("Authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            raise _HttpError(401, "missing or wrong bearer token in the Authorization header")

    def _read_json(self) -> Any:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise _HttpError(400, "Content-Length is not a number") from None
        if length > MAX_BODY_BYTES or length < 0:
            self.close_connection = True
            raise _HttpError(413, f"the body must be a JSON object of at most {MAX_BODY_BYTES} bytes")
        try:
            return json.loads(self.rfile.read(length))
        except ValueError:
            raise _HttpError(400, "the body is not valid JSON") from None

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
        raise _HttpError(405, f"method {method} not allowed here; use {', '.join(allowed)}")


def _check_label(field: str, value: str) -> None:
    if not DNS_LABEL.fullmatch(value):
        raise _HttpError(400, f"{field} {value!r} is not {DNS_LABEL_RULE}")


def _target(body: Any) -> str:
    target = body.get("target") if isinstance(body, dict) else None
    if not isinstance(target, str) or not target.strip():
        raise _HttpError(400, 'the body must be a JSON object with a non-empty string "target"')
    if len(target) > MAX_TARGET_LENGTH:
        raise _HttpError(400, f"target is longer than {MAX_TARGET_LENGTH} characters")
    return target


def _faults(body: Any) -> dict[str, int]:
    if not isinstance(body, dict) or set(body) - set(FAULT_FIELDS):
        raise _HttpError(400, f"the body must be a JSON object with only {' and '.join(FAULT_FIELDS)}")
    counts = {field: body.get(field, 0) for field in FAULT_FIELDS}
    if any(type(n) is not int or n < 0 for n in counts.values()):
        raise _HttpError(400, f"{' and '.join(FAULT_FIELDS)} must be non-negative integers")
    return counts


def _record(key: str, registration: Registration) -> dict[str, str]:
    return {"key": key, **dataclasses.asdict(registration)}


# Command line: ``serve`` and ``list``, also mounted under ``inference-operator lb-registry``.


def configure_parser(
    parser: argparse.ArgumentParser, *, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> None:
    """Add the ``serve`` and ``list`` subcommands to ``parser``; each sets ``func(args) -> int``."""
    sub = parser.add_subparsers(
        dest="registry_command", metavar="{serve,list}", required=True, parser_class=parser_class
    )
    serve = sub.add_parser("serve", help="run the registry until SIGINT or SIGTERM")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=9090, help="port to bind, 0 for any free one (default 9090)")
    serve.add_argument("--state", type=Path, metavar="FILE", help="JSON file that keeps registrations across restarts")
    serve.add_argument("--fail-registers", type=_count, default=0, metavar="N", help="answer the next N PUTs with 503")
    serve.add_argument(
        "--fail-releases", type=_count, default=0, metavar="N", help="answer the next N DELETEs with 503"
    )
    serve.add_argument(
        "--address-template",
        type=_template,
        default=DEFAULT_ADDRESS_TEMPLATE,
        metavar="TEMPLATE",
        help="address given to new registrations (default %(default)s)",
    )
    serve.set_defaults(func=_cmd_serve)
    listing = sub.add_parser("list", help="print the registrations of a running registry")
    listing.add_argument("--url", default="http://127.0.0.1:9090", help="registry URL (default %(default)s)")
    listing.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the answer (default 5)")
    listing.set_defaults(func=_cmd_list)


def _cmd_serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        server = RegistryServer(
            args.host,
            args.port,
            args.state,
            address_template=args.address_template,
            fail_registers=args.fail_registers,
            fail_releases=args.fail_releases,
        )
        server.start()
    except (RegistryStateError, OSError) as err:
        print(f"error: cannot start the registry on {args.host}:{args.port}: {err}", file=sys.stderr)
        return 1
    stopping = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stopping.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        stopping.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    try:
        registrations = HttpLoadBalancer(args.url, timeout=args.timeout).list_registrations()
    except (LoadBalancerError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    rows = [("KEY", "ID", "ADDRESS", "TARGET")]
    rows += [(key, reg.id, reg.address, reg.target) for key, reg in sorted(registrations.items())]
    w0, w1, w2 = (max(len(row[i]) for row in rows) for i in range(3))
    for key, reg_id, address, target in rows:
        print(f"{key:<{w0}}   {reg_id:<{w1}}   {address:<{w2}}   {target}")
    return 0


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)")
    return int(text)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    return int(text)


def _template(text: str) -> str:
    try:
        return check_address_template(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m inference_operator.lb.registry", description="The reference load balancer registry."
    )
    configure_parser(parser)
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


__all__ = ["DEFAULT_ADDRESS_TEMPLATE", "RegistryServer", "RegistryStateError", "configure_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
