"""The fake refuses a pod template the way kube-apiserver does, and the operator says so.

Covers, on the FakeApiServer directly: each rule family (resources, tolerations, node selector,
env sources, ports, probes, container names) refuses with the real field path and words, several
problems are listed as the real server lists them, and a malformed quantity is a 400 before any
validation. End to end on the simulator: what a real cluster would refuse in the Deployment the
CRD refuses first (cpu, memory or ephemeral-storage above its limit, a toleration with Equal and
no key, tolerationSeconds on NoSchedule, a node-selector value that is no label value, a
ConfigMap key that is no key), naming the field; a refused child itself ends ChildRejected
(tests/unit/reconcile/test_stalls.py). The differential conformance
suite (tests/shared/conformance/checks/podtemplate.py) compares all of it with a real server.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import Invalid
from inference_operator.sim import Simulation
from inference_operator.sim.apiserver.managedfields import BadRequest
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.apiserver.target import Target
from inference_operator.sim.clock import FakeClock

Obj = dict[str, Any]
POD = "spec.template.spec"
C0 = f"{POD}.containers[0]"


def deployment(*, pod: Obj | None = None, **container: Any) -> Obj:
    spec: Obj = {"containers": [{"name": "server", "image": "registry.local/server:1", **container}], **(pod or {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": spec},
        },
    }


def refusal(manifest: Obj) -> str:
    with pytest.raises(Invalid) as caught:
        FakeApiServer(FakeClock()).create(manifest)
    return str(caught.value)


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            deployment(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}),
            f'{C0}.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1',
        ),
        (
            deployment(resources={"limits": {"nvidia.com/gpu": "0.5"}}),
            f'{C0}.resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer',
        ),
        (
            deployment(resources={"requests": {"nvidia.com/gpu": 1}}),
            f"{C0}.resources.limits: Required value: Limit must be set for non overcommitable resources",
        ),
        (
            deployment(pod={"tolerations": [{"operator": "Equal", "value": "v"}]}),
            f'{POD}.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty',
        ),
        (
            deployment(
                pod={
                    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]
                }
            ),
            f"{POD}.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute'",
        ),
        (
            deployment(pod={"nodeSelector": {"pool": "has space"}}),
            f'{POD}.nodeSelector: Invalid value: "has space": a valid label must be an empty string',
        ),
        (
            deployment(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "bad key!"}}}]),
            f'{C0}.env[0].valueFrom.configMapKeyRef.key: Invalid value: "bad key!": a valid config key',
        ),
        (
            deployment(env=[{"name": "A", "valueFrom": {}}]),
            f'{C0}.env[0].valueFrom: Invalid value: "": must specify one of: `fieldRef`',
        ),
        (
            deployment(ports=[{"name": "HTTP", "containerPort": 70000}]),
            f'[{C0}.ports[0].name: Invalid value: "HTTP": must contain only alpha-numeric characters',
        ),
        (
            deployment(readinessProbe={"httpGet": {"port": 8000}, "tcpSocket": {"port": 8000}}),
            f"{C0}.readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
        ),
        (
            deployment(livenessProbe={"tcpSocket": {"port": 8000}, "successThreshold": 2}),
            f"{C0}.livenessProbe.successThreshold: Invalid value: 2: must be 1",
        ),
        (deployment(name="Server"), f'{C0}.name: Invalid value: "Server": a lowercase RFC 1123 label'),
    ],
    ids=lambda v: "" if isinstance(v, dict) else v.split(":")[0],
)
def test_the_fake_refuses_a_pod_template_with_the_real_path_and_words(manifest: Obj, expected: str) -> None:
    message = refusal(manifest)
    assert message.startswith('Deployment.apps "d" is invalid: ') and expected in message


def test_several_problems_are_listed_in_brackets_as_the_real_server_does() -> None:
    message = refusal(deployment(ports=[{"name": "HTTP", "containerPort": 70000}]))
    assert message.count(f"{C0}.ports[0]") == 3 and message.endswith("]")
    assert "containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive" in message


def test_a_malformed_quantity_is_refused_before_validation_with_400() -> None:
    url = Target("apps/v1", "Deployment", "default", "")
    with pytest.raises(BadRequest, match="quantities must match the regular expression"):
        FakeApiServer(FakeClock()).create(deployment(resources={"limits": {"cpu": "1x"}}), target=url)


def test_a_valid_template_is_stored_with_canonical_quantities_and_no_requests_copied_from_limits() -> None:
    stored = FakeApiServer(FakeClock()).create(deployment(resources={"limits": {"cpu": 0.5, "nvidia.com/gpu": 1}}))
    resources = stored["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources == {"limits": {"cpu": "500m", "nvidia.com/gpu": "1"}}  # only a Pod gets requests from limits


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}, "spec.resources"),
        ({"resources": {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}}, "spec.resources"),
        ({"tolerations": [{"operator": "Equal", "value": "v"}]}, "spec.tolerations[0].operator"),
        (
            {"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]},
            "spec.tolerations[0].tolerationSeconds",
        ),
        (
            {"resources": {"requests": {"ephemeral-storage": "2Gi"}, "limits": {"ephemeral-storage": "1Gi"}}},
            "spec.resources",
        ),
        ({"nodeSelector": {"pool": "has space"}}, "spec.nodeSelector.pool"),
        (
            {"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "bad key!"}}}]},
            "spec.env[0].valueFrom.configMapKeyRef.key",
        ),
    ],
    ids=[
        "cpu-request-above-limit",
        "memory-request-above-limit",
        "equal-without-key",
        "seconds-on-noschedule",
        "storage-request-above-limit",
        "selector-value",
        "configmap-key",
    ],
)
def test_what_a_cluster_would_refuse_in_the_pod_template_is_refused_at_admission_first(spec: Obj, field: str) -> None:
    with pytest.raises(Invalid) as refused:
        Simulation().apply(make_inference_service("x", image="vllm/vllm-openai:v0.7.0", model="m", **spec))
    assert f"{field}: Invalid value" in str(refused.value)


def test_a_replicaset_created_as_it_is_has_its_template_checked_as_a_deployments() -> None:
    replicaset = {**deployment(), "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": "default"}}
    del replicaset["spec"]["template"]["spec"]["containers"][0]["name"]
    assert refusal(replicaset) == (
        'ReplicaSet.apps "r" is invalid: spec.template.spec.containers[0].name: Required value'
    )
    valid = {**deployment(), "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": "default"}}
    del valid["spec"]["replicas"]
    stored = FakeApiServer(FakeClock()).create(valid)
    assert stored["spec"]["replicas"] == 1 and stored["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
