"""The unhappy-path scenarios, written against a World: a same-named foreign Service; a quota
forbidding Services; a load balancer that forgot the record; a name the API server refuses at
admission; a spec field removed (env) that must leave the child; registration switched off and
on again; a Deployment deleted by hand; a Service's port edited by hand into a clash (refused
until the Service is deleted); the owner label taken off the Deployment (which takes it out of
the operator's label-selected watch); a load balancer that lost a record and refuses the next
registrations, or the first releases of a deletion; more GPUs per replica than any node has
(PodsUnschedulable), then fixed.
"""

from __future__ import annotations

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE, EventReason, Reason

from .common import (
    NAME,
    READY,
    check,
    created,
    deployment_of,
    foreign_service,
    llama,
    ready_message,
    ready_replicas,
    ready_with,
    scenario,
)
from .observe import DELETED, PROGRESSING
from .world import World


@scenario("foreign-service")
def foreign_service_in_the_way(world: World) -> None:
    world.create(foreign_service(NAME))
    world.apply(llama(replicas=1))
    s = world.settle(
        "a foreign Service of the same name",
        NAME,
        lambda s: s.stalled_with(Reason.CHILD_CONFLICT) and ready_replicas(s) == 1,
        what="ChildConflict, the Deployment's pod ready all the same",
    )
    check("already exists but is not controlled by this InferenceService" in ready_message(s), ready_message(s))
    svc = s.children()[SERVICE]
    check(svc is not None and svc["ownerReferences"] == [] and svc["ports"][0]["port"] == 80, f"untouched: {svc}")
    check(s.deployment is not None, "the Deployment is still written")
    check(world.observation.steps[-1].lb_calls == {}, "nothing registered without the Service")
    world.delete(SERVICE, NAME)
    world.settle("the foreign Service deleted", NAME, ready_with(1), what="Ready once the conflict is gone")


@scenario("quota")
def quota_forbids_services(world: World) -> None:
    world.forbid_services("no-services")
    world.apply(llama(replicas=1))
    s = world.settle(
        "a quota allowing no Service",
        NAME,
        lambda s: s.stalled_with(Reason.CHILD_FORBIDDEN) and ready_replicas(s) == 1,
        what="ChildForbidden, the Deployment's pod ready all the same",
    )
    message = ready_message(s)
    check("403 Forbidden" in message and "exceeded quota: no-services" in message, message)
    check(s.deployment is not None and s.service is None, "the Deployment is written, the Service is not")
    step = world.observation.steps[-1]
    check(f"Warning/{Reason.CHILD_FORBIDDEN}" in step.events, f"a Warning Event, got {step.events}")
    world.allow_services("no-services")
    world.settle("the quota deleted", NAME, ready_with(1), what="Ready once the quota is gone")


@scenario("lb-forgot")
def load_balancer_forgot_the_record(world: World) -> None:
    s = created(world, replicas=1)
    before = (s.isvc or {})["status"]["loadBalancer"]["id"]
    world.forget_lb_record(NAME)
    s = world.settle(
        "the load balancer forgot the record",
        NAME,
        lambda s: ready_with(1)(s) and (s.isvc or {})["status"]["loadBalancer"]["id"] != before,
        what="registered again, status naming the new record",
    )
    step = world.observation.steps[-1]
    check(step.lb_calls == {"register": 1} and step.lb_record, f"registered again once, got {step.lb_calls}")


@scenario("invalid-name")
def invalid_name_refused(world: World) -> None:
    refusal = world.apply(llama(name="llama-3.1-8b", replicas=1))
    check(refusal is not None and refusal.code == 422, f"refused with 422, got {refusal}")
    check(refusal is not None and "it becomes the name of the Service" in refusal.message, f"the rule, got {refusal}")
    world.settle("refused at admission", "llama-3.1-8b", lambda s: s.gone, what="nothing stored")
    check(world.observation.steps[-1].transitions == [], "no status was ever written")


@scenario("removed-field")
def removed_env_leaves_the_child(world: World) -> None:
    env = [{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}]
    s = created(world, replicas=1, env=env)
    check(deployment_of(s)["env"] == env, f"env on the Deployment, got {deployment_of(s)['env']}")
    world.apply(llama(replicas=1))
    s = world.settle(
        "env removed from the spec",
        NAME,
        lambda s: ready_with(1)(s) and s.children()[DEPLOYMENT] is not None and deployment_of(s)["env"] == [],
        what="the env gone from the Deployment",
    )


@scenario("lb-disabled")
def registration_switched_off_and_on(world: World) -> None:
    created(world, replicas=1)
    world.apply(llama(replicas=1, loadBalancer={"enabled": False}))
    world.settle(
        "registration disabled",
        NAME,
        lambda s: s.settled_ready and not s.registered and "loadBalancer" not in ((s.isvc or {}).get("status") or {}),
        what="released, and still Ready",
    )
    check(world.observation.steps[-1].lb_calls == {"release": 1}, "released once")
    world.apply(llama(replicas=1))
    world.settle("registration enabled again", NAME, ready_with(1), what="registered again")
    check(world.observation.steps[-1].lb_calls == {"register": 1}, "registered once")


