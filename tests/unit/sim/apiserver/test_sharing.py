"""Equal parts of stored objects are stored once (:mod:`.sharing`): pods with the same containers
and labels share them in the store; a write to one leaves the other as it was; values equal in
Python but not in JSON (``1``, ``1.0``, ``True``) are never shared; the table forgets its oldest."""

from __future__ import annotations

from typing import Any

from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.apiserver.sharing import SharedParts

Obj = dict[str, Any]


def pod(name: str, *, labels: Obj | None = None, port: Any = 8000) -> Obj:
    container = {"name": "server", "image": "vllm", "ports": [{"containerPort": port}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {"app": "llama"}},
        "spec": {"containers": [container]},
    }


def stored(api: FakeApiServer, name: str) -> Obj:
    found = api._lookup(("Pod", "default", name))
    assert found is not None
    return found


def test_pods_alike_share_their_containers_and_labels_and_read_as_their_own() -> None:
    api = FakeApiServer()
    api.create(pod("a"))
    api.create(pod("b"))
    a, b = stored(api, "a"), stored(api, "b")
    assert a["spec"]["containers"] is b["spec"]["containers"]
    assert a["metadata"]["labels"] is b["metadata"]["labels"]
    read = api.get("Pod", "default", "a")
    read["spec"]["containers"][0]["image"] = "changed by the reader"
    assert api.get("Pod", "default", "b")["spec"]["containers"][0]["image"] == "vllm"


def test_a_write_to_one_pod_leaves_the_other_as_it_was() -> None:
    api = FakeApiServer()
    api.create(pod("a"))
    api.create(pod("b"))
    api.patch("Pod", "default", "a", {"metadata": {"labels": {"app": "llama", "canary": "yes"}}})
    assert api.get("Pod", "default", "a")["metadata"]["labels"] == {"app": "llama", "canary": "yes"}
    assert api.get("Pod", "default", "b")["metadata"]["labels"] == {"app": "llama"}
    assert stored(api, "a")["spec"]["containers"] is stored(api, "b")["spec"]["containers"]


def test_values_equal_in_python_but_not_in_json_are_not_shared() -> None:
    parts = SharedParts()
    one, one_float, true = [{"x": 1}], [{"x": 1.0}], [{"x": True}]
    for value in (one, one_float, true):
        obj = {"spec": {"containers": value}}
        parts.share("Pod", obj, None)
        assert obj["spec"]["containers"] is value
    again = {"spec": {"containers": [{"x": 1}]}}
    parts.share("Pod", again, None)
    assert again["spec"]["containers"] is one


def test_the_table_forgets_its_oldest_value() -> None:
    parts = SharedParts(remembered=2)
    first, second, third = ([n] for n in range(3))
    for value in (first, second, third):
        parts.share("Pod", {"spec": {"volumes": value}}, None)
    later_first, later_third = {"spec": {"volumes": [0]}}, {"spec": {"volumes": [2]}}
    parts.share("Pod", later_first, None)
    parts.share("Pod", later_third, None)
    assert later_first["spec"]["volumes"] is not first
    assert later_third["spec"]["volumes"] is third


def test_a_deployments_template_and_pods_share_one_copy_of_the_containers() -> None:
    from inference_operator.api.samples import make_inference_service
    from inference_operator.sim import Simulation

    sim = Simulation()
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="Llama-3", replicas=2))
    sim.run_until_quiescent()
    objects = sim.api._objects
    (deployment,) = objects["Deployment"]["default"].values()
    (replicaset,) = objects["ReplicaSet"]["default"].values()
    pods = list(objects["Pod"]["default"].values())
    containers = {id(deployment["spec"]["template"]["spec"]["containers"])}
    containers |= {id(replicaset["spec"]["template"]["spec"]["containers"])}
    containers |= {id(p["spec"]["containers"]) for p in pods}
    assert len(pods) == 2 and len(containers) == 1
