"""The e2e suite's rules for "at most one writer" (tests/e2e/onewriter.py), on hand-written audit events.

Covers: writes before the other replica's first write are fine, Lease requests are the election
and never count; a late status PUT or finalizer patch refused with 409 is tolerated and counted,
and so is a late request abandoned half-sent (the replica's send gate refused its body: the API
server audits a 500 for a connection reset or an unexpected EOF, and never ran it); any other late
request fails, whether the API server accepted it, refused it with 409 on another kind, or refused
it with another code (422, a 403 from RBAC, another 500); a late balancer call fails; with the
strict fence installed, a late write its policy refused (403: a failed validation, named in the
audit annotations, or its Lease missing, named in the response's message) is tolerated whatever
the kind, a 403 from another policy is not; a mutating request by the
operator's ServiceAccount whose user agent names neither replica fails, while its reads (Kopf's
watches) and other users' writes do not concern the check.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.onewriter import POLICY_DENIAL, attribute, check_one_writer

USER = "system:serviceaccount:io-e2e-system:inference-operator"
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC).timestamp()  # the audit events' minute
FENCE = "inference-operator-e2e-fence"
Obj = dict[str, Any]


def event(
    at: float,
    by: str,
    verb: str,
    resource: str,
    *,
    subresource: str = "",
    code: int = 200,
    user: str = USER,
    agent: str = "",
    denied_by: str = "",
) -> Obj:
    seconds = f"{at:06.3f}"
    ref = {
        "resource": resource,
        "namespace": "ns",
        "name": "x",
        **({"subresource": subresource} if subresource else {}),
    }
    return {
        "stage": "ResponseComplete",
        "verb": verb,
        "objectRef": ref,
        "userAgent": agent or f"inference-operator/0.1.0 ({by})",
        "user": {"username": user},
        "requestReceivedTimestamp": f"2026-01-01T00:00:{seconds}Z",
        "responseStatus": {"code": code},
        **({"annotations": {POLICY_DENIAL: f'[{{"message":"m","policy":"{denied_by}"}}]'}} if denied_by else {}),
    }


def param_missing(at: float, by: str, policy: str) -> Obj:
    """A write refused because the policy's parameter (the Lease) did not exist: no annotation,
    the policy named in the response's message only."""
    refused = event(at, by, "patch", "services", code=403)
    refused["responseStatus"]["message"] = (
        f"services \"x\" is forbidden: policy '{policy}' with binding '{policy}' denied request: failed to "
        "configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    )
    return refused


@dataclass
class Call:
    at: float
    method: str
    key: str
    caller: str


def check(*events: Obj, calls: tuple[Call, ...] = (), fence_policy: str = "") -> list[str]:
    # Two replicas: a writes first, b takes over at 10 s.
    base = [event(1, "a", "patch", "deployments"), event(10, "b", "patch", "deployments")]
    attributed = attribute([*base, *events], calls, identities=("a", "b"), operator_user=USER, since=0)
    return [w.what for w in check_one_writer(attributed, "round", fence_policy=fence_policy)]


def test_writes_before_the_others_first_write_and_lease_requests_are_fine() -> None:
    assert check(event(9.9, "a", "update", "inferenceservices", subresource="status")) == []
    assert check(event(11, "a", "update", "leases")) == []


@pytest.mark.parametrize(
    ("verb", "subresource"), [("update", "status"), ("patch", "")], ids=["status PUT", "finalizer patch"]
)
def test_a_late_status_or_finalizer_write_refused_on_its_resource_version_is_tolerated_and_counted(
    verb: str, subresource: str
) -> None:
    late = event(11, "a", verb, "inferenceservices", subresource=subresource, code=409)
    assert check(late) == [f"{verb} inferenceservices/{subresource} ns/x"]


LATE_AND_FAILING = [
    ("accepted status PUT", event(11, "a", "update", "inferenceservices", subresource="status")),
    ("accepted Deployment apply", event(11, "a", "patch", "deployments")),
    ("accepted Event", event(11, "a", "create", "events", code=201)),
    ("Deployment apply refused with 409", event(11, "a", "patch", "deployments", code=409)),
    ("Deployment apply refused with 422", event(11, "a", "patch", "deployments", code=422)),
    ("status PUT refused by RBAC", event(11, "a", "update", "inferenceservices", subresource="status", code=403)),
    ("Event refused with 409", event(11, "a", "create", "events", code=409)),
    ("Event patch failing with another 500", event(11, "a", "patch", "events", code=500)),
]


def cut_off(at: float, by: str, message: str) -> Obj:
    """A request whose body never arrived (its sender dropped the connection): audited as a 500."""
    late = event(at, by, "patch", "events", code=500)
    late["responseStatus"]["message"] = message
    return late


@pytest.mark.parametrize(
    "message",
    [
        "read tcp 127.0.0.1:35803->127.0.0.1:45672: read: connection reset by peer",  # seen on kube-apiserver 1.36.5
        "unexpected EOF",
    ],
)
def test_a_late_request_abandoned_half_sent_is_tolerated_and_counted(message: str) -> None:
    assert check(cut_off(11, "a", message)) == ["patch events/ ns/x"]


@pytest.mark.parametrize(("what", "late"), LATE_AND_FAILING, ids=[w for w, _ in LATE_AND_FAILING])
def test_any_other_late_request_fails_accepted_or_refused(what: str, late: Obj) -> None:
    with pytest.raises(AssertionError, match="a wrote after b's first request"):
        check(late)


def test_a_late_balancer_call_fails() -> None:
    with pytest.raises(AssertionError, match="balancer PUT ns/x"):
        check(calls=(Call(T0 + 11, "PUT", "ns/x", "inference-operator/0.1.0 (a)"),))


def test_with_the_strict_fence_a_late_write_its_policy_refused_is_tolerated_whatever_the_kind() -> None:
    late = [
        event(11, "a", "patch", "deployments", code=403, denied_by=FENCE),
        event(12, "a", "create", "events", code=403, denied_by=FENCE),
    ]
    late.append(param_missing(13, "a", FENCE))
    assert check(*late, fence_policy=FENCE) == [
        "patch deployments/ ns/x",
        "create events/ ns/x",
        "patch services/ ns/x",
    ]
    with pytest.raises(AssertionError, match="refused with 403"):
        check(*late)  # without the fence, a 403 explains nothing
    with pytest.raises(AssertionError, match="refused with 403"):
        check(event(11, "a", "patch", "deployments", code=403, denied_by="another-policy"), fence_policy=FENCE)


def test_a_write_by_the_operators_account_that_names_neither_replica_fails() -> None:
    stray = event(5, "", "patch", "deployments", agent="kopf/1.45.0")
    with pytest.raises(AssertionError, match=r"name neither replica.*kopf/1\.45\.0"):
        check(stray)


def test_its_reads_and_other_users_writes_do_not_concern_the_check() -> None:
    read = event(11, "", "get", "deployments", agent="kopf/1.45.0")
    other = event(11, "", "patch", "deployments", user="system:serviceaccount:kube-system:deployment-controller")
    assert check(read, other) == []
