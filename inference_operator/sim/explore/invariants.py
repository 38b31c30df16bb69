"""What must hold once the simulated cluster has settled, whatever happened before.

The explorer (see :mod:`.machine`) throws actions and faults at the operator, lets everything
quiesce, then asks here whether the cluster is right. Each invariant is a pure function of an
:class:`Observation` (the API server's and the balancer's state, plus what was counted while
settling) and returns one line per violation, naming the object and saying what is wrong.
The ones about pods and GPUs on a simulated cluster live in :mod:`.scheduling`, those about
rollouts in :mod:`.rollouts`; both are listed here with the others.

Invariants that the operator does not satisfy yet are listed in :data:`PENDING_INVARIANTS`, with
the fix each waits for. The bounded run in ``make test`` enforces only the others; ``make
explore`` checks and reports all of them. Move a name out of the pending list when its fix lands.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Final

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE
from inference_operator.core.objects import Obj, key_of
from inference_operator.reconcile.builders import desired_deployment, desired_service, service_address, service_url
from inference_operator.sim.explore.isvcs import IsvcView, isvcs, ours, ready_of
from inference_operator.sim.explore.observation import Observation
from inference_operator.sim.explore.owned import owned_differences, service_name_valid
from inference_operator.sim.explore.rollouts import ROLLOUT_CHECKS, ROLLOUT_INVARIANTS, expected_strategy
from inference_operator.sim.explore.scheduling import SCHEDULING_CHECKS, SCHEDULING_INVARIANTS
from inference_operator.sim.faults import LB_WRITES
from inference_operator.sim.simulation import Simulation

__all__ = [
    "CHECKS",
    "ENFORCED_INVARIANTS",
    "INVARIANTS",
    "PENDING_INVARIANTS",
    "RECONCILES_PER_SETTLE_BOUND",
    "SIMILAR_EVENTS_BOUND",
    "check",
]


RECONCILES_PER_SETTLE_BOUND: Final = 40
"""Reconcile passes one object may take while the cluster settles (from one action to quiet).
Exponential backoff over the settle horizon needs about 20; polling every 5 s needs hundreds."""

SIMILAR_EVENTS_BOUND: Final = 10
"""Different Warning Events with one reason one object may get while the cluster settles: past
10 similar Events, client-go's EventCorrelator combines them into one."""

INVARIANTS: Final[dict[str, str]] = {
    "children_match_spec": "each child equals the desired state of the current spec on every operator-owned "
    "field, removed fields absent (API-server defaults and other actors' fields aside)",
    "one_child_each": "exactly one Deployment and one Service per live valid InferenceService; none whose "
    "InferenceService is gone",
    "lb_record_iff_service": "the balancer holds a record iff the object exists, is not being deleted, has "
    "loadBalancer.enabled and has its Service, pointing at builders.service_address",
    "no_leaked_records": "no balancer record outlives its InferenceService",
    "finalizer_after_release": "the finalizer leaves only after a confirmed release (the balancer holds nothing)",
    "observed_generation_current": "status.observedGeneration == metadata.generation",
    "ready_only_when_true": "Ready=True only with the current generation observed, the Deployment rolled out "
    "to the desired template with every replica ready, the Service in place and the balancer record "
    "status names actually there",
    "stall_explained": "an object that is not Ready says why: Ready=False, a reason and a message; for one that "
    "keeps failing (being deleted or not), a False condition's message names it",
    "no_hot_loop": f"at most {RECONCILES_PER_SETTLE_BOUND} reconciles per object and operator process while "
    "settling, and settling ends",
    "zero_writes_when_converged": "one more pass over the settled system writes nothing (API or balancer)",
    "foreign_fields_kept": "fields other actors set (labels, annotations, injected containers, extra "
    "ownerReferences, same-named foreign objects) are left alone",
    "events_aggregated": "a repeated Warning Event is posted once per operator process while settling (repeats count "
    "on it), and at most "
    f"{SIMILAR_EVENTS_BOUND} different ones per object and reason",
    **SCHEDULING_INVARIANTS,
    **ROLLOUT_INVARIANTS,
}

