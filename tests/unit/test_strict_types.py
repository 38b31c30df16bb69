"""Strict types at the boundary: the parser refuses what the CRD's schema refuses, in its words.

Covers: for a table of specs (a value of each JSON type in each field the parser types, nulls,
integer-valued floats, enums, unknown fields), the fake API server's CRD validation (what
``kubectl apply --server-side`` meets) and ``parse_spec`` both accept or both refuse; nothing
is coerced (``"3"`` is no integer, ``"yes"`` no boolean, ``1`` no boolean, ``true`` no
integer); ``3.0`` is the integer 3, as JSON has it; a null is an unset field (its default);
a type error reads as the API server's (``spec.replicas: Invalid value: "string":
spec.replicas in body must be of type integer: "string"``), the same line the fake's create
answers with; enums and bounds are worded as the server words them.
"""

from __future__ import annotations

from typing import Any

import pytest

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


@pytest.mark.parametrize(("fields", "accepted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_parser_and_the_crd_schema_accept_and_refuse_the_same_specs(fields: dict[str, Any], accepted: bool) -> None:
    spec = {**BASE, **fields}
    by_server, by_parser = server_refusal(spec), parser_refusal(spec)
    assert (by_server is None, by_parser is None) == (accepted, accepted), (by_server, by_parser)


@pytest.mark.parametrize("cpu", [-1, "-1", "-500m"])
def test_a_negative_quantity_is_refused_by_both(cpu: int | str) -> None:
    spec = {**BASE, "resources": {"requests": {"cpu": cpu}}}
    assert server_refusal(spec) is not None and parser_refusal(spec) is not None


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        ({"replicas": "3"}, 'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer'),
        ({"replicas": True}, 'spec.replicas: Invalid value: "boolean": spec.replicas in body must be of type integer'),
        ({"replicas": 2.5}, 'spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer'),
        (
            {"loadBalancer": {"enabled": "yes"}},
            'spec.loadBalancer.enabled: Invalid value: "string": spec.loadBalancer.enabled in body must be of type '
            'boolean: "string"',
        ),
        ({"args": "x"}, 'spec.args: Invalid value: "string": spec.args in body must be of type array: "string"'),
        (
            {"env": [{"name": "A", "value": 1}]},
            'spec.env[0].value: Invalid value: "integer": spec.env[0].value in body must be of type string: "integer"',
        ),
        (
            {"resources": {"requests": {"cpu": True}}},
            'spec.resources.requests.cpu: Invalid value: "boolean": spec.resources.requests.cpu in body must be of '
            'type integer,string: "boolean"',
        ),
        (
            {"resources": []},
            'spec.resources: Invalid value: "array": spec.resources in body must be of type object: "array"',
        ),
        (
            {"podSecurity": "restricted"},
            'spec.podSecurity: Unsupported value: "restricted": supported values: "Baseline", "Restricted"',
        ),
        (
            {"replicas": -1},
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        ({"image": None}, "spec.image: Required value"),
    ],
)
def test_a_refusal_reads_as_the_api_servers_own_line(fields: dict[str, Any], line: str) -> None:
    spec = {**BASE, **fields}
    message = parser_refusal(spec)
    assert message is not None and line in message
    created = server_refusal(spec, apply=False)  # a create answers with the OpenAPI errors
    assert created is not None and line in created


def test_nothing_is_coerced_a_whole_float_is_the_integer_it_spells() -> None:
    spec = parse_spec({**BASE, "replicas": 2.0, "port": 8080.0, "loadBalancer": {"enabled": False}})
    assert (spec.replicas, spec.port, spec.loadBalancer.enabled) == (2, 8080, False)
    assert type(spec.replicas) is int and type(spec.port) is int


def test_a_null_field_takes_its_default_as_on_the_server() -> None:
    spec = parse_spec({**BASE, "replicas": None, "nodeSelector": {"a": None}, "loadBalancer": None})
    assert (spec.replicas, spec.nodeSelector, spec.loadBalancer.enabled) == (1, {}, True)


def test_every_type_error_is_reported_at_once_with_its_path() -> None:
    message = parser_refusal({**BASE, "replicas": "3", "gpu": "1", "env": [{"name": "A", "value": 2}]})
    assert message is not None
    assert [part.split(":")[0] for part in message.split("; ")] == ["spec.replicas", "spec.gpu", "spec.env[0].value"]
