"""The registry proper: registrations, call counters and injected faults behind one lock.

``RegistryServer`` owns the lifecycle (bind, serve, stop) and applies each request's change; the
HTTP plumbing is in http.py (which knows this class as its ``Registry``) and the state file
format in state.py.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import ssl
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from inference_operator.core.ports import Registration
from inference_operator.lb.registry.http import LOGGER_NAME, HttpError, RegistryHttpServer
from inference_operator.lb.registry.state import StateFile

log = logging.getLogger(LOGGER_NAME)

DEFAULT_ADDRESS_TEMPLATE = "http://{name}.{namespace}.lb.local"
POLL_INTERVAL = 0.05  # seconds; how long stop() may wait for the accept loop to notice
CALL_LOG_SIZE = 10_000  # register and release calls kept in memory, with who made them


@dataclasses.dataclass(frozen=True)
class Call:
    """One register (PUT) or release (DELETE) call: when it arrived (wall clock), on which key,
    and the caller's User-Agent (the operator puts its replica identity there)."""

    at: float
    method: str
    key: str
    caller: str


class RegistryServer:
    """Serves the registry on ``host:port`` (port 0 picks a free one; ``url`` tells which).

    Registrations are loaded from ``state_file`` here and every change is appended to it (and
    on disk) before it is answered. ``token``, when set, must be sent as
    ``Authorization: Bearer <token>`` (except to ``/healthz``). Call counters and faults live
    in memory only.
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
        tls_cert: Path | None = None,
        tls_key: Path | None = None,
    ) -> None:
        check_address_template(address_template)
        self.host = host
        self.port = port
        self.state_file = state_file
        self.address_template = address_template
        self.token = token
        self.tls: ssl.SSLContext | None = None
        """Serves https with this certificate when ``tls_cert`` (and ``tls_key``) are given."""
        if tls_cert is not None:
            self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self.tls.load_cert_chain(tls_cert, tls_key)
        self._state = StateFile(state_file) if state_file else None
        self._registrations, self._next_id = self._state.load() if self._state else ({}, 0)
        self._faults = {"fail_registers": fail_registers, "fail_releases": fail_releases}
        self._register_calls: collections.Counter[str] = collections.Counter()
        self._release_calls: collections.Counter[str] = collections.Counter()
        self._calls: collections.deque[Call] = collections.deque(maxlen=CALL_LOG_SIZE)
        self._lock = threading.Lock()
        self._httpd: RegistryHttpServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the registry is not started")
        port = self._httpd.server_address[1]
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

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

    def _bind(self) -> RegistryHttpServer:
        if self._httpd is not None:
            raise RuntimeError("the registry is already started")
        httpd = self._httpd = RegistryHttpServer(self)
        log.info(
            "Serving load balancer registry url=%s state=%s registrations=%d",
            self.url,
            self.state_file or "(memory only)",
            len(self._registrations),
        )
        return httpd

    # The registry proper: each method applies one request under the lock (the handler calls them).

    def register(self, namespace: str, name: str, target: str, *, caller: str = "") -> tuple[int, Registration]:
        key = f"{namespace}/{name}"
        with self._lock:
            self._register_calls[key] += 1
            self._calls.append(Call(at=time.time(), method="PUT", key=key, caller=caller))
            self._take_fault("fail_registers", "PUT", key)
            existing = self._registrations.get(key)
            if existing is not None and existing.target == target:
                log.info("Registration unchanged key=%s id=%s target=%s caller=%s", key, existing.id, target, caller)
                return 200, existing
            next_id = self._next_id
            if existing is None:
                next_id += 1
                address = self.address_template.format(namespace=namespace, name=name)
                registration = Registration(id=f"lb-{next_id}", address=address, target=target)
            else:
                registration = dataclasses.replace(existing, target=target)
            self._commit(key, registration, next_id)
        if existing is None:
            log.info(
                "Registered key=%s id=%s target=%s address=%s caller=%s",
                key,
                registration.id,
                target,
                registration.address,
                caller,
            )
            return 201, registration
        log.info(
            "Updated registration key=%s id=%s target=%s previous=%s caller=%s",
            key,
            registration.id,
            target,
            existing.target,
            caller,
        )
        return 200, registration

    def release(self, namespace: str, name: str, *, caller: str = "") -> Registration | None:
        key = f"{namespace}/{name}"
        with self._lock:
            self._release_calls[key] += 1
            self._calls.append(Call(at=time.time(), method="DELETE", key=key, caller=caller))
            self._take_fault("fail_releases", "DELETE", key)
            existing = self._registrations.get(key)
            if existing is not None:
                self._commit(key, None, self._next_id)
        if existing is None:
            log.info("Released nothing key=%s reason=NotFound caller=%s", key, caller)
        else:
            log.info("Released key=%s id=%s target=%s caller=%s", key, existing.id, existing.target, caller)
        return existing

    def calls(self) -> list[Call]:
        """The last ``CALL_LOG_SIZE`` register and release calls, oldest first, with who made them."""
        with self._lock:
            return list(self._calls)

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
            raise HttpError(503, f"injected failure ({field}): the registry is unavailable, retry later")

    def _commit(self, key: str, registration: Registration | None, next_id: int) -> None:
        """Save first, then change memory: a record is never acknowledged without being saved.
        ``registration`` is the new record of ``key``, None when it was released."""
        registrations = {k: v for k, v in self._registrations.items() if k != key}
        if registration is not None:
            registrations[key] = registration
        if self._state is not None:
            try:
                if registration is None:
                    self._state.delete(key, registrations, next_id)
                else:
                    self._state.put(key, registration, registrations, next_id)
            except OSError as err:
                log.error("Failed to save state file=%s error=%s", self.state_file, err)
                raise HttpError(500, f"could not save the registry state to {self.state_file}: {err}") from None
        self._registrations, self._next_id = registrations, next_id


def check_address_template(template: str) -> str:
    try:
        template.format(namespace="namespace", name="name")
    except (KeyError, IndexError, ValueError) as err:
        raise ValueError(f"address template {template!r} may only use {{namespace}} and {{name}}: {err}") from None
    return template
