"""Fault injection for the simulator, by wrapping what the operator talks to, never by editing it.

Controllers break on the unhappy path: a write answered 409, 422, 403 or 500, a request that
timed out after the server applied it, a load balancer that hangs or forgets its records, a
process killed between two writes. Research tools (Sieve, Acto) find most operator bugs by
perturbing exactly these. This module makes each of them a switch a test can flip:

- :class:`FaultyApi` stands between the operator's backend and the FakeApiServer. Armed
  :class:`WriteFault` s make chosen writes (create, update, patch, apply, update_status, delete;
  any kind) fail with the exception classes of :mod:`inference_operator.core.errors`; a timeout may or
  may not have been applied. Everything else is delegated, including methods the server gains
  later (``apply``), through ``__getattr__``.
- :class:`FaultyLoadBalancer` wraps the in-memory balancer: the next N calls fail or hang (the fake
  clock advances, then the call times out, applied or not); records can be lost, or the balancer
  restarted empty.
- :class:`CrashSwitch` kills the operator (raises :class:`OperatorCrash`, a ``BaseException`` that
  no ``except Exception`` in the operator swallows) right after its N-th next write.

Both wrappers keep a log of the calls they saw and can tell an observer about each write, so an
explorer can check properties at the exact moment a write happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from inference_operator.core.errors import ApiError, Conflict, Forbidden, Invalid, NotFound
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.crash import CrashSwitch, OperatorCrash
from inference_operator.sim.lbfaults import LB_CALLS, LB_WRITES, FaultyLoadBalancer, LbCall

__all__ = [
    "API_ERRORS",
    "LB_CALLS",
    "LB_WRITES",
    "WRITE_VERBS",
    "ApiErrorKind",
    "CrashSwitch",
    "FaultyApi",
    "FaultyLoadBalancer",
    "LbCall",
    "OperatorCrash",
    "ServerTimeout",
    "WriteCall",
    "WriteFault",
]


WRITE_VERBS: Final = frozenset({"create", "update", "update_status", "patch", "patch_status", "apply", "delete"})
"""The FakeApiServer methods that write; faults and the write log apply to these only."""


ApiErrorKind = Literal["conflict", "invalid", "forbidden", "internal", "timeout"]
API_ERRORS: Final[tuple[ApiErrorKind, ...]] = ("conflict", "invalid", "forbidden", "internal", "timeout")


class ServerTimeout(ApiError):
    """The request did not complete in time (HTTP 504); it may or may not have been applied."""

    code = 504
    reason = "Timeout"


_PLURALS: Final = {"Deployment": "deployments.apps", "Service": "services"}


def _resource(kind: str) -> str:
    return _PLURALS.get(kind, f"{kind.lower()}s.serving.inference-operator.dev")


def make_api_error(error: ApiErrorKind, verb: str, kind: str, namespace: str, name: str) -> ApiError:
    """The exception a real kube-apiserver's answer maps to, worded as the real one words it."""
    resource, where = _resource(kind), {"kind": kind, "namespace": namespace, "name": name}
    if error == "conflict":
        return Conflict(
            f'Operation cannot be fulfilled on {resource} "{name}": the object has been modified; '
            "please apply your changes to the latest version and try again",
            **where,
        )
    if error == "invalid":
        return Invalid(
            f'admission webhook "policy.example.test" denied the request: {kind} "{name}" is invalid: '
            "metadata.labels: Invalid value: rejected by the cluster's admission policy",
            **where,
        )
    if error == "forbidden":
        return Forbidden(
            f'{resource} "{name}" is forbidden: User "system:serviceaccount:inference-operator:'
            f'inference-operator" cannot {verb} resource "{resource.split(".")[0]}" in the namespace "{namespace}"',
            **where,
        )
    if error == "timeout":
        return ServerTimeout(
            f"Timeout: request did not complete within requested timeout - context deadline exceeded "
            f"({verb} {kind} {namespace}/{name})",
            **where,
        )
    return ApiError(f"Internal error occurred: etcdserver: leader changed ({verb} {kind} {namespace}/{name})", **where)


@dataclass
class WriteFault:
    """Fail the next ``times`` writes matching ``verb`` and ``kind`` (None matches any).

    ``applied`` (timeouts only): the server applied the write before the answer was lost.
    ``times=None`` fails every matching write until the fault is cleared (a missing RBAC rule).
    """

    error: ApiErrorKind
    verb: str | None = None
    kind: str | None = None
    name: str | None = None
    times: int | None = 1
    applied: bool = False

    def matches(self, verb: str, kind: str, name: str) -> bool:
        return (
            (self.times is None or self.times > 0)
            and self.verb in (None, verb)
            and self.kind in (None, kind)
            and self.name in (None, name)
        )


