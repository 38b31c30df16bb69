"""Leader election on a ``coordination.k8s.io`` Lease: client-go's rules, and a fence at each write.

Two or more operator replicas may run (a rolling update, a warm standby); at most one may write.
Each replica keeps its watches and cache primed, and only the holder of the Lease reconciles.
The rules are client-go's, so the figures people know hold here too:

- A replica takes the Lease when there is none, when its holder is empty (released on a graceful
  stop), or when the holder has not renewed it for ``lease_duration`` seconds *as this replica
  observed* (the time is measured on the local clock from when the record last changed, never
  by comparing another machine's timestamp with ours).
- The leader renews every ``retry_period``; when it has not managed to renew for
  ``renew_deadline`` (< ``lease_duration``) it stops leading, before any other replica may take
  the Lease.
- A graceful stop releases the Lease (empty holder), so a standby takes over within one retry
  period instead of a whole lease duration.
- Writes are optimistic (``resourceVersion``): two replicas racing for an expired Lease cannot
  both win.

Where client-go is best effort, this is stricter ("at most one writer"):

- **The write window is time, not a flag.** :meth:`LeaderElector.lease_term` answers "may I write
  now" from the monotonic clock at the instant of the write: the last successful renewal (counted
  from when it was *sent*) must be younger than ``renew_deadline - safety_margin``. A process that
  wakes from any pause finds its window closed and refuses every write until it has renewed; it
  cannot renew a Lease another replica took meanwhile (the resourceVersion moved).
- **Seeing another holder ends leadership at once.** A renewal that finds the Lease held by
  another identity, deleted, or re-created (another uid) stops leading on the spot (``on_stopped``)
  instead of polling until the renew deadline. A timeout or a 5xx is no such evidence: it keeps
  the deadline rule.
- **Terms.** Each start of leading is a new term; ``fence.py`` binds a pass to the term it began
  under, so a pass that straddles a loss (even one followed by a regain) has its writes refused.
- **A takeover waits out the previous holder's window.** A replica that acquires a Lease whose
  previous holder may still be inside its write window — the Lease was missing (deleted by hand:
  its holder could have renewed just before), or was handed to this identity by someone else's
  write — claims it at once (so nobody else does) but starts writing only ``renew_deadline`` after
  it first saw that record. An expired Lease needs no wait (its holder stopped long ago), nor does
  a released one.

The safety margin: a write allowed at the last instant of the window must land at the API server
before any other replica may write. Another replica starts at the earliest ``lease_duration`` after
it saw our last renewal land (or ``renew_deadline`` after it saw the Lease vanish), and our window
closes ``renew_deadline - safety_margin`` after that renewal was *sent*; so the budget for the
request's flight is ``lease_duration - renew_deadline + safety_margin`` (6 s with the defaults)
on expiry, and ``safety_margin`` (1 s) on a deleted Lease. Clock drift between the machines is a
rate difference of the monotonic clocks (NTP keeps it under 500 ppm: under 8 ms over 15 s),
far inside it. The cost in availability: a leader whose renewals keep failing stops writing one
``safety_margin`` before it stops leading (it would stop at ``renew_deadline`` anyway); a healthy
leader renews every ``retry_period`` (2 s) and never comes near the edge. A Lease deleted by hand
costs a takeover of ``renew_deadline`` instead of a retry period; so does a first start with no
Lease at all (nobody can tell "never existed" from "just deleted").
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from inference_operator.core.clock import Clock, RealClock
from inference_operator.core.errors import AlreadyExists, Conflict, Forbidden, NotFound
from inference_operator.core.objects import Obj
from inference_operator.kube.fence import LeaderOnlyLoadBalancer, NotLeader

__all__ = [
    "BootClock",
    "ElectionSettings",
    "LeaderElector",
    "LeaderOnlyLoadBalancer",
    "LeaseStore",
    "NotLeader",
    "micro_time",
]

log = logging.getLogger(__name__)
EXPIRY_MARGIN = 0.05  # seconds past another holder's expiry before a follower tries to take over


class LeaseStore(Protocol):
    """The three Lease calls election needs (a ``KubeClient`` provides them)."""

    def get_lease(self, namespace: str, name: str) -> Obj | None: ...
    def create_lease(self, lease: Obj) -> Obj: ...
    def replace_lease(self, lease: Obj) -> Obj: ...


@dataclass(frozen=True)
class ElectionSettings:
    namespace: str
    identity: str
    name: str = "inference-operator"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    safety_margin: float = 1.0
    """Seconds before the renew deadline at which writes stop (the module docstring says why)."""

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election needs 0 < retry period < renew deadline < lease duration, got "
                f"{self.retry_period:g} s, {self.renew_deadline:g} s, {self.lease_duration:g} s"
            )
        if not 0 <= self.safety_margin < self.renew_deadline - self.retry_period:
            raise ValueError(
                "leader election needs 0 <= safety margin < renew deadline - retry period (a healthy leader "
                f"must never reach the edge of its write window), got {self.safety_margin:g} s"
            )

    @property
    def write_window(self) -> float:
        """Seconds after a renewal was sent during which writes may go."""
        return self.renew_deadline - self.safety_margin


class BootClock(RealClock):
    """The machine's clock for the write window: ``CLOCK_BOOTTIME``, which, unlike
    ``time.monotonic()`` (``CLOCK_MONOTONIC``), keeps counting while the machine is suspended,
    so a node that sleeps and wakes finds its window closed. Elsewhere: the monotonic clock."""

    _ID = getattr(time, "CLOCK_BOOTTIME", None)

    def now(self) -> float:
        return time.clock_gettime(self._ID) if self._ID is not None else time.monotonic()

    def __repr__(self) -> str:
        return "BootClock()"


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
        self._term = 0  # counts starts of leading; writes carry the term they began under
        self._renewed_at = 0.0  # local clock, when the last successful acquire or renew was sent
        self._observed: Obj | None = None  # the Lease spec as last seen
        self._observed_at = 0.0  # local clock, when it last changed
        self._absent_since: float | None = None  # local clock, when the Lease was first seen missing
        self._held_until: float | None = None  # local clock: when another holder's Lease expires
        self._uid = ""  # the uid of the Lease this replica holds (or claims)
        self._write_from: float | None = None  # claimed: may write from then on (a takeover's wait)
        self._last_problem = ""
        self.holder = ""
        """Who holds the Lease, as last seen (for logs and the probe)."""
        self.transitions = 0
        """How often this replica started leading."""

    def is_leader(self) -> bool:
        """True while this replica holds the Lease and renewed it within the renew deadline."""
        with self._lock:
            return self._leading and self.clock.now() < self._renewed_at + self.settings.renew_deadline

    def lease_term(self) -> int | None:
        """The term writes may go under at this instant, or None: leading, and the last renewal
        was sent less than the write window ago (by the monotonic clock, read now)."""
        with self._lock:
            if self._leading and self.clock.now() < self._renewed_at + self.settings.write_window:
                return self._term
            return None

    @property
    def term(self) -> int:
        """The number of the current (or last) term."""
        return self._term

    # -- one step -------------------------------------------------------------------------

    def step(self) -> float:
        """Try to acquire or renew once, handle a lost lead; seconds until the next step."""
        # A renewal counts from when it was sent: a follower's clock starts when the write lands,
        # and an answer that is slow to come back must not stretch the leader's own deadline.
        sent = self.clock.now()
        with self._lock:
            held = self._leading or self._write_from is not None
        acquired, lost = self._try_acquire_or_renew(held=held)
        now = self.clock.now()
        with self._lock:
            was_leading = self._leading
            if acquired:
                self._renewed_at = sent
                if not was_leading and self._write_from is not None and now >= self._write_from:
                    self._leading, self._write_from = True, None
                    self._term += 1
            elif lost or (was_leading and now >= self._renewed_at + self.settings.renew_deadline):
                self._leading, self._write_from = False, None
            elif not was_leading:
                self._write_from = None  # a claim we could not renew is no claim
            leading = self._leading
        if leading and not was_leading:
            self.transitions += 1
            log.info(
                "Started leading lease=%s/%s identity=%s term=%d",
                self.settings.namespace,
                self.settings.name,
                self.settings.identity,
                self._term,
            )
            self.on_started()
        elif was_leading and not leading:
            why = lost or f"the lease was not renewed within {self.settings.renew_deadline:g}s"
            log.warning(
                "Stopped leading: %s lease=%s/%s identity=%s term=%d",
                why,
                self.settings.namespace,
                self.settings.name,
                self.settings.identity,
                self._term,
            )
            self.on_stopped()
        return self._next_step(now, leading)

    def _next_step(self, now: float, leading: bool) -> float:
        """A retry period; but a follower that saw another replica hold the Lease looks again
        right when that Lease would expire, not up to a retry period later (client-go waits for
        its next tick): a killed leader is replaced a lease duration after its last renewal was
        seen, on average a second sooner. A claim waiting out a takeover looks again when the
        wait is over."""
        wait = self._write_from
        if wait is not None:
            return min(self.settings.retry_period, max(wait - now, 0.0))
        if leading or self._held_until is None:
            return self.settings.retry_period
        return min(self.settings.retry_period, max(self._held_until - now, 0.0) + EXPIRY_MARGIN)

    def _claim(self, *, since: float | None) -> None:
        """This replica holds the Lease now; it writes from ``since + renew_deadline`` on (None:
        at once). A claim already waiting keeps its time."""
        with self._lock:
            if self._leading or self._write_from is not None:
                return
            now = self.clock.now()
            self._write_from = now if since is None else max(now, since + self.settings.renew_deadline)
        if since is not None and self._write_from > now:
            log.info(
                "Acquired the leader lease, writing in %.1fs: the previous holder may still be inside its "
                "write window lease=%s/%s identity=%s",
                self._write_from - now,
                self.settings.namespace,
                self.settings.name,
                self.settings.identity,
            )

    def _try_acquire_or_renew(self, *, held: bool) -> tuple[bool, str]:
        """(acquired or renewed, why leadership is lost: "" when it is not). ``held``: this
        replica leads or claims the Lease."""
        s = self.settings
        self._held_until = None
        wall = micro_time(self.clock.wall())
        try:
            lease = self.store.get_lease(s.namespace, s.name)
            now = self.clock.now()
            if lease is None:
                if self._absent_since is None:
                    self._absent_since = now
                self._observed = None
                if held:
                    return False, "the lease was deleted"
                created = self.store.create_lease(
                    self._lease(None, holder=s.identity, acquired=wall, renewed=wall, transitions=0)
                )
                self._uid = str((created.get("metadata") or {}).get("uid") or "")
                self.holder = s.identity
                self._problem("")
                self._claim(since=self._absent_since)
                return True, ""
            self._absent_since = None
            uid = str(lease["metadata"].get("uid") or "")
            spec = lease.get("spec") or {}
            if spec != self._observed:
                self._observed, self._observed_at = spec, now
            holder = str(spec.get("holderIdentity") or "")
            self.holder = holder
            if held and holder != s.identity:
                return False, f"the lease is held by {holder or 'nobody'}"
            if held and self._uid and uid != self._uid:
                return False, f"the lease was re-created (uid {uid})"
            duration = float(spec.get("leaseDurationSeconds") or s.lease_duration)
            if holder and holder != s.identity and now < self._observed_at + duration:
                self._problem("")
                self._held_until = self._observed_at + duration
                return False, ""  # held by another replica that renewed recently enough
            mine = holder == s.identity
            transitions = int(spec.get("leaseTransitions") or 0) + (0 if mine else 1)
            acquired = str(spec.get("acquireTime") or wall) if mine else wall
            self.store.replace_lease(
                self._lease(lease, holder=s.identity, acquired=acquired, renewed=wall, transitions=transitions)
            )
            self._uid = uid
            self.holder = s.identity
            self._problem("")
            # A record naming us that this process did not write (a restart, or a hand edit)
            # may have replaced a holder that is still writing: wait out its window.
            self._claim(since=self._observed_at if mine else None)
            return True, ""
        except NotFound:
            return (False, "the lease was deleted") if held else (False, "")
        except (Conflict, AlreadyExists):
            return False, ""  # another replica wrote the Lease first: look again next time
        except Forbidden as err:
            self._problem(
                f"Forbidden: {err}. This replica cannot lead until its ServiceAccount may get, create and update "
                f"Leases in namespace {s.namespace} (deploy/rbac/leader_election.yaml, or the chart's lease Role); "
                "or set INFERENCE_OPERATOR_LEADER_ELECTION=false for a single replica"
            )
            return False, ""
        except Exception as err:  # noqa: BLE001 - any failure is "not renewed", reported once
            self._problem(f"{type(err).__name__}: {err}")
            return False, ""

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
            leading, self._leading, self._write_from = self._leading, False, None
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
