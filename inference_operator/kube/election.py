"""Leader election on a ``coordination.k8s.io`` Lease, as client-go's leaderelection does it.

Two or more operator replicas may run (a rolling update, a warm standby); at most one may write.
Each replica keeps its watches and cache primed, and only the holder of the Lease reconciles.
The rules are client-go's, so the figures people know hold here too:

- A replica takes the Lease when there is none, when its holder is empty (released on a graceful
  stop), or when the holder has not renewed it for ``lease_duration`` seconds *as this replica
  observed* (the time is measured on the local clock from when the record last changed, never
  by comparing another machine's timestamp with ours).
- The leader renews every ``retry_period``; when it has not managed to renew for
  ``renew_deadline`` (< ``lease_duration``) it stops leading at once, before any other replica
  may take the Lease, so two writers never overlap. :meth:`LeaderElector.is_leader` checks the
  deadline itself: even a renew loop that hangs cannot keep a stale leader writing.
- A graceful stop releases the Lease (empty holder), so a standby takes over within one retry
  period instead of a whole lease duration.
- Writes are optimistic (``resourceVersion``): two replicas racing for an expired Lease cannot
  both win.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from inference_operator.core.clock import Clock
from inference_operator.core.errors import Conflict, Forbidden
from inference_operator.core.objects import Obj
from inference_operator.core.ports import LoadBalancerProvider, Registration

log = logging.getLogger(__name__)
EXPIRY_MARGIN = 0.05  # seconds past another holder's expiry before a follower tries to take over


class LeaseStore(Protocol):
    """The three Lease calls election needs (a ``KubeClient`` provides them)."""

    def get_lease(self, namespace: str, name: str) -> Obj | None: ...
    def create_lease(self, lease: Obj) -> Obj: ...
    def replace_lease(self, lease: Obj) -> Obj: ...


class NotLeader(RuntimeError):
    """A write was attempted by a replica that does not hold the Lease; it was not sent.

    Not an :class:`~inference_operator.core.errors.ApiError`: the API server never saw it, so the
    reconciler must not report it in status as the API's answer; the pass just fails and the
    key waits for whoever leads."""


@dataclass(frozen=True)
class ElectionSettings:
    namespace: str
    identity: str
    name: str = "inference-operator"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs 0 < retry period < renew deadline < lease duration, got "
                f"{self.retry_period:g} s, {self.renew_deadline:g} s, {self.lease_duration:g} s"
            )


def micro_time(wall: datetime.datetime) -> str:
    """A Lease's MicroTime: RFC 3339 with microseconds, UTC."""
    return wall.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Holds or waits for the Lease; ``on_started``/``on_stopped`` are called on each transition."""

    def __init__(
        self,
        settings: ElectionSettings,
        store: LeaseStore,
        clock: Clock,
        *,
        on_started: Callable[[], None] = lambda: None,
        on_stopped: Callable[[], None] = lambda: None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.clock = clock
        self.on_started = on_started
        self.on_stopped = on_stopped
        self._lock = threading.Lock()
        self._leading = False
        self._renewed_at = 0.0  # local clock, last successful acquire or renew
        self._observed: Obj | None = None  # the Lease spec as last seen
        self._observed_at = 0.0  # local clock, when it last changed
        self._held_until: float | None = None  # local clock: when another holder's Lease expires
        self._last_problem = ""
        self.holder = ""
        """Who holds the Lease, as last seen (for logs and the probe)."""
        self.transitions = 0
        """How often this replica started leading."""

    def is_leader(self) -> bool:
        """True while this replica holds the Lease and renewed it within the renew deadline."""
        with self._lock:
            return self._leading and self.clock.now() < self._renewed_at + self.settings.renew_deadline

    # -- one step -------------------------------------------------------------------------

    def step(self) -> float:
        """Try to acquire or renew once, handle a lost lead; seconds until the next step."""
        # A renewal counts from when it was sent: a follower's clock starts when the write lands,
        # and an answer that is slow to come back must not stretch the leader's own deadline.
        sent = self.clock.now()
        acquired = self._try_acquire_or_renew()
        now = self.clock.now()
        with self._lock:
            was_leading = self._leading
            if acquired:
                self._renewed_at = sent
                self._leading = True
            elif was_leading and now >= self._renewed_at + self.settings.renew_deadline:
                self._leading = False
            leading = self._leading
        if leading and not was_leading:
            self.transitions += 1
            log.info(
                "Started leading lease=%s/%s identity=%s",
                self.settings.namespace,
                self.settings.name,
                self.settings.identity,
            )
            self.on_started()
        elif was_leading and not leading:
            log.warning(
                "Stopped leading: the lease was not renewed within %gs lease=%s/%s identity=%s",
                self.settings.renew_deadline,
                self.settings.namespace,
                self.settings.name,
                self.settings.identity,
            )
            self.on_stopped()
        return self._next_step(now, leading)

    def _next_step(self, now: float, leading: bool) -> float:
        """A retry period; but a follower that saw another replica hold the Lease looks again
        right when that Lease would expire, not up to a retry period later (client-go waits for
        its next tick): a killed leader is replaced a lease duration after its last renewal was
        seen, on average a second sooner."""
        if leading or self._held_until is None:
            return self.settings.retry_period
        return min(self.settings.retry_period, max(self._held_until - now, 0.0) + EXPIRY_MARGIN)

    def _try_acquire_or_renew(self) -> bool:
        s = self.settings
        self._held_until = None
        wall = micro_time(self.clock.wall())
        try:
            lease = self.store.get_lease(s.namespace, s.name)
            if lease is None:
                self.store.create_lease(
                    self._lease(None, holder=s.identity, acquired=wall, renewed=wall, transitions=0)
                )
                self.holder = s.identity
                self._problem("")
                return True
            spec = lease.get("spec") or {}
            now = self.clock.now()
            if spec != self._observed:
                self._observed, self._observed_at = spec, now
            holder = str(spec.get("holderIdentity") or "")
            self.holder = holder
            duration = float(spec.get("leaseDurationSeconds") or s.lease_duration)
            if holder and holder != s.identity and now < self._observed_at + duration:
                self._problem("")
                self._held_until = self._observed_at + duration
                return False  # held by another replica that renewed recently enough
            mine = holder == s.identity
            transitions = int(spec.get("leaseTransitions") or 0) + (0 if mine else 1)
            acquired = str(spec.get("acquireTime") or wall) if mine else wall
            self.store.replace_lease(
                self._lease(lease, holder=s.identity, acquired=acquired, renewed=wall, transitions=transitions)
            )
            self.holder = s.identity
            self._problem("")
            return True
        except Conflict:
            return False  # another replica wrote the Lease first: look again next time
        except Forbidden as err:
            self._problem(
                f"Forbidden: {err}. This replica cannot lead until its ServiceAccount may get, create and update "
                f"Leases in namespace {s.namespace} (deploy/rbac/leader_election.yaml, or the chart's lease Role); "
                "or set INFERENCE_OPERATOR_LEADER_ELECTION=false for a single replica"
            )
            return False
        except Exception as err:  # noqa: BLE001 - any failure is "not renewed", reported once
            self._problem(f"{type(err).__name__}: {err}")
            return False

    def _lease(self, old: Obj | None, *, holder: str, acquired: str, renewed: str, transitions: int) -> Obj:
        s = self.settings
        metadata: Obj = {"name": s.name, "namespace": s.namespace}
        if old is not None:
            metadata["resourceVersion"] = old["metadata"]["resourceVersion"]
        spec = {
            "holderIdentity": holder,
            "leaseDurationSeconds": int(s.lease_duration),
            "acquireTime": acquired,
            "renewTime": renewed,
            "leaseTransitions": transitions,
        }
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}

    def _problem(self, text: str) -> None:
        """Log a failure to read or write the Lease once, and once more when it is over."""
        if text == self._last_problem:
            return
        if text:
            log.error(
                "Failed to acquire or renew the leader lease, retrying every %gs lease=%s/%s identity=%s error=%s",
                self.settings.retry_period,
                self.settings.namespace,
                self.settings.name,
                self.settings.identity,
                text,
            )
        else:
            log.info("Reached the leader lease again lease=%s/%s", self.settings.namespace, self.settings.name)
        self._last_problem = text

    # -- the loop -------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Step until ``stop`` is set (the election thread's body)."""
        while not stop.is_set():
            stop.wait(self.step())

    def release(self) -> bool:
        """Give the Lease up (a graceful stop): empty holder, so a standby takes it at once."""
        with self._lock:
            leading, self._leading = self._leading, False
        if not leading:
            return False
        s = self.settings
        wall = micro_time(self.clock.wall())
        try:
            lease = self.store.get_lease(s.namespace, s.name)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != s.identity:
                return False
            transitions = int((lease.get("spec") or {}).get("leaseTransitions") or 0)
            released = self._lease(lease, holder="", acquired=wall, renewed=wall, transitions=transitions)
            released["spec"]["leaseDurationSeconds"] = 1
            self.store.replace_lease(released)
        except Exception as err:  # noqa: BLE001 - the standby then waits out the lease duration
            log.warning(
                "Failed to release the leader lease lease=%s/%s error=%s: %s",
                s.namespace,
                s.name,
                type(err).__name__,
                err,
            )
            return False
        log.info("Released the leader lease lease=%s/%s identity=%s", s.namespace, s.name, s.identity)
        self.on_stopped()
        return True


class LeaderOnlyLoadBalancer:
    """Passes register and release on only while ``is_leader()``; lookups are reads, always allowed."""

    def __init__(self, provider: LoadBalancerProvider, is_leader: Callable[[], bool]) -> None:
        self.provider = provider
        self._is_leader = is_leader

    def _check(self, operation: str, key: str) -> None:
        if not self._is_leader():
            raise NotLeader(f"load balancer {operation} {key}: not sent, this replica does not hold the leader lease")

    def register(self, key: str, *, target: str) -> Registration:
        self._check("register", key)
        return self.provider.register(key, target=target)

    def release(self, key: str) -> None:
        self._check("release", key)
        self.provider.release(key)

    def lookup(self, key: str) -> Registration | None:
        return self.provider.lookup(key)
