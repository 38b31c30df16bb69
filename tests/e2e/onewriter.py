"""Who wrote what and when, from the API server's audit log and the balancer's call log: the rules
by which tests/e2e/test_leader_election.py judges "at most one writer".

Kept apart from the test so that the rules themselves are tested on audit events written by hand
(tests/unit/test_e2e_onewriter.py): a check that tolerated too much would pass on any cluster.

- A write is a mutating request (Events included; the Lease excluded: that is the election) by
  either replica, named by its user agent, or a balancer register/release the registry logged.
- A mutating request by the operator's ServiceAccount whose user agent names neither replica is
  not dropped: it is reported, as it could be a write no check sees.
- Late: a write by a replica at or after another replica's first write. None may have been
  accepted by the API server (nor reached the balancer). The only late requests tolerated are
  those the API server refused without changing anything, and of those only the ones the
  design expects: a status or finalizer write refused on its resourceVersion (409: they carry
  the one they read), and with the strict fence installed, any write its admission policy
  refused (403; the response's message, kept in the audit event, names the policy).
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MUTATING = ("create", "update", "patch", "delete")
POD_NAME = "authentication.kubernetes.io/pod-name"
"""The user's extra that pod-bound ServiceAccount tokens carry: the strict fence compares it with the Lease."""
POLICY_DENIAL = "validation.policy.admission.k8s.io/validation_failure"
"""The audit annotation a ValidatingAdmissionPolicy's failed validation leaves on the request's
event (a missing parameter leaves none: its denial is in the response's message only)."""


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Write:
    at: float  # epoch seconds: the API server's requestReceivedTimestamp, or the registry's clock
    by: str
    verb: str
    resource: str  # "balancer" for a registry call
    name: str
    subresource: str = ""
    code: int = 200  # the API server's answer (the balancer's calls: 200)
    denied_by: str = ""  # a 403's words (the response's message, the audit annotations): they name a policy
    failure: str = ""  # a 500's message

    @property
    def what(self) -> str:
        if self.resource == "balancer":
            return f"balancer {self.verb} {self.name}"
        return f"{self.verb} {self.resource}/{self.subresource} {self.name}"

    @property
    def accepted(self) -> bool:
        """The API server accepted it (or the balancer got it): it may have changed something."""
        return self.code < 400

    @property
    def refused_on_its_resource_version(self) -> bool:
        """A status PUT or a finalizer patch (the only InferenceService writes the operator
        makes) refused with a conflict: it carried the resourceVersion it read, the new leader
        had written since, nothing changed."""
        if self.code != 409 or self.resource != "inferenceservices":
            return False
        return (self.verb == "update" and self.subresource == "status") or (
            self.verb == "patch" and not self.subresource
        )

    @property
    def abandoned(self) -> bool:
        """Cut off while its body was being sent: the replica's last check at the socket
        (``kube/sendgate.py``) refused the body of a request whose headers had gone out before
        it was paused, and dropped the connection. The API server audits the request with a 500
        ("read tcp …: read: connection reset by peer", or an unexpected EOF) and never ran it."""
        return self.code == 500 and ("connection reset by peer" in self.failure or "unexpected EOF" in self.failure)

    def refused_by(self, policy: str) -> bool:
        """Refused (403) by the admission policy named ``policy``: by one of its validations, or
        because its parameter (the Lease) did not exist."""
        return (
            self.code == 403 and bool(policy) and (f"'{policy}'" in self.denied_by or f'"{policy}"' in self.denied_by)
        )


@dataclass
class Attributed:
    writes: list[Write]
    """By the replicas, in the order they were received."""
    unattributed: list[str]
    """Mutating requests by the operator's ServiceAccount whose user agent names no replica."""


def attribute(
    audit_events: Iterable[dict[str, Any]],
    balancer_calls: Iterable[Any],
    *,
    identities: tuple[str, ...],
    operator_user: str,
    since: float,
) -> Attributed:
    """The writes of the replicas (user agent ``… (identity)``) in the audit events and the
    balancer's calls (those at or after ``since``), and every mutating request of
    ``operator_user`` that names no replica."""
    writes: list[Write] = []
    unattributed: list[str] = []
    for event in audit_events:
        ref = event.get("objectRef") or {}
        if event.get("stage") != "ResponseComplete" or event.get("verb") not in MUTATING:
            continue
        agent = str(event.get("userAgent", ""))
        who = next((i for i in identities if f"({i})" in agent), None)
        if who is None:
            if (event.get("user") or {}).get("username") == operator_user:
                unattributed.append(
                    f"{event.get('verb')} {ref.get('resource')}/{ref.get('subresource', '')} "
                    f"{ref.get('namespace')}/{ref.get('name')} by user agent {agent!r}"
                )
            continue
        if ref.get("resource") == "leases":
            continue
        status = event.get("responseStatus") or {}
        denial = f"{status.get('message', '')} {(event.get('annotations') or {}).get(POLICY_DENIAL, '')}"
        writes.append(
            Write(
                at=parse_time(event["requestReceivedTimestamp"]).timestamp(),
                by=who,
                verb=str(event["verb"]),
                resource=str(ref.get("resource")),
                subresource=str(ref.get("subresource") or ""),
                name=f"{ref.get('namespace')}/{ref.get('name')}",
                code=int(status.get("code") or 0),
                denied_by=denial.strip() if status.get("code") == 403 else "",
                failure=str(status.get("message", "")) if status.get("code") == 500 else "",
            )
        )
    for call in balancer_calls:
        who = next((i for i in identities if f"({i})" in call.caller), None)
        if who is not None and call.at >= since:
            writes.append(Write(call.at, who, call.method, "balancer", call.key))
    return Attributed(sorted(writes, key=lambda w: w.at), unattributed)


def late_writes(writes: list[Write]) -> list[tuple[str, Write]]:
    """Each write by a replica at or after another replica's first write: (that other, the write)."""
    first: dict[str, float] = {}
    for w in writes:
        first.setdefault(w.by, w.at)
    order = sorted(first, key=first.__getitem__)
    late: list[tuple[str, Write]] = []
    for earlier, later in itertools.pairwise(order):
        late += [(later, w) for w in writes if w.by == earlier and w.at >= first[later]]
    return late


def check_one_writer(attributed: Attributed, what: str, *, fence_policy: str = "") -> list[Write]:
    """Fail on a request of the operator's ServiceAccount that names no replica, and on any late
    write but those refused on their resourceVersion, those abandoned half-sent (never run), or
    (``fence_policy``: the strict fence is installed) refused by that policy; returns the late
    requests tolerated, to be counted."""
    assert not attributed.unattributed, (
        f"{what}: mutating requests by the operator's ServiceAccount name neither replica in their user agent: "
        f"{attributed.unattributed}"
    )
    tolerated: list[Write] = []
    for later, w in late_writes(attributed.writes):
        if w.refused_on_its_resource_version or w.abandoned or w.refused_by(fence_policy):
            tolerated.append(w)
            continue
        answer = "accepted" if w.accepted else f"refused with {w.code}, which no fence explains"
        raise AssertionError(f"{what}: {w.by} wrote after {later}'s first request, {answer}: {w.what} at {w.at:.3f}")
    return tolerated
