"""Fault injection at the load balancer: the calls the operator makes fail, hang, or find
records gone, through a wrapper around the simulator's balancer (see :mod:`.faults`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from inference_operator.core.ports import LoadBalancerError, Registration
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.crash import CrashSwitch

__all__ = ["LB_CALLS", "LB_WRITES", "FaultyLoadBalancer", "LbCall"]

LB_CALLS: Final = frozenset({"register", "release", "lookup"})
"""The load balancer provider's calls; faults apply to these, other attributes pass through."""

LB_WRITES: Final = frozenset({"register", "release"})


@dataclass(frozen=True)
class LbCall:
    """One call the operator made to the load balancer: ``outcome`` is ok, failed, or hung
    (``applied``: the balancer did it before the caller gave up)."""

    time: float
    call: str
    key: str
    outcome: Literal["ok", "failed", "hung"]
    applied: bool


@dataclass
class _Pending:
    mode: Literal["fail", "hang"]
    times: int
    applied: bool = False
    calls: frozenset[str] = field(default_factory=lambda: LB_CALLS)


class FaultyLoadBalancer:
    """The in-memory load balancer as the operator sees it, with outages and amnesia.

    ``register`` and ``release`` are spelt out (the provider protocol); any other provider call
    (``lookup``, and whatever the protocol gains) is forwarded through ``__getattr__`` with the
    same faults; non-call attributes pass straight through.
    """

    def __init__(
        self,
        inner: InMemoryLoadBalancer,
        *,
        clock: FakeClock,
        hang_seconds: float = 30.0,
        crash: CrashSwitch | None = None,
    ) -> None:
        self.inner = inner
        self.clock = clock
        self.hang_seconds = hang_seconds
        self.crash = crash if crash is not None else CrashSwitch()
        self.calls: list[LbCall] = []
        self._pending: list[_Pending] = []

    # -- faults -------------------------------------------------------------------------------

    def fail_next(self, n: int, *, calls: frozenset[str] = LB_CALLS) -> None:
        """The next ``n`` calls (of ``calls``) raise LoadBalancerError at once."""
        self._pending.append(_Pending("fail", n, calls=calls))

    def hang_next(self, n: int, *, applied: bool = False, calls: frozenset[str] = LB_CALLS) -> None:
        """The next ``n`` calls hang ``hang_seconds`` of fake time, then time out; with
        ``applied`` the balancer did the work before the caller gave up."""
        self._pending.append(_Pending("hang", n, applied=applied, calls=calls))

    def clear(self) -> None:
        self._pending.clear()

    @property
    def pending_faults(self) -> int:
        return sum(p.times for p in self._pending)

    def lose(self, key: str) -> Registration | None:
        """The balancer forgets ``key`` (restored from an old backup): the record is gone."""
        return self.inner.registrations.pop(key, None)

    def restart_empty(self) -> int:
        """The balancer restarts with no records at all; returns how many it lost."""
        lost = len(self.inner.registrations)
        self.inner.registrations.clear()
        return lost

    # -- the provider -------------------------------------------------------------------------

    def register(self, key: str, *, target: str) -> Registration:
        result: Registration = self._call("register", self.inner.register, (key,), {"target": target})
        return result

    def release(self, key: str) -> None:
        self._call("release", self.inner.release, (key,), {})

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name in LB_CALLS and callable(attr):

            def call(*args: Any, **kwargs: Any) -> Any:
                return self._call(name, attr, args, kwargs)

            return call
        return attr

    def _take(self, name: str) -> _Pending | None:
        for pending in self._pending:
            if pending.times > 0 and name in pending.calls:
                pending.times -= 1
                return pending
        return None

    def _call(self, name: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        key = str(args[0]) if args else str(kwargs.get("key", ""))
        fault = self._take(name)
        if fault is None:
            result = method(*args, **kwargs)
            self._log(name, key, "ok", applied=True)
            return result
        if fault.mode == "fail":
            self._log(name, key, "failed", applied=False)
            raise LoadBalancerError(f"injected failure: load balancer unavailable ({name} {key})")
        if fault.applied:
            method(*args, **kwargs)
        self.clock.advance(self.hang_seconds)
        self._log(name, key, "hung", applied=fault.applied)
        raise LoadBalancerError(f"{name} {key}: no answer from the load balancer within {self.hang_seconds:g}s")

    def _log(self, name: str, key: str, outcome: Literal["ok", "failed", "hung"], *, applied: bool) -> None:
        self.calls.append(LbCall(self.clock.now(), name, key, outcome, applied))
        if name in LB_WRITES:
            self.crash.tick(f"load balancer {name} {key}")
