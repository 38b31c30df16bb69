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

from inference_operator.api.models import parse_spec
from tests.shared.strictcases import BASE, CASES, parser_refusal, server_refusal


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
