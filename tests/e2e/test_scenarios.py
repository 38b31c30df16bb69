"""The scenario suite on both backends: each scenario in tests/shared/scenarios (catalogue.py) runs on
the simulator and on the real control plane, and the two observations must be equal.

Covers: the demo's four (create, scale + upgrade, delete, drift) and the unhappy path (a foreign
Service in the way, a quota forbidding Services, a load balancer that forgot its record, a name
refused at admission, a removed spec field, registration switched off and on, a Deployment
deleted by hand, a Service port edited by hand into a clash, the owner label taken off a child,
a balancer outage after a lost record, a balancer refusing releases during a deletion, more GPUs
than a node has) and the GPU pools (a fleet that fits, a full pool, a template change on a full
pool with the default strategy, with Replace and with Auto, Auto switching to replacing when
another workload takes the nodes it counted (the rollout paused meanwhile), a scale-up past
capacity, a pod that fits one node of three, a freed node going to the pod that has waited
longest (not the first by name), a node deleted under a full pool: kube-controller-manager's
PodGC and the simulator's both collect its pod after 40 s and the replacement waits), each on kwok
Nodes of its own with the simulator's node shapes, beside the cluster's other nodes, which the
simulator's layout mirrors. Each run also checks its own expected outcome, so agreeing on a
wrong outcome fails too. What is compared: per step, the Ready transitions, phase and
readyReplicas, the children's relevant fields, the load balancer calls and record, and the
Events' type/reason; for the GPU pools also the ReplicaSets' replica counts in sequence and, at
the end of each step, the pods bound per node and revision and the Pending ones with
kube-scheduler's message, byte for byte.
How the two are normalised where they legitimately differ in timing (see tests/shared/scenarios/observe.py):

- the Ready reasons that only say "not there yet" collapse into one ``False/Progressing`` and
  repeats collapse: which one a status write catches depends on how fast pods become ready;
- an object's very first status may or may not be Progressing (the operator holds it until the
  Deployment controller has observed the Deployment; kwok's pods are often ready by then, the
  simulator's never): that one leading ``False/Progressing`` is dropped. Every later one follows
  a write of the operator's to the Deployment, which the controller cannot have observed at the
  status write that follows it, so it is always there and kept;
- Events are compared as the distinct type/reason pairs posted or repeated in a step: how
  many retries of a stalled object fit into a wait (and so an Event's count) is timing;
- uids, namespaces, resourceVersions and timestamps are never compared; an owner reference
  is compared as "the InferenceService's" or "another's";
- a step ends as soon as its condition holds, on both (the simulator lets simulated time pass
  only until then; the cluster world then also waits for the operator to be idle), and each
  condition pins down the state it waits for (a stall *and* the pods running despite it), so
  nothing a step leaves open can differ by timing. Scenarios avoid states that hinge on a race
  (the balancer fails registrations after the object is Ready, not while its pods start);
- a GPU pool's pods that are terminating are left out (kwok deletes them at once; the
  simulator's kubelets are told to stop them at once too, so the sequences match), and the
  ReplicaSet sequence holds no timing: each write of the Deployment controller changes one
  ReplicaSet by what it observed;
- ``kubectl rollout pause`` of a Ready object is waited out and its Ready transitions and Events
  are not compared (``World.pause_rollout``): the pause bumps the Deployment's generation, and
  kube-controller-manager observes it one sync late (its first status write after the Paused
  condition conflicts), so the operator usually shows a ``DeploymentNotObserved`` bounce there,
  never on the simulator, whose controllers act first at equal times;
- the simulator resyncs every 4 s of simulated time, as the session's operator does; a
  ResourceQuota, which the simulator has no admission for, is modelled by refusing the
  operator's Service creates as kube-apiserver's quota admission words it.

A scenario in ``SIMULATOR_GAPS`` is a known simulator gap: its real run must still pass, its
simulator run is xfail with the reason, and it fails once the simulator agrees (remove the entry).
A scenario in ``BACKEND_DIFFERENCES`` meets its expectations on both but takes another path on
one (none is listed now): the comparison is xfail with the reason and the diff, and fails once the
two agree. A scenario in ``ANY_PLACEMENT`` runs on identical nodes where kube-scheduler and the
ReplicaSet's scale-down break ties at random: its bound pods are compared as counts per node,
without the nodes' names.
"""

from __future__ import annotations

import difflib

import pytest
import yaml

from ..shared.scenarios.catalogue import (
    ANY_PLACEMENT,
    BACKEND_DIFFERENCES,
    NEEDS_NODES,
    SCENARIOS,
    SIMULATOR_GAPS,
    placement_blind,
)
from ..shared.scenarios.simworld import SimWorld
from .clusterworld import ClusterWorld
from .conftest import Cluster


def _diff(sim: object, real: object) -> str:
    left = yaml.safe_dump(sim, sort_keys=True, width=200).splitlines()
    right = yaml.safe_dump(real, sort_keys=True, width=200).splitlines()
    return "\n".join(difflib.unified_diff(left, right, "simulator", "cluster", lineterm="", n=8))


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario_has_the_same_outcome_on_the_simulator_and_the_real_control_plane(
    scenario: str, cluster: Cluster, cluster_world: ClusterWorld
) -> None:
    run, gap = SCENARIOS[scenario], SIMULATOR_GAPS.get(scenario)
    try:
        run(cluster_world)
    except AssertionError as err:
        raise AssertionError(f"on the real control plane: {err}\n{_shown(cluster_world)}") from err
    # A GPU pool joins the simulated cluster as it joined the real one: beside its other nodes.
    layout = cluster_world.other_nodes if scenario in NEEDS_NODES else None
    sim_world = SimWorld(nodes=cluster.nodes or 2, gpus_per_node=cluster.gpus_per_node, layout=layout)
    try:
        run(sim_world)
    except AssertionError as err:
        if gap:
            pytest.xfail(f"simulator gap: {gap} ({err})")
        raise AssertionError(f"on the simulator: {err}\n{_shown(sim_world)}") from err
    sim, real = sim_world.observation.as_data(), cluster_world.observation.as_data()
    if scenario in ANY_PLACEMENT:
        sim, real = placement_blind(sim), placement_blind(real)
    if gap and sim != real:
        pytest.xfail(f"simulator gap: {gap}")
    known = BACKEND_DIFFERENCES.get(scenario)
    if known and sim != real:
        pytest.xfail(f"known difference: {known}\n{_diff(sim, real)}")
    assert sim == real, f"the simulator and the real control plane disagree on {scenario}:\n{_diff(sim, real)}"
    assert not gap, f"{scenario} agrees now: take it out of SIMULATOR_GAPS"
    assert not known, f"{scenario} agrees now: take it out of BACKEND_DIFFERENCES"


def test_every_simulator_gap_and_known_difference_names_a_scenario() -> None:
    assert set(SIMULATOR_GAPS) <= set(SCENARIOS)
    assert set(BACKEND_DIFFERENCES) <= set(SCENARIOS)
    assert set(ANY_PLACEMENT) <= set(SCENARIOS)


def _shown(world: ClusterWorld | SimWorld) -> str:
    return "observed so far:\n" + yaml.safe_dump(world.observation.as_data(), sort_keys=True, width=200)
