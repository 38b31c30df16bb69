"""An in-memory load balancer: the external system of the simulator and of unit tests.

It records every call so tests can assert "registered once, released exactly once", and can be
told to fail the next releases to exercise the finalizer's retry path.
"""

from __future__ import annotations

import threading

from inference_operator.core.ports import LoadBalancerError, Registration


class InMemoryLoadBalancer:
    """Implements ``LoadBalancerProvider``; ``registrations`` is keyed ``namespace/name``."""

    def __init__(self, *, address_template: str = "lb.example.test/{namespace}/{name}") -> None:
        self.registrations: dict[str, Registration] = {}
        self.register_calls: list[str] = []
        self.release_calls: list[str] = []
        self.lookup_calls: list[str] = []
        self._address_template = address_template
        self._fail_releases = 0
        self._fail_registers = 0
        self._fail_lookups = 0
        self._next_id = 0
        self._lock = threading.Lock()

    def fail_next_releases(self, n: int) -> None:
        """Make the next ``n`` release calls raise LoadBalancerError."""
        with self._lock:
            self._fail_releases = n

    def fail_next_registers(self, n: int) -> None:
        with self._lock:
            self._fail_registers = n

    def register(self, key: str, *, target: str) -> Registration:
        with self._lock:
            self.register_calls.append(key)
            if self._fail_registers > 0:
                self._fail_registers -= 1
                raise LoadBalancerError("injected failure: load balancer unavailable")
            existing = self.registrations.get(key)
            if existing is not None and existing.target == target:
                return existing
            namespace, _, name = key.partition("/")
            if existing is not None:
                reg_id = existing.id
            else:
                self._next_id += 1
                reg_id = f"lb-{self._next_id}"
            reg = Registration(
                reg_id, "http://" + self._address_template.format(namespace=namespace, name=name), target
            )
            self.registrations[key] = reg
            return reg

    def lookup(self, key: str) -> Registration | None:
        with self._lock:
            self.lookup_calls.append(key)
            if self._fail_lookups > 0:
                self._fail_lookups -= 1
                raise LoadBalancerError("injected failure: load balancer unavailable")
            return self.registrations.get(key)

    def fail_next_lookups(self, n: int) -> None:
        with self._lock:
            self._fail_lookups = n

    def release(self, key: str) -> None:
        with self._lock:
            self.release_calls.append(key)
            if self._fail_releases > 0:
                self._fail_releases -= 1
                raise LoadBalancerError("injected failure: load balancer unavailable")
            self.registrations.pop(key, None)
