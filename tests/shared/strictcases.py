"""The strict-types table: specs with a value of each JSON type in each typed field, and whether
the CRD's schema (and so the parser) accepts them. Shared by the unit test (fake API server and
parser) and the e2e test (the real kube-apiserver)."""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import API_VERSION, KIND
from inference_operator.api.crd import crd
from inference_operator.api.models import SpecError, parse_spec
from inference_operator.core.errors import ApiError
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock

BASE = {"image": "vllm:0.7.0", "model": "Llama-3"}
CRD = crd()


def server() -> FakeApiServer:
    api = FakeApiServer(FakeClock())
    api.create(CRD)
    return api


def manifest(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "a", "namespace": "default"}, "spec": spec}


def server_refusal(spec: dict[str, Any], *, apply: bool = True) -> str | None:
    """The fake API server's answer to writing ``spec`` (None: accepted)."""
    api = server()
    try:
        if apply:
            api.apply(manifest(spec), field_manager="kubectl")
        else:
            api.create(manifest(spec))
    except ApiError as err:
        return str(err)
    return None


def parser_refusal(spec: dict[str, Any]) -> str | None:
    try:
        parse_spec(spec)
    except SpecError as err:
        return err.message
    return None


def toleration(**fields: Any) -> dict[str, Any]:
    return {"tolerations": [{"key": "nvidia.com/gpu", **fields}]}


def secret_ref(**fields: Any) -> dict[str, Any]:
    return {"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", **fields}}}]}


CASES: list[tuple[str, dict[str, Any], bool]] = [  # (id, the fields added to BASE, accepted)
    ("replicas int", {"replicas": 3}, True),
    ("replicas string", {"replicas": "3"}, False),
    ("replicas whole float", {"replicas": 3.0}, True),
    ("replicas fraction", {"replicas": 3.5}, False),
    ("replicas bool", {"replicas": True}, False),
    ("replicas null is the default", {"replicas": None}, True),
    ("replicas list", {"replicas": [3]}, False),
    ("replicas object", {"replicas": {"n": 3}}, False),
    ("replicas above bound", {"replicas": 10**30}, False),
    ("port string", {"port": "8000"}, False),
    ("port whole float", {"port": 8000.0}, True),
    ("gpu bool", {"gpu": False}, False),
    ("gpu string", {"gpu": "1"}, False),
    ("progressDeadlineSeconds string", {"progressDeadlineSeconds": "600"}, False),
    ("runAsUser string", {"runAsUser": "1000"}, False),
    ("runAsUser whole float", {"runAsUser": 1000.0}, True),
    ("image int", {"image": 3}, False),
    ("image null is missing", {"image": None}, False),
    ("model bool", {"model": True}, False),
    ("healthPath int", {"healthPath": 1}, False),
    ("healthPath null is the default", {"healthPath": None}, True),
    ("podSecurity enum", {"podSecurity": "Restricted"}, True),
    ("podSecurity wrong case", {"podSecurity": "restricted"}, False),
    ("podSecurity int", {"podSecurity": 1}, False),
    ("loadBalancer.enabled bool", {"loadBalancer": {"enabled": False}}, True),
    ("loadBalancer.enabled yes string", {"loadBalancer": {"enabled": "yes"}}, False),
    ("loadBalancer.enabled true string", {"loadBalancer": {"enabled": "true"}}, False),
    ("loadBalancer.enabled one", {"loadBalancer": {"enabled": 1}}, False),
    ("loadBalancer.enabled null is the default", {"loadBalancer": {"enabled": None}}, True),
    ("loadBalancer null is the default", {"loadBalancer": None}, True),
    ("loadBalancer string", {"loadBalancer": "on"}, False),
    ("args strings", {"args": ["--max-model-len", "8192"]}, True),
    ("args an int item", {"args": ["--max-model-len", 8192]}, False),
    ("args a null item", {"args": [None]}, False),
    ("args one string", {"args": "--enforce-eager"}, False),
    ("env value int", {"env": [{"name": "A", "value": 1}]}, False),
    ("env value bool", {"env": [{"name": "A", "value": True}]}, False),
    ("env name int", {"env": [{"name": 1, "value": "x"}]}, False),
    ("env as a map", {"env": {"A": "1"}}, False),
    ("env item a string", {"env": ["A=1"]}, False),
    ("secretKeyRef.optional bool", secret_ref(optional=True), True),
    ("secretKeyRef.optional string", secret_ref(optional="true"), False),
    ("secretKeyRef.key int", secret_ref(key=1), False),
    ("nodeSelector value int", {"nodeSelector": {"gpu": 1}}, False),
    ("nodeSelector value bool", {"nodeSelector": {"gpu": True}}, False),
    ("nodeSelector value null is unset", {"nodeSelector": {"gpu": None}}, True),
    ("nodeSelector a list", {"nodeSelector": ["gpu"]}, False),
    ("tolerationSeconds int", toleration(effect="NoExecute", tolerationSeconds=30), True),
    ("tolerationSeconds string", toleration(effect="NoExecute", tolerationSeconds="30"), False),
    ("tolerationSeconds fraction", toleration(effect="NoExecute", tolerationSeconds=1.5), False),
    ("toleration operator unknown", toleration(operator="In"), False),
    ("toleration operator int", toleration(operator=1), False),
    ("toleration effect bool", toleration(effect=False), False),
    ("toleration value int", toleration(operator="Equal", value=1), False),
    ("quantity int", {"resources": {"requests": {"cpu": 4}}}, True),
    ("quantity string", {"resources": {"requests": {"memory": "24Gi"}}}, True),
    ("quantity whole float", {"resources": {"requests": {"cpu": 2.0}}}, True),
    ("quantity fraction", {"resources": {"requests": {"cpu": 0.5}}}, False),
    ("quantity bool", {"resources": {"limits": {"cpu": True}}}, False),
    ("quantity list", {"resources": {"limits": {"cpu": [1]}}}, False),
    ("quantity unknown resource", {"resources": {"limits": {"nvidia.com/gpu": 1}}}, False),
    ("resources a list", {"resources": [{"cpu": 1}]}, False),
    ("requests null is unset", {"resources": {"requests": None}}, True),
    ("unknown field", {"replica": 3}, False),
]
