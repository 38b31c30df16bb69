"""Leadership checked at the moment of each write, by time and by term, not by a flag.

A flag ("am I leader") is cleared by the election thread, which a paused process (SIGSTOP, a
frozen node, a long GC pause) has not had the chance to run: on waking, a worker mid-pass or a
key the watch delivered would go straight to the API with the flag still set. So nothing here
trusts a flag. Every mutating request and every balancer register/release first asks
:meth:`WriteFence.term` for the *term* it may write under, which the elector answers from the
monotonic clock at that instant (the last renewal must be younger than the renew deadline minus
a safety margin, see ``election.write_window``) and from its term counter (bumped each time it
starts leading). A pass captures the term when it begins (``one_pass``); a write of that pass
under any other term — leadership lost, even if regained since — is refused with
:class:`NotLeader`, so in-flight passes cannot outlive the leadership they began under.

What this cannot fence: a request already on the wire when the pause began (or that passed the
check in the microseconds before it); the API server has no way to make a write conditional on
a Lease. The safety margin is what budgets for that request's flight.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol

from inference_operator.core.ports import LoadBalancerProvider, Registration

__all__ = ["Fence", "LeaderOnlyLoadBalancer", "NotLeader", "TermSource", "WriteFence"]


class NotLeader(RuntimeError):
    """A write was attempted by a replica that does not hold the Lease; it was not sent.

    Not an :class:`~inference_operator.core.errors.ApiError`: the API server never saw it, so the
    reconciler must not report it in status as the API's answer; the pass just fails and the
    key waits for whoever leads."""


class TermSource(Protocol):
    """What the fence asks of the elector."""

    def lease_term(self) -> int | None:
        """The current term if writes may go at this instant, else None."""
        ...


class WriteFence(Protocol):
    """What the backend and the balancer wrapper ask before each write."""

    def term(self) -> int | None:
        """The term this thread may write under right now; None: refuse."""
        ...

    def holds(self, term: int) -> bool:
        """True while ``term`` is still the term writes may go under (for Events posted later)."""
        ...


class Fence:
    """The elector's answer at the moment of the write, narrowed to the term of the pass."""

    def __init__(self, source: TermSource) -> None:
        self.source = source
        self._pass = threading.local()
        self.refused = 0
        """Writes refused since start (a counter for the figures and the probe)."""

    @contextlib.contextmanager
    def one_pass(self) -> Iterator[int | None]:
        """The writes of this thread, until the block ends, are bound to the term in force now."""
        self._pass.term = self.source.lease_term()
        self._pass.open = True
        try:
            yield self._pass.term
        finally:
            self._pass.open = False

    def term(self) -> int | None:
        now = self.source.lease_term()
        if now is not None and getattr(self._pass, "open", False) and self._pass.term != now:
            now = None  # the pass began under another term (or none): its writes are not ours
        if now is None:
            self.refused += 1
        return now

    def holds(self, term: int) -> bool:
        held = self.source.lease_term() == term
        if not held:
            self.refused += 1
        return held

    def may_write(self) -> bool:
        return self.term() is not None

    def gate(self, verb: str, kind: str) -> None:
        """The last check, the instant before a request is sent (``KubeClient.write_gate``): the
        Backend asked before its crash point and metrics; this leaves no step of ours between
        the check and the socket."""
        if self.term() is None:
            raise NotLeader(f"{verb} {kind}: not sent, this replica does not hold the leader lease")


class LeaderOnlyLoadBalancer:
    """Passes register and release on only while the fence allows; lookups are reads, always allowed.

    The HTTP provider asks the fence once more at its socket (``wiring.make_load_balancer``)."""

    def __init__(self, provider: LoadBalancerProvider, fence: WriteFence) -> None:
        self.provider = provider
        self.fence = fence

    def _check(self, operation: str, key: str) -> None:
        if self.fence.term() is None:
            raise NotLeader(f"load balancer {operation} {key}: not sent, this replica does not hold the leader lease")

    def register(self, key: str, *, target: str) -> Registration:
        self._check("register", key)
        return self.provider.register(key, target=target)

    def release(self, key: str) -> None:
        self._check("release", key)
        self.provider.release(key)

    def lookup(self, key: str) -> Registration | None:
        return self.provider.lookup(key)