@scenario("deployment-deleted")
def deployment_deleted_by_hand(world: World) -> None:
    s = created(world, replicas=2)
    old_uid = (s.deployment or {})["metadata"]["uid"]
    world.delete(DEPLOYMENT, NAME)
    world.settle(
        "Deployment deleted by hand",
        NAME,
        lambda s: s.deployment is not None and s.deployment["metadata"]["uid"] != old_uid and ready_with(2)(s),
        what="the Deployment recreated and Ready again",
    )
    step = world.observation.steps[-1]
    check(step.transitions == [PROGRESSING, READY], f"un-Ready until recreated, got {step.transitions}")
    check(step.lb_calls == {}, f"no load balancer call, got {step.lb_calls}")


@scenario("service-port-edited")
def service_port_edited_by_hand(world: World) -> None:
    """A hand edit the operator cannot undo: its port 8000 named ``http`` cannot go back next to
    the user's port 9999 of the same name, so it says so until the user deletes the Service."""
    created(world, replicas=1)
    port = {"name": "http", "port": 9999, "protocol": "TCP", "targetPort": "http"}
    world.patch(SERVICE, NAME, {"spec": {"ports": [port]}})
    s = world.settle(
        "Service port changed to 9999 by hand",
        NAME,
        lambda s: s.stalled_with(Reason.CHILD_REJECTED),
        what="ChildRejected: the operator's port cannot join the user's of the same name",
    )
    message = ready_message(s)
    check('spec.ports[1].name: Duplicate value: "http"' in message, f"the API server's reason, got {message}")
    check([p["port"] for p in (s.service or {})["spec"]["ports"]] == [9999], "the user's edit stays as it is")
    world.delete(SERVICE, NAME)
    s = world.settle(
        "the edited Service deleted",
        NAME,
        lambda s: (
            s.service is not None and [p["port"] for p in s.service["spec"]["ports"]] == [8000] and ready_with(1)(s)
        ),
        what="the Service recreated with port 8000 and Ready",
    )


@scenario("child-label-removed")
def owner_label_removed_from_the_deployment(world: World) -> None:
    created(world, replicas=1)
    label = "serving.inference-operator.dev/inferenceservice"
    world.patch(DEPLOYMENT, NAME, {"metadata": {"labels": {label: None}}})
    s = world.settle(
        "the owner label removed from the Deployment by hand",
        NAME,
        lambda s: s.deployment is not None and label in s.deployment["metadata"].get("labels", {}) and ready_with(1)(s),
        what="the label put back (the Deployment left the operator's label-selected watch)",
    )
    check(deployment_of(s)["labels"][label] == NAME, "label value")


@scenario("lb-register-fails")
def load_balancer_lost_the_record_and_refuses_registrations(world: World) -> None:
    """An outage of the balancer that lost the record: Ready says so until a registration holds.

    (Failing the registrations of a new object instead would make whether Ready ever shows
    LoadBalancerFailed depend on the pods being ready before the retries succeed: timing.)"""
    created(world, replicas=1)
    world.fail_lb_calls(registers=2)
    world.forget_lb_record(NAME)
    world.settle(
        "the record lost and the load balancer refusing two registrations",
        NAME,
        lambda s: ready_with(1)(s) and s.registered,
        what="registered again after the retries",
    )
    step = world.observation.steps[-1]
    check(step.transitions == [f"False/{Reason.LOAD_BALANCER_FAILED}", READY], f"said so: {step.transitions}")
    check(step.lb_calls == {"register": 3}, f"two failed registrations and one that held, got {step.lb_calls}")
    check(f"Warning/{EventReason.LB_FAILED}" in step.events, f"a Warning Event, got {step.events}")


@scenario("lb-release-fails")
def load_balancer_refuses_the_first_releases(world: World) -> None:
    created(world, replicas=1)
    world.fail_lb_calls(releases=2)
    world.delete(KIND, NAME)
    world.settle(
        "deleted while the load balancer fails twice", NAME, lambda s: s.gone and not s.registered, what="gone"
    )
    step = world.observation.steps[-1]
    check(step.transitions == [f"False/{Reason.TERMINATING}", DELETED], f"Terminating, then gone: {step.transitions}")
    check(step.lb_calls == {"release": 3}, f"two failed releases and one that held, got {step.lb_calls}")
    check(f"Warning/{EventReason.LB_FAILED}" in step.events, f"a Warning Event, got {step.events}")


@scenario("unschedulable")
def more_gpus_than_any_node_has(world: World) -> None:
    """16 GPUs per replica, on nodes of 8: explained once the rollout stopped moving, then fixed."""
    check(world.apply(llama(replicas=1, gpu=16)) is None, "the InferenceService was refused")
    s = world.settle(
        "16 GPUs asked per replica",
        NAME,
        lambda s: s.stalled_with(Reason.PODS_UNSCHEDULABLE),
        what="PodsUnschedulable (after the rollout made no progress for a while)",
    )
    check("cannot be scheduled" in ready_message(s), ready_message(s))
    check(world.observation.steps[-1].transitions == [f"False/{Reason.PODS_UNSCHEDULABLE}"], "explained")
    world.apply(llama(replicas=1, gpu=1))
    world.settle("1 GPU asked per replica", NAME, ready_with(1), what="Ready once the pods fit")
