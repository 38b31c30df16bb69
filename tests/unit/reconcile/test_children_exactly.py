"""Children are exactly the spec, for every field the operator sets: added, changed, removed.

Covers (on the simulator, whose API server implements server-side apply): removing gpu drops
the nvidia.com/gpu limit; removing nodeSelector, tolerations or env removes them; changing a
nodeSelector key leaves no old key; sharedMemory limits /dev/shm, stored canonical (2048Mi as
2Gi) at zero writes, and unsetting it removes the limit; status is Ready only once the child matches. Fields other
actors own are left alone with zero writes: an annotation, a sidecar injected into the pod
template (once the rollout it causes is over), an extra owner reference on the Service. A
field the operator owns that someone else changes is put back with one apply, and there is no
write loop. A child an operator version
before server-side apply created is adopted: the old ownership entry goes, removals work.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import DEPLOYMENT, FIELD_MANAGER, KIND, SERVICE, Phase
from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.reconcile.builders import desired_deployment
from inference_operator.sim import Simulation
from inference_operator.sim.cluster.nodes import NodeShape

NS, NAME = "default", "llama"
Obj = dict[str, Any]
NODES = (  # somewhere for the pods of every nodeSelector these tests set
    NodeShape("a100-node", labels={"gpu": "a100", "zone": "a"}),
    NodeShape("h100-node", labels={"accelerator": "h100"}),
)


def llama(**spec: Any) -> Obj:
    return make_inference_service(NAME, **{"image": "vllm:0.6.3", "model": "m", **spec})


def converged(**spec: Any) -> Simulation:
    sim = Simulation(node_layout=NODES)
    sim.apply(llama(**spec))
    sim.run_until_quiescent()
    return sim


def isvc(sim: Simulation) -> Obj:
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None
    return obj


def deployment(sim: Simulation) -> Obj:
    dep = sim.get(DEPLOYMENT, NS, NAME)
    assert dep is not None
    return dep


def pod_spec(sim: Simulation) -> Obj:
    return dict(deployment(sim)["spec"]["template"]["spec"])


def server(sim: Simulation) -> Obj:
    return dict(next(c for c in pod_spec(sim)["containers"] if c["name"] == "server"))


def change(sim: Simulation, **spec: Any) -> None:
    sim.apply(llama(**spec))
    sim.run_until_quiescent()
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None and obj["status"]["phase"] == Phase.READY
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]


def writes_after_quiet_passes(sim: Simulation) -> int:
    before = sim.backend.writes
    sim.resync()
    sim.run_until_quiescent()
    return sim.backend.writes - before


def test_removing_gpu_drops_the_gpu_limit() -> None:
    sim = converged(gpu=1)
    assert server(sim)["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    change(sim, gpu=0)
    assert "resources" not in server(sim) or "nvidia.com/gpu" not in server(sim)["resources"].get("limits", {})


def test_removing_node_selector_tolerations_and_env_removes_them() -> None:
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    sim = converged(nodeSelector={"gpu": "a100"}, tolerations=tolerations, env=[{"name": "HF_HOME", "value": "/m"}])
    assert pod_spec(sim)["nodeSelector"] == {"gpu": "a100"} and pod_spec(sim)["tolerations"] == tolerations
    assert server(sim)["env"] == [{"name": "HF_HOME", "value": "/m"}]
    change(sim)
    assert "nodeSelector" not in pod_spec(sim) and "tolerations" not in pod_spec(sim)
    assert "env" not in server(sim)


def test_shared_memory_limits_dev_shm_as_the_server_stores_it_with_zero_writes_and_unset_removes_it() -> None:
    sim = converged(sharedMemory="2048Mi")  # the API server stores 2Gi: no difference, no write loop
    assert pod_spec(sim)["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}]
    assert writes_after_quiet_passes(sim) == 0
    change(sim)
    assert pod_spec(sim)["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]


def test_changing_a_node_selector_key_leaves_no_old_key() -> None:
    sim = converged(nodeSelector={"gpu": "a100"})
    change(sim, nodeSelector={"accelerator": "h100"})
    assert pod_spec(sim)["nodeSelector"] == {"accelerator": "h100"}


def test_a_foreign_annotation_is_left_alone_with_zero_writes() -> None:
    sim = converged()
    sim.api.patch(DEPLOYMENT, NS, NAME, {"metadata": {"annotations": {"team": "ml"}}}, field_manager="kubectl-annotate")
    assert writes_after_quiet_passes(sim) == 0
    assert deployment(sim)["metadata"]["annotations"]["team"] == "ml"


def test_a_sidecar_injected_into_the_template_is_left_alone_with_zero_writes() -> None:
    sim = converged()
    dep = deployment(sim)
    containers = [*dep["spec"]["template"]["spec"]["containers"], {"name": "proxy", "image": "envoy:1.30"}]
    dep["spec"]["template"]["spec"]["containers"] = containers
    sim.api.update(dep, field_manager="sidecar-injector")
    generation = deployment(sim)["metadata"]["generation"]
    sim.run_until_quiescent()  # the new template rolls out; status says so, then Ready again
    assert isvc(sim)["status"]["phase"] == Phase.READY
    assert deployment(sim)["metadata"]["generation"] == generation, "the operator did not touch the template"
    assert writes_after_quiet_passes(sim) == 0
    assert [c["name"] for c in pod_spec(sim)["containers"]] == ["server", "proxy"]
    change(sim, image="vllm:0.7.0")  # our own change still lands, and keeps theirs
    assert server(sim)["image"] == "vllm:0.7.0"
    assert [c["name"] for c in pod_spec(sim)["containers"]] == ["server", "proxy"]


def test_an_extra_owner_reference_on_the_service_is_left_alone_with_zero_writes() -> None:
    sim = converged()
    bundle = sim.api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bundle", "namespace": NS}})
    svc = sim.get(SERVICE, NS, NAME)
    assert svc is not None
    extra = {"apiVersion": "v1", "kind": "ConfigMap", "name": "bundle", "uid": bundle["metadata"]["uid"]}
    svc["metadata"]["ownerReferences"] = [*svc["metadata"]["ownerReferences"], extra]
    sim.api.update(svc, field_manager="bundler")
    assert writes_after_quiet_passes(sim) == 0
    svc = sim.get(SERVICE, NS, NAME)
    assert svc is not None and len(svc["metadata"]["ownerReferences"]) == 2


def test_a_field_the_operator_owns_is_put_back_once_without_a_loop() -> None:
    sim = converged()
    sim.api.patch(DEPLOYMENT, NS, NAME, {"spec": {"replicas": 9}}, field_manager="kubectl-scale")
    sim.run_until_quiescent()
    assert deployment(sim)["spec"]["replicas"] == 1, "put back by one apply"
    assert writes_after_quiet_passes(sim) == 0
    owners = [e["manager"] for e in deployment(sim)["metadata"]["managedFields"] if e["operation"] == "Apply"]
    assert owners == [FIELD_MANAGER]


def test_a_child_made_before_server_side_apply_is_adopted_and_then_loses_removed_fields() -> None:
    sim = Simulation()
    obj = sim.apply(llama(gpu=1))
    # What an older operator did: a POST of the whole Deployment, owned through an Update.
    sim.api.create(desired_deployment(InferenceService.from_object(obj)), field_manager=FIELD_MANAGER)
    sim.run_until_quiescent()
    entries = [(e["manager"], e["operation"]) for e in deployment(sim)["metadata"]["managedFields"]]
    assert (FIELD_MANAGER, "Update") not in entries and (FIELD_MANAGER, "Apply") in entries
    change(sim, gpu=0, port=9000)
    assert "nvidia.com/gpu" not in (server(sim).get("resources") or {}).get("limits", {})
    assert [p["containerPort"] for p in server(sim)["ports"]] == [9000], "the old port went with the upgrade"
    service = sim.get(SERVICE, NS, NAME)
    assert service is not None and [p["port"] for p in service["spec"]["ports"]] == [9000]


def test_a_child_whose_owner_label_was_taken_off_gets_it_back() -> None:
    sim = converged()
    label = "serving.inference-operator.dev/inferenceservice"
    sim.api.patch(DEPLOYMENT, NS, NAME, {"metadata": {"labels": {label: None}}}, field_manager="kubectl-label")
    sim.run_until_quiescent()
    assert deployment(sim)["metadata"]["labels"][label] == NAME
    assert writes_after_quiet_passes(sim) == 0


def test_a_value_removed_inside_an_atomic_field_goes_too() -> None:
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    sim = converged(nodeSelector={"gpu": "a100", "zone": "a"}, tolerations=[toleration])
    change(sim, nodeSelector={"gpu": "a100"}, tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
    assert pod_spec(sim)["nodeSelector"] == {"gpu": "a100"}
    assert pod_spec(sim)["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}]