PENDING_INVARIANTS: Final[dict[str, str]] = {}
"""Invariants today's operator breaks, each with the fix it waits for.
``make test`` does not enforce these; ``make explore`` still checks and reports them."""

ENFORCED_INVARIANTS: Final = frozenset(INVARIANTS) - frozenset(PENDING_INVARIANTS)


# -- helpers -------------------------------------------------------------------------------------


def _get(sim: Simulation, kind: str, namespace: str, name: str) -> Obj | None:
    return sim.get(kind, namespace, name)


def _desired(isvc: IsvcView, kind: str, live: Obj | None = None) -> Obj:
    """The child ``isvc`` asks for; a Deployment's strategy is what ``spec.rollout`` asks for
    (``Auto``'s, planned from capacity, is ``live``'s: :mod:`.rollouts` judges that one)."""
    assert isvc.parsed is not None
    if kind == DEPLOYMENT:
        return desired_deployment(isvc.parsed, strategy=expected_strategy(isvc.parsed, live))
    return desired_service(isvc.parsed)


# -- the invariants ------------------------------------------------------------------------------


def children_match_spec(o: Observation) -> list[str]:
    out = []
    for isvc in isvcs(o.sim):
        if not isvc.live or isvc.key in o.failing:
            continue
        for kind in (DEPLOYMENT, SERVICE):
            child = _get(o.sim, kind, "default", isvc.name)
            if child is None or not ours(child, isvc):
                continue
            diffs = owned_differences(child, _desired(isvc, kind, child))
            if diffs:
                out.append(f"{kind} {isvc.key} differs from the desired state: " + "; ".join(diffs[:4]))
    return out


def one_child_each(o: Observation) -> list[str]:
    out = []
    live = {}
    for isvc in isvcs(o.sim):
        live[isvc.name] = isvc
        if not isvc.live or isvc.key in o.failing or not service_name_valid(isvc.name):
            continue
        for kind in (DEPLOYMENT, SERVICE):
            child = _get(o.sim, kind, "default", isvc.name)
            if child is None:
                out.append(f"{kind} {isvc.key} is missing")
    for kind in (DEPLOYMENT, SERVICE):
        for child in o.sim.api.list(kind):
            refs = [
                r for r in child["metadata"].get("ownerReferences") or [] if r.get("controller") and r["kind"] == KIND
            ]
            for ref in refs:
                owner = live.get(ref["name"])
                if owner is None or owner.uid != ref["uid"]:
                    out.append(
                        f"{kind} default/{child['metadata']['name']} belongs to InferenceService "
                        f"{ref['name']} (uid {ref['uid']}), which is gone"
                    )
    return out


def lb_record_iff_service(o: Observation) -> list[str]:
    out = []
    records = o.sim.lb.registrations
    seen = set()
    for isvc in isvcs(o.sim):
        seen.add(isvc.key)
        if isvc.parsed is None:
            continue  # an invalid spec: the operator cannot know what is wanted
        record = records.get(isvc.key)
        service = _get(o.sim, SERVICE, "default", isvc.name)
        enabled = isvc.parsed.spec.loadBalancer.enabled
        wanted = not isvc.deleting and enabled and ours(service, isvc)
        if isvc.key in o.failing:
            continue  # still retrying (a balancer outage outlasting the backoff): stall_explained's case
        if wanted and record is None:
            out.append(f"{isvc.key} is enabled and has its Service, but the balancer holds no record")
        elif record is not None and not wanted:
            why = "being deleted" if isvc.deleting else ("disabled" if not enabled else "without its Service")
            out.append(f"{isvc.key} is {why}, but the balancer still holds {record.id} -> {record.target}")
        elif record is not None and record.target != service_address(isvc.parsed):
            out.append(
                f"the balancer's record for {isvc.key} targets {record.target}, not {service_address(isvc.parsed)}"
            )
    for key, record in records.items():
        if key not in seen:
            out.append(f"the balancer holds {record.id} for {key}, which does not exist")
    return out


