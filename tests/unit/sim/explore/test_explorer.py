"""The fault-injecting explorer: its fault wrappers, its perturbations, its invariants, a bounded run.

Covers:
- FaultyApi: an armed fault fails the matching write with the API's exception class (409
  Conflict, 422 Invalid, 403 Forbidden, 500, 504 timeout) and does not apply it; a timeout may
  have been applied, and moves the fake clock; faults match verb and kind and are used up; a
  persistent fault fails until cleared; reads and methods the server gains later (``apply``) are
  delegated, writes among them wrapped; the write log says which writes changed something.
- CrashSwitch: the operator dies (a BaseException it cannot catch) right after its N-th write.
- FaultyLoadBalancer: the next N calls fail, or hang (the clock moves) and time out, applied or
  not; records are lost or the balancer restarts empty; other provider calls (``lookup``) are
  forwarded with the same faults.
- SharedInformer: a paused informer delivers nothing until resumed; dropped or reordered events
  leave the cache wrong until a re-list, which fixes it and tells the handlers.
- Simulation: restart_operator loses the operator's memory, converges again without writes;
  interposed wrappers see only the operator's writes and survive restarts.
- Invariants: a converged world breaks none; each checker sees a planted violation; the owned-field
  comparison ignores defaults and other actors' fields but not a leftover field; the finalizer
  monitor flags a finalizer removed while the balancer holds the record.
- Crash points: the operator killed right after each of its writes along create, update and
  delete restarts and converges with every enforced invariant holding.
- The explorer: findings print as a test that replays them; a bounded, seeded exploration keeps
  every enforced invariant; pending invariants name the issue item they wait for.
- Regressions: every bug the explorer found, as the minimal sequence it printed, named after the
  behaviour; those still pending are expected to fail (strictly: a fix makes them pass loudly).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE
from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import ApiError, Conflict, Forbidden, Invalid
from inference_operator.core.ports import LoadBalancerError, Registration
from inference_operator.lb.memory import InMemoryLoadBalancer
from inference_operator.sim import Simulation
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.explore import (
    ENFORCED_INVARIANTS,
    INVARIANTS,
    PENDING_INVARIANTS,
    Explorer,
    InvariantViolation,
    World,
)
from inference_operator.sim.explore.invariants import CHECKS, check
from inference_operator.sim.explore.machine import violation_type
from inference_operator.sim.explore.observation import Observation
from inference_operator.sim.explore.owned import owned_differences
from inference_operator.sim.explore.runner import CI_EXAMPLES, CI_STEPS, Finding, explore
from inference_operator.sim.faults import (
    CrashSwitch,
    FaultyApi,
    FaultyLoadBalancer,
    OperatorCrash,
    ServerTimeout,
    WriteCall,
    WriteFault,
)
from inference_operator.sim.informer import SharedInformer
from inference_operator.sim.wiring import Interposer

from .worlds import SPEC, quiet

Obj = dict[str, Any]
NS = "default"


def config_map(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": {"a": "1"}}


# -- FaultyApi --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "exception", "code"),
    [
        ("conflict", Conflict, 409),
        ("invalid", Invalid, 422),
        ("forbidden", Forbidden, 403),
        ("internal", ApiError, 500),
        ("timeout", ServerTimeout, 504),
    ],
)
def test_an_armed_fault_fails_the_matching_write_with_the_api_error_class(
    error: Any, exception: type[ApiError], code: int
) -> None:
    api = FakeApiServer()
    faulty = FaultyApi(api)
    faulty.arm(WriteFault(error, verb="create"))
    with pytest.raises(exception) as raised:
        faulty.create(config_map("c"))
    assert raised.value.code == code and raised.value.name == "c"
    assert api.objects_total("ConfigMap") == 0  # not applied
    assert faulty.calls[-1].fault == error and not faulty.calls[-1].changed


def test_a_timeout_may_have_been_applied_and_moves_the_fake_clock() -> None:
    clock = FakeClock()
    api = FakeApiServer(clock)
    faulty = FaultyApi(api, clock=clock, timeout_seconds=7.0)
    faulty.arm(WriteFault("timeout", applied=True))
    with pytest.raises(ServerTimeout):
        faulty.create(config_map("c"))
    assert api.objects_total("ConfigMap") == 1 and faulty.calls[-1].changed
    assert clock.now() == 7.0


def test_faults_match_verb_and_kind_and_are_used_up() -> None:
    api = FakeApiServer()
    faulty = FaultyApi(api)
    faulty.arm(WriteFault("forbidden", verb="patch", kind="ConfigMap", times=2))
    faulty.create(config_map("c"))  # another verb: not affected
    for _ in range(2):
        with pytest.raises(Forbidden):
            faulty.patch("ConfigMap", NS, "c", {"data": {"a": "2"}})
    faulty.patch("ConfigMap", NS, "c", {"data": {"a": "2"}})
    assert api.get("ConfigMap", NS, "c")["data"] == {"a": "2"}
    assert not faulty.pending_faults


def test_a_persistent_fault_fails_until_cleared() -> None:
    faulty = FaultyApi(FakeApiServer())
    faulty.arm(WriteFault("forbidden", kind="ConfigMap", times=None))
    for _ in range(5):
        with pytest.raises(Forbidden):
            faulty.create(config_map("c"))
    faulty.clear("ConfigMap")
    faulty.create(config_map("c"))


class ServerWithApply(FakeApiServer):
    """A server that has gained a write method the proxy has never heard of."""

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False) -> Obj:
        return self.create(obj)


def test_reads_and_future_methods_are_delegated_and_future_writes_wrapped() -> None:
    api = ServerWithApply()
    faulty = FaultyApi(api)
    faulty.arm(WriteFault("invalid", verb="apply"))
    with pytest.raises(Invalid):
        faulty.apply(config_map("c"), field_manager="inference-operator", force=True)
    faulty.apply(config_map("c"), field_manager="inference-operator", force=True)
    assert faulty.get("ConfigMap", NS, "c")["data"] == {"a": "1"}  # a read, passed through
    assert faulty.writes_by_verb["create"] == 1  # an attribute, passed through
    assert [(c.verb, c.error) for c in faulty.calls] == [("apply", "Invalid"), ("apply", "")]


def test_the_write_log_says_which_writes_changed_something() -> None:
    seen = []
    faulty = FaultyApi(FakeApiServer(), observe=seen.append, snapshot_kinds=frozenset({"ConfigMap"}))
    faulty.create(config_map("c"))
    faulty.patch("ConfigMap", NS, "c", {"data": {"a": "1"}})  # a no-op
    assert [c.changed for c in faulty.calls] == [True, False] and faulty.writes == 1
    assert seen == faulty.calls
    assert seen[0].before is None and seen[0].after is not None


def test_the_crash_switch_kills_the_operator_right_after_its_nth_write() -> None:
    api = FakeApiServer()
    crash = CrashSwitch()
    faulty = FaultyApi(api, crash=crash)
    crash.arm(2)
    faulty.create(config_map("a"))
    with pytest.raises(OperatorCrash):
        faulty.create(config_map("b"))
    assert api.objects_total("ConfigMap") == 2  # the write went through; the process did not
    assert not issubclass(OperatorCrash, Exception) and not crash.armed
    faulty.create(config_map("c"))


# -- FaultyLoadBalancer -----------------------------------------------------------------------


def test_the_load_balancer_fails_the_next_calls_then_recovers() -> None:
    clock = FakeClock()
    lb = FaultyLoadBalancer(InMemoryLoadBalancer(), clock=clock)
    lb.fail_next(2)
    for _ in range(2):
        with pytest.raises(LoadBalancerError):
            lb.register("default/a", target="a:8000")
    assert lb.register("default/a", target="a:8000").target == "a:8000"
    assert [c.outcome for c in lb.calls] == ["failed", "failed", "ok"] and clock.now() == 0


@pytest.mark.parametrize("applied", [False, True])
def test_a_hanging_call_times_out_after_the_clock_moved_applied_or_not(applied: bool) -> None:
    clock = FakeClock()
    inner = InMemoryLoadBalancer()
    lb = FaultyLoadBalancer(inner, clock=clock, hang_seconds=30)
    lb.hang_next(1, applied=applied)
    with pytest.raises(LoadBalancerError, match="no answer"):
        lb.register("default/a", target="a:8000")
    assert clock.now() == 30 and ("default/a" in inner.registrations) is applied


def test_the_load_balancer_loses_records_and_restarts_empty() -> None:
    inner = InMemoryLoadBalancer()
    lb = FaultyLoadBalancer(inner, clock=FakeClock())
    for key in ("default/a", "default/b", "default/c"):
        lb.register(key, target="x:1")
    assert lb.lose("default/a") is not None and "default/a" not in inner.registrations
    assert lb.restart_empty() == 2 and inner.registrations == {}


class BalancerWithLookup(InMemoryLoadBalancer):
    def lookup(self, key: str) -> Registration | None:
        return self.registrations.get(key)


def test_other_provider_calls_are_forwarded_with_the_same_faults() -> None:
    lb = FaultyLoadBalancer(BalancerWithLookup(), clock=FakeClock())
    lb.register("default/a", target="a:8000")
    lb.fail_next(1)
    with pytest.raises(LoadBalancerError):
        lb.lookup("default/a")
    assert lb.lookup("default/a").target == "a:8000"
    assert lb.registrations.keys() == {"default/a"}  # a plain attribute, passed through


# -- SharedInformer perturbations ---------------------------------------------------------------


def informer_with_log(api: FakeApiServer) -> tuple[SharedInformer, list[tuple[str, str]]]:
    log: list[tuple[str, str]] = []
    informer = SharedInformer(api, "ConfigMap")
    informer.add_event_handler(
        on_add=lambda o: log.append(("add", o["metadata"]["name"])),
        on_update=lambda _o, n: log.append(("update", n["metadata"]["name"])),
        on_delete=lambda o: log.append(("delete", o["metadata"]["name"])),
    )
    informer.start()
    return informer, log


def test_a_paused_informer_delivers_nothing_until_resumed() -> None:
    api = FakeApiServer()
    informer, log = informer_with_log(api)
    informer.pause()
    api.create(config_map("a"))
    assert informer.pump() == 0 and informer.get(NS, "a") is None and informer.pending() == 1
    informer.resume()
    assert informer.pump() == 1 and log == [("add", "a")]


def test_a_dropped_delete_leaves_a_ghost_until_a_relist() -> None:
    api = FakeApiServer()
    informer, log = informer_with_log(api)
    api.create(config_map("a"))
    api.create(config_map("b"))
    informer.pump()
    api.delete("ConfigMap", NS, "a")
    api.patch("ConfigMap", NS, "b", {"data": {"a": "2"}})
    assert informer.perturb(lambda events: []) == 2
    assert informer.pump() == 0 and informer.get(NS, "a") is not None  # the ghost
    log.clear()
    assert informer.relist() == 1
    assert informer.get(NS, "a") is None and informer.get(NS, "b")["data"] == {"a": "2"}
    assert log == [("delete", "a"), ("update", "b")]
    api.create(config_map("c"))
    assert informer.pump() == 1  # the new watch works


def test_reordered_events_leave_an_older_version_cached_until_a_relist() -> None:
    api = FakeApiServer()
    informer, _ = informer_with_log(api)
    api.create(config_map("a"))
    informer.pump()
    for value in ("2", "3"):
        api.patch("ConfigMap", NS, "a", {"data": {"a": value}})
    informer.perturb(lambda events: list(reversed(events)))
    informer.pump()
    assert informer.get(NS, "a")["data"] == {"a": "2"}
    informer.relist()
    assert informer.get(NS, "a")["data"] == {"a": "3"}


# -- Simulation -----------------------------------------------------------------------------------


def test_a_restarted_operator_forgets_everything_and_converges_without_writes() -> None:
    sim = Simulation()
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="m", replicas=1))
    sim.run_until_quiescent()
    old = sim.reconciler
    writes = sim.api.writes
    sim.restart_operator()
    sim.run_until_quiescent()
    assert sim.reconciler is not old and sim.restarts == 1
    assert sim.api.writes == writes  # everything was in place: the new process writes nothing
    assert sim.reconciles_by_key["default/llama"] >= 2


def test_interposed_wrappers_see_only_the_operators_writes_and_survive_restarts() -> None:
    made: dict[str, Any] = {}
    sim = Simulation(
        interpose=Interposer(
            api=lambda s: made.setdefault("api", FaultyApi(s.api, clock=s.clock)),
            load_balancer=lambda s: made.setdefault("lb", FaultyLoadBalancer(s.lb, clock=s.clock)),
        )
    )
    faulty_api: FaultyApi = made["api"]
    faulty_lb: FaultyLoadBalancer = made["lb"]
    sim.restart_operator()
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="m", replicas=1))
    sim.run_until_quiescent()
    kinds = Counter(c.kind for c in faulty_api.calls)
    assert kinds[DEPLOYMENT] >= 1 and kinds[SERVICE] >= 1 and kinds[KIND] >= 1
    assert all(c.kind != "ConfigMap" for c in faulty_api.calls)  # the user's apply went direct
    assert any(c.call == "register" for c in faulty_lb.calls)
    assert "default/llama" in sim.lb.registrations


# -- invariants ------------------------------------------------------------------------------------


def settled_world(*names: str, **spec: Any) -> World:
    world = World()
    for name in names:
        world.apply(name, {**SPEC, **spec})
    return world


def test_a_converged_world_breaks_no_invariant() -> None:
    world = settled_world("llama", "mistral", gpu=1, env=[{"name": "A", "value": "b"}])
    assert check(world.settle()) == {}
    world.delete("mistral")
    assert check(world.settle()) == {}
    assert list(world.sim.lb.registrations) == ["default/llama"]


def test_each_checker_sees_a_planted_violation() -> None:
    world = settled_world("llama")
    world.settle()
    sim = world.sim
    sim.lb.registrations.pop("default/llama")
    sim.lb.registrations["default/gone"] = Registration("lb-9", "http://x", "gone:8000")
    sim.api.patch(
        DEPLOYMENT,
        NS,
        "llama",
        {"spec": {"template": {"spec": {"nodeSelector": {"stale": "yes"}}}}},
    )
    sim.api.delete(SERVICE, NS, "llama")
    status = sim.get(KIND, NS, "llama")["status"]
    sim.api.update_status({**sim.get(KIND, NS, "llama"), "status": {**status, "observedGeneration": 0}})
    broken = check(quiet(world))
    assert {
        "children_match_spec",
        "one_child_each",
        "lb_record_iff_service",
        "no_leaked_records",
        "observed_generation_current",
        "ready_only_when_true",
    } <= broken.keys()
    assert any("nodeSelector" in v for v in broken["children_match_spec"])


def test_owned_differences_ignore_defaults_and_other_actors_fields_but_not_leftovers() -> None:
    world = settled_world("llama", gpu=1)
    world.settle()
    for edit in ("label", "annotation", "container", "owner_reference"):
        world.foreign_edit(DEPLOYMENT, "llama", edit)
    world.foreign_edit(SERVICE, "llama", "annotation")
    live = world.sim.get(DEPLOYMENT, NS, "llama")
    desired = live["spec"]["template"]["spec"]["containers"][0]
    assert desired["terminationMessagePath"]  # a server default, not in the builder's output
    from inference_operator.api.models import InferenceService
    from inference_operator.reconcile.builders import desired_deployment

    isvc = InferenceService.from_object(world.isvc("llama"))
    assert owned_differences(live, desired_deployment(isvc)) == []
    live["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "OLD", "value": "1"}]
    assert owned_differences(live, desired_deployment(isvc)) == [
        'spec.template.spec.containers[0].env: present ([{"name": "OLD", "value": "1"}]) but not desired'
    ]


def test_the_finalizer_monitor_flags_a_finalizer_removed_while_the_balancer_holds_the_record() -> None:
    world = settled_world("llama")
    world.settle()
    obj = world.isvc("llama")
    assert obj is not None
    deleting = {**obj, "metadata": {**obj["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    removed = {**deleting, "metadata": {**deleting["metadata"], "finalizers": []}}
    assert world.api.observe is not None
    world.api.observe(WriteCall("patch", KIND, NS, "llama", {}, before=deleting, after=removed))
    assert check(world.settle()).get("finalizer_after_release") == [
        "the finalizer left default/llama while the balancer still held lb-1 -> llama.default.svc.cluster.local:8000"
    ]


def crash_points(flow: str) -> int:
    """How many writes (API and balancer) the operator makes along ``flow`` when nothing fails."""
    world = World()
    if flow != "create":
        world.apply("llama", {**SPEC, "gpu": 1})
        world.settle()
    before = len(world.api.calls) + sum(1 for c in world.lb.calls if c.call in ("register", "release"))
    act(world, flow)
    world.settle()
    after = len(world.api.calls) + sum(1 for c in world.lb.calls if c.call in ("register", "release"))
    return after - before


def act(world: World, flow: str) -> None:
    if flow == "create":
        world.apply("llama", {**SPEC, "gpu": 1})
    elif flow == "update":
        world.apply("llama", {**SPEC, "image": "vllm/vllm-openai:v0.7.0", "env": [{"name": "A", "value": "b"}]})
    else:
        world.delete("llama")


@pytest.mark.parametrize("flow", ["create", "update", "delete"])
def test_the_operator_killed_right_after_any_of_its_writes_recovers(flow: str) -> None:
    points = crash_points(flow)
    assert points >= 2
    for point in range(1, points + 1):
        world = World()
        if flow != "create":
            world.apply("llama", {**SPEC, "gpu": 1})
            world.settle()
        world.crash_after(point)
        act(world, flow)
        observation = world.settle()
        assert world.sim.restarts == 1, f"crash point {point} of {points} ({flow})"
        assert check(observation, ENFORCED_INVARIANTS) == {}, f"crash point {point} of {points} ({flow})"


def test_every_invariant_has_a_checker_and_every_pending_one_names_its_issue_item() -> None:
    assert CHECKS.keys() == INVARIANTS.keys()
    assert PENDING_INVARIANTS.keys() <= INVARIANTS.keys()
    assert all("issue 8 item" in why for why in PENDING_INVARIANTS.values())
    assert INVARIANTS.keys() - PENDING_INVARIANTS.keys() == ENFORCED_INVARIANTS


# -- the explorer ------------------------------------------------------------------------------------


class TwoAtOnce(Explorer):
    """Breaks as soon as two InferenceServices exist: a known failure to shrink and print.
    Settling only looks (the operator does not run), which keeps the many shrinking runs cheap."""

    def __init__(self, invariants: Any = None) -> None:
        super().__init__(invariants)
        self.world.settle = lambda: quiet(self.world)  # type: ignore[method-assign]

    def _check(self, observation: Observation) -> None:
        if len(self.world.sim.api.list(KIND)) >= 2:
            self.failed = True
            raise violation_type("one_child_each")({"one_child_each": ["two at once"]}, "")


def test_a_finding_prints_as_a_test_that_replays_it() -> None:
    finding, _ = explore(frozenset({"one_child_each"}), seed=3, examples=20, steps=8, machine=TwoAtOnce)
    assert finding is not None and finding.invariant == "one_child_each"
    code = finding.as_test()
    assert code.startswith("def test_one_child_each_regression_seed_3() -> None:\n")
    assert "    state = TwoAtOnce(invariants={'one_child_each'})" in code
    assert code.rstrip().endswith("state.teardown()")
    namespace: dict[str, Any] = {"TwoAtOnce": TwoAtOnce}
    exec(code, namespace)
    with pytest.raises(InvariantViolation):
        namespace["test_one_child_each_regression_seed_3"]()


def test_steps_spanning_lines_keep_their_indentation() -> None:
    finding = Finding(
        "x", 0, ["state = Explorer()", "state.apply(name='a', spec={'image': 'i',\n    'model': 'm'})"], ""
    )
    assert finding.as_test().splitlines() == [
        "def test_x_regression_seed_0() -> None:",
        "    state = Explorer(invariants={'x'})",
        "    state.apply(name='a', spec={'image': 'i',",
        "        'model': 'm'})",
    ]


def test_a_bounded_exploration_keeps_every_enforced_invariant() -> None:
    finding, observed = explore(ENFORCED_INVARIANTS, seed=0, examples=CI_EXAMPLES, steps=CI_STEPS)
    if finding is not None:
        pytest.fail(f"{finding.error}\n\nminimal sequence, ready to paste:\n{finding.as_test()}", pytrace=False)
    assert set(observed) <= INVARIANTS.keys()


# -- regressions: the explorer's findings ---------------------------------------------------------------


def pending(invariant: str) -> pytest.MarkDecorator:
    """Mark the regression test of a bug not fixed yet: expected to fail (strictly: the fix makes
    it pass loudly) while ``invariant`` is in PENDING_INVARIANTS, an ordinary test once enforced.
    (No test needs it today: every bug found so far is fixed.)"""
    return pytest.mark.xfail(
        invariant in PENDING_INVARIANTS,
        reason=PENDING_INVARIANTS.get(invariant, ""),
        raises=InvariantViolation,
        strict=True,
    )


def machine_for(invariant: str) -> Explorer:
    state = Explorer(invariants={invariant})
    return state


def test_removing_env_removes_it_from_the_deployment() -> None:
    state = machine_for("children_match_spec")
    state.create(name="llama", spec={**SPEC, "env": [{"name": "HF_HOME", "value": "/cache"}]})
    state.settle()
    state.apply(name="llama", spec=SPEC)
    state.teardown()


def test_gpu_one_to_zero_removes_the_gpu_limit() -> None:
    state = machine_for("children_match_spec")
    state.create(name="llama", spec={**SPEC, "gpu": 1})
    state.run(steps=1)
    state.apply(name="llama", spec={**SPEC, "gpu": 0})
    state.teardown()


def test_replacing_a_node_selector_key_drops_the_old_key() -> None:
    state = machine_for("children_match_spec")
    state.create(name="llama", spec={**SPEC, "nodeSelector": {"gpu": "h100", "zone": "a"}})
    state.settle()
    state.edit(name="llama", change=("nodeSelector", {"gpu": "a100"}))
    state.teardown()


@pytest.mark.parametrize("name", ["llama-3.1-8b", "7b"])
def test_a_name_that_cannot_become_a_service_is_refused_or_explained(name: str) -> None:
    state = machine_for("stall_explained")
    state.create(name=name, spec=SPEC)
    state.teardown()


def test_a_name_that_cannot_become_a_service_still_gets_its_generation_observed() -> None:
    state = machine_for("observed_generation_current")
    state.create(name="7b", spec=SPEC)
    state.teardown()


def test_a_service_create_forbidden_for_good_is_explained() -> None:
    state = machine_for("stall_explained")
    state.create(name="llama", spec=SPEC)
    state.api_fault(verb="create", kind="Service", error="forbidden", times=None, applied=False)
    state.teardown()


def test_deployment_writes_that_conflict_for_good_are_explained() -> None:
    state = machine_for("stall_explained")
    state.create(name="llama", spec=SPEC)
    state.api_fault(verb=None, kind="Deployment", error="conflict", times=None, applied=False)
    state.teardown()


def test_deployment_writes_that_conflict_for_good_still_get_the_generation_observed() -> None:
    state = machine_for("observed_generation_current")
    state.create(name="llama", spec=SPEC)
    state.api_fault(verb=None, kind="Deployment", error="conflict", times=None, applied=False)
    state.teardown()


def test_an_outage_that_outlasts_the_backoff_is_no_write_loop() -> None:
    state = machine_for("zero_writes_when_converged")
    state.create(name="llama", spec=SPEC)
    for _ in range(5):
        state.lb_outage(n=4, mode="fail")
    state.teardown()


def test_a_balancer_restarted_empty_gets_its_record_back() -> None:
    state = machine_for("lb_record_iff_service")
    state.create(name="llama", spec=SPEC)
    state.settle()
    state.lb_forget(name=None)
    state.teardown()


def test_ready_is_not_claimed_over_a_lost_balancer_record() -> None:
    state = machine_for("ready_only_when_true")
    state.create(name="llama", spec=SPEC)
    state.settle()
    state.lb_forget(name="llama")
    state.teardown()


def test_status_is_not_asked_to_explain_while_status_writes_themselves_are_refused() -> None:
    state = machine_for("stall_explained")
    state.create(name="llama", spec=SPEC)
    for _ in range(16):
        state.api_fault(verb=None, kind=None, error="conflict", times=None, applied=False)
    state.teardown()  # 64 refused writes outlast the settle: the check waits for the next one


def test_a_balancer_outage_over_a_stuck_rollout_is_explained_by_the_balancer_condition() -> None:
    state = machine_for("stall_explained")
    state.create(name="llama", spec={**SPEC, "gpu": 12})  # fits no node: the rollout is stuck
    for _ in range(6):
        state.lb_outage(n=4, mode="fail")
    state.teardown()


def test_a_conflict_after_re_registering_a_lost_record_does_not_leave_the_old_id_in_status() -> None:
    state = machine_for("zero_writes_when_converged")
    state.create(name="llama", spec=SPEC)
    state.settle()
    state.lb_forget(name=None)
    state.api_fault(verb="update_status", kind="InferenceService", error="conflict", times=1, applied=False)
    state.teardown()


def test_ready_never_names_a_registration_the_balancer_no_longer_has() -> None:
    state = machine_for("ready_only_when_true")
    state.create(name="llama", spec=SPEC)
    state.settle()
    state.lb_forget(name=None)
    state.api_fault(verb=None, kind=None, error="conflict", times=4, applied=False)
    state.teardown()


def test_disabling_before_the_first_status_write_releases_the_record() -> None:
    state = machine_for("lb_record_iff_service")
    state.create(name="llama", spec=SPEC)
    state.run(steps=1)
    state.load_balancer(name="llama", enabled=False)
    state.teardown()


def test_an_injected_sidecar_is_left_alone() -> None:
    state = machine_for("foreign_fields_kept")
    state.create(name="llama", spec=SPEC)
    state.settle()
    state.foreign_edit(kind="Deployment", name="llama", edit="container")
    state.teardown()


def test_an_extra_owner_reference_costs_no_write_per_pass() -> None:
    state = machine_for("zero_writes_when_converged")
    state.create(name="llama", spec=SPEC)
    state.settle()
    state.foreign_edit(kind="Deployment", name="llama", edit="owner_reference")
    state.teardown()


def test_a_stalled_object_catches_up_on_a_recovered_balancer_in_one_pass() -> None:
    state = machine_for("zero_writes_when_converged")
    state.create(name="7b", spec=SPEC)
    state.load_balancer(name="7b", enabled=False)
    state.settle()
    state.lb_outage(n=2, mode="fail")
    state.teardown()


def test_a_balancer_outage_posts_one_event_not_one_per_retry() -> None:
    state = machine_for("events_aggregated")
    state.create(name="llama", spec=SPEC)
    state.lb_outage(n=3, mode="fail")
    state.teardown()