@dataclass(frozen=True)
class WriteCall:
    """One write the operator sent, as the proxy saw it.

    ``before``/``after`` are snapshots of the stored object (None: absent), taken only for the
    kinds the proxy was asked to snapshot.
    """

    verb: str
    kind: str
    namespace: str
    name: str
    body: Any
    fault: str = ""
    error: str = ""
    changed: bool = False
    before: Obj | None = None
    after: Obj | None = None


def _target(verb: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str, str, Any]:
    """(kind, namespace, name, body) of a write, whatever its signature."""
    if verb in ("patch", "patch_status", "delete"):
        kind, namespace, name = [*args, None, None, None][:3]
        kind = kwargs.get("kind", kind)
        namespace = kwargs.get("namespace", namespace)
        name = kwargs.get("name", name)
        body = args[3] if len(args) > 3 else kwargs.get("patch")
        return str(kind), str(namespace or "default"), str(name), body
    obj = args[0] if args else kwargs.get("obj", {})
    meta = obj.get("metadata") or {}
    return str(obj.get("kind", "")), str(meta.get("namespace") or "default"), str(meta.get("name", "")), obj


class FaultyApi:
    """A FakeApiServer as the operator sees it, with faults injected into chosen writes.

    Reads and everything else go straight to the server. Every write is logged in ``calls``
    (and passed to ``observe``); ``changed`` says whether the server's write counter moved, which
    is how "a converged object costs zero writes" is measured for the operator alone.
    """

    def __init__(
        self,
        api: FakeApiServer,
        *,
        clock: FakeClock | None = None,
        timeout_seconds: float = 5.0,
        crash: CrashSwitch | None = None,
        observe: Callable[[WriteCall], None] | None = None,
        snapshot_kinds: frozenset[str] = frozenset(),
    ) -> None:
        self.api = api
        self.clock = clock
        self.timeout_seconds = timeout_seconds
        self.crash = crash if crash is not None else CrashSwitch()
        self.observe = observe
        self.snapshot_kinds = snapshot_kinds
        self.faults: list[WriteFault] = []
        self.calls: list[WriteCall] = []
        self.record = True

    def arm(self, fault: WriteFault) -> WriteFault:
        self.faults.append(fault)
        return fault

    def clear(self, kind: str | None = None) -> None:
        """Drop the armed faults that apply to ``kind`` (None: every fault)."""
        self.faults = [f for f in self.faults if kind is not None and f.kind not in (None, kind)]

    @property
    def pending_faults(self) -> list[WriteFault]:
        return [f for f in self.faults if f.times is None or f.times > 0]

    @property
    def writes(self) -> int:
        """Writes the operator sent that changed something."""
        return sum(1 for c in self.calls if c.changed)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.api, name)
        if name in WRITE_VERBS and callable(attr):
            return self._wrap(name, attr)
        return attr

    def _wrap(self, verb: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def write(*args: Any, **kwargs: Any) -> Any:
            return self._write(verb, method, args, kwargs)

        write.__name__ = verb
        return write

    def _take_fault(self, verb: str, kind: str, name: str) -> WriteFault | None:
        for fault in self.faults:
            if fault.matches(verb, kind, name):
                if fault.times is not None:
                    fault.times -= 1
                return fault
        return None

    def _snapshot(self, kind: str, namespace: str, name: str) -> Obj | None:
        if kind not in self.snapshot_kinds:
            return None
        try:
            return self.api.get(kind, namespace, name)
        except NotFound:
            return None

    def _write(self, verb: str, method: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        kind, namespace, name = (t := _target(verb, args, kwargs))[:3]
        body = t[3]
        before = self._snapshot(kind, namespace, name)
        writes_before = self.api.writes
        fault = self._take_fault(verb, kind, name)
        result: Any = None
        error: BaseException | None = None
        try:
            if fault is not None and not (fault.error == "timeout" and fault.applied):
                raise make_api_error(fault.error, verb, kind, namespace, name)
            result = method(*args, **kwargs)
            if fault is not None:  # a timeout after the server applied the write
                raise make_api_error(fault.error, verb, kind, namespace, name)
        except ApiError as err:
            error = err
        if fault is not None and fault.error == "timeout" and self.clock is not None:
            self.clock.advance(self.timeout_seconds)
        call = WriteCall(
            verb,
            kind,
            namespace,
            name,
            body,
            fault=fault.error if fault is not None else "",
            error=type(error).__name__ if error is not None else "",
            changed=self.api.writes > writes_before,
            before=before,
            after=self._snapshot(kind, namespace, name),
        )
        if self.record:
            self.calls.append(call)
        if self.observe is not None:
            self.observe(call)
        self.crash.tick(f"{verb} {kind} {namespace}/{name}")
        if error is not None:
            raise error
        return result