def no_leaked_records(o: Observation) -> list[str]:
    existing = {isvc.key for isvc in isvcs(o.sim)}
    return [
        f"the balancer holds {record.id} -> {record.target} for {key}, whose InferenceService is gone"
        for key, record in o.sim.lb.registrations.items()
        if key not in existing
    ]


def finalizer_after_release(o: Observation) -> list[str]:
    return list(o.finalizer_violations)


def observed_generation_current(o: Observation) -> list[str]:
    if o.status_blocked:
        return []
    out = []
    for isvc in isvcs(o.sim):
        if isvc.deleting:
            continue
        generation = isvc.obj["metadata"].get("generation")
        observed = (isvc.obj.get("status") or {}).get("observedGeneration")
        if observed != generation:
            out.append(f"{isvc.key}: observedGeneration {observed} but generation {generation}")
    return out


def ready_only_when_true(o: Observation) -> list[str]:
    out = []
    for isvc in isvcs(o.sim):
        ready = ready_of(isvc.obj)
        if isvc.deleting or ready is None or ready.get("status") != "True":
            continue
        problems = _ready_problems(o, isvc, ready)
        if problems:
            out.append(f"{isvc.key} says Ready=True, but " + "; ".join(problems))
    return out


def _ready_problems(o: Observation, isvc: IsvcView, ready: Obj) -> list[str]:
    meta, status = isvc.obj["metadata"], isvc.obj.get("status") or {}
    generation = meta.get("generation")
    if isvc.parsed is None:
        return ["its spec is invalid"]
    problems = []
    if status.get("observedGeneration") != generation or ready.get("observedGeneration") != generation:
        problems.append(f"generation {generation} is not the one observed")
    spec = isvc.parsed.spec
    deployment = _get(o.sim, DEPLOYMENT, "default", isvc.name)
    if not ours(deployment, isvc) or deployment is None:
        problems.append("it has no Deployment of its own")
    else:
        dst = deployment.get("status") or {}
        if int(dst.get("observedGeneration") or 0) < int(deployment["metadata"].get("generation") or 1):
            problems.append("the Deployment controller has not observed the Deployment's spec")
        counts = {k: int(dst.get(k) or 0) for k in ("replicas", "updatedReplicas", "readyReplicas")}
        if any(v != spec.replicas for v in counts.values()):
            problems.append(f"the Deployment has {counts} for {spec.replicas} desired")
        if diffs := owned_differences(deployment, _desired(isvc, DEPLOYMENT, deployment)):
            problems.append("the Deployment differs from the spec (" + "; ".join(diffs[:2]) + ")")
    service = _get(o.sim, SERVICE, "default", isvc.name)
    if not ours(service, isvc):
        problems.append("it has no Service of its own")
    record = o.sim.lb.registrations.get(isvc.key)
    if spec.loadBalancer.enabled:
        lb = status.get("loadBalancer") or {}
        if record is None:
            problems.append(f"the balancer holds no record (status says {lb.get('id')} at {status.get('url')})")
        elif record.target != service_address(isvc.parsed):
            problems.append(f"the balancer's record targets {record.target}")
        elif (lb.get("id"), lb.get("address"), status.get("url")) != (record.id, record.address, record.address):
            problems.append(
                f"status names {lb.get('id')} at {status.get('url')}, the balancer has {record.id} at {record.address}"
            )
    elif status.get("url") != service_url(isvc.parsed):
        problems.append(f"url {status.get('url')} is not the Service's")
    return problems


def stall_explained(o: Observation) -> list[str]:
    if o.status_blocked:
        return []
    out = []
    for isvc in isvcs(o.sim):
        failing = o.failing.get(isvc.key)
        if isvc.deleting and failing is None:
            continue  # on its way out
        ready = ready_of(isvc.obj)
        if ready is not None and ready.get("status") == "True" and failing is None:
            continue
        what = f"keeps failing ({failing})" if failing else "is not Ready"
        if ready is None:
            out.append(f"{isvc.key} {what}, and its status has no Ready condition")
        elif ready.get("status") != "False" or not ready.get("reason") or not ready.get("message"):
            out.append(
                f"{isvc.key} {what}, but Ready is {ready.get('status')} "
                f"(reason {ready.get('reason')!r}, message {ready.get('message')!r})"
            )
        elif failing and not any(
            c.get("status") == "False" and isvc.name in str(c.get("message"))
            for c in (isvc.obj.get("status") or {}).get("conditions") or []
        ):
            # Ready names the first problem; the one that keeps failing may be another condition's.
            out.append(f"{isvc.key} {what}, but no False condition names it (Ready: {ready['message']!r})")
    return out


def no_hot_loop(o: Observation) -> list[str]:
    bound = RECONCILES_PER_SETTLE_BOUND * (1 + o.restarts)
    out = [
        f"{key} was reconciled {n} times while settling ({o.restarts} restarts, bound {bound})"
        for key, n in sorted(o.reconciles.items())
        if n > bound
    ]
    if o.ran_out:
        out.append("settling did not end within its step budget")
    return out


def zero_writes_when_converged(o: Observation) -> list[str]:
    out = []
    for call in o.pass_calls:
        key = key_of(call.namespace, call.name)
        if key not in o.failing_before_pass:
            out.append(f"{call.verb} {call.kind} {key}" + (" (changed it)" if call.changed else " (changed nothing)"))
    for call in o.second_pass_calls if not o.faults_pending else []:
        key = key_of(call.namespace, call.name)
        if call.changed:
            out.append(f"{call.verb} {call.kind} {key} again (changed it)")
    for lb_call in o.pass_lb:
        if lb_call.call in LB_WRITES and lb_call.key not in o.failing_before_pass:
            out.append(f"load balancer {lb_call.call} {lb_call.key}")
    return [f"one more pass over the settled system wrote: {', '.join(out)}"] if out else []


def foreign_fields_kept(o: Observation) -> list[str]:
    out = []
    for mark in o.marks:
        obj = _get(o.sim, mark.kind, "default", mark.name)
        if obj is None or obj["metadata"].get("uid") != mark.uid:
            continue  # deleted (by the garbage collector or a person): nothing left to keep
        if not mark.present_on(obj):
            detail = f"{mark.key}={mark.value}" if mark.what in ("label", "annotation") else mark.key
            out.append(f"{mark.kind} default/{mark.name} lost the {mark.what} another actor set ({detail})")
    return out


def events_aggregated(o: Observation) -> list[str]:
    # The correlator that counts repeats lives in the operator's memory (as client-go's does):
    # a restarted operator posts a repeat once more.
    once = 1 + o.restarts
    out = [
        f"{key} got the same Warning Event {n} times while settling "
        f"({o.restarts} restarts; {reason}: {message[:120]!r})"
        for (key, reason, message), n in sorted(o.warnings.items())
        if n > once
    ]
    similar: Counter[tuple[str, str]] = Counter()
    for (key, reason, _), n in o.warnings.items():
        similar[(key, reason)] += n
    out += [
        f"{key} got {n} different Warning Events with reason {reason} while settling"
        for (key, reason), n in sorted(similar.items())
        if n > SIMILAR_EVENTS_BOUND
    ]
    return out


CHECKS: Final[dict[str, Callable[[Observation], list[str]]]] = {
    "children_match_spec": children_match_spec,
    "one_child_each": one_child_each,
    "lb_record_iff_service": lb_record_iff_service,
    "no_leaked_records": no_leaked_records,
    "finalizer_after_release": finalizer_after_release,
    "observed_generation_current": observed_generation_current,
    "ready_only_when_true": ready_only_when_true,
    "stall_explained": stall_explained,
    "no_hot_loop": no_hot_loop,
    "zero_writes_when_converged": zero_writes_when_converged,
    "foreign_fields_kept": foreign_fields_kept,
    "events_aggregated": events_aggregated,
    **SCHEDULING_CHECKS,
    **ROLLOUT_CHECKS,
}


def check(o: Observation, names: frozenset[str] | None = None) -> dict[str, list[str]]:
    """Run the invariants (all, or ``names``); returns the broken ones with their violations."""
    broken = {}
    for name, fn in CHECKS.items():
        if names is not None and name not in names:
            continue
        violations = fn(o)
        if violations:
            broken[name] = violations
    return broken
