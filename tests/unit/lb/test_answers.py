"""Strings from the load balancer registry are validated and bounded before status, logs and traces.

Covers: a registration is accepted only with an id, an http(s) address and
a host:port target of sane syntax and length — a 4 MiB id, an id with a newline, a
``javascript:`` address, an address with credentials or without a host, a target that is not
host:port are each refused with an error naming the field; a registry's text is cut and its
control characters escaped; a condition message is capped at the CRD's maxLength, the same way
every time (no write loop); a provider failing with a 2 MiB message leaves a status, a log
line and a trace record of a few KiB, not megabytes; the CRD carries the maxLength of
condition messages and of the load balancer status fields.
"""

from __future__ import annotations

import json
import logging

import pytest

from inference_operator.api.constants import (
    KIND,
    MAX_CONDITION_MESSAGE,
    MAX_LB_ADDRESS,
    MAX_LB_ID,
    MAX_LB_TARGET,
)
from inference_operator.api.crd import crd
from inference_operator.api.samples import make_inference_service
from inference_operator.core.conditions import Cond, merge
from inference_operator.core.ports import LoadBalancerError, Registration
from inference_operator.lb.answers import MAX_REGISTRY_MESSAGE, InvalidRegistration, bounded_text, check_registration
from inference_operator.sim import Simulation
from inference_operator.sim.wiring import Interposer
from inference_operator.trace.recorder import Recorder
from inference_operator.trace.sink import ListSink

GOOD = {"id": "lb-1", "address": "https://llama.lb.example.test/v1", "target": "llama.default.svc:8000"}
MIB = 1024 * 1024


def test_a_well_formed_registration_is_accepted() -> None:
    assert check_registration(GOOD) == Registration(**GOOD)
    arn = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/llama/6d0ecf831eec9f09"
    assert check_registration({**GOOD, "id": arn, "address": "http://10.0.0.1:8080"}).id == arn


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("id", "x" * (4 * MIB), f"id is {4 * MIB} characters long, at most {MAX_LB_ID} are accepted"),
        ("id", "lb-1\nINFO forged log line", r"id 'lb-1\\x0aINFO forged log line' is not letters, digits"),
        ("id", " lb-1", "id ' lb-1' is not"),
        ("address", "javascript:alert(1)", "address 'javascript:alert(1)' is not an http:// or https:// URL"),
        ("address", "https://user:pw@lb.example.test/", "is not an http:// or https:// URL"),
        ("address", "http://", "address 'http://' is not an http"),
        ("address", "http://a b/", "is not an http"),
        ("address", "http://lb:99999/", "is not an http"),
        ("address", "https://" + "a" * MAX_LB_ADDRESS, f"at most {MAX_LB_ADDRESS} are accepted"),
        ("target", "llama", "target 'llama' is not host:port"),
        ("target", "a" * (MAX_LB_TARGET + 1) + ":80", f"at most {MAX_LB_TARGET}"),
        ("id", 7, "id is missing or not a non-empty string"),
        ("address", "", "address is missing"),
    ],
)
def test_a_malformed_registration_is_refused_naming_the_field(field: str, value: object, problem: str) -> None:
    with pytest.raises(InvalidRegistration) as raised:
        check_registration({**GOOD, field: value})
    assert problem in str(raised.value)
    assert len(str(raised.value)) < 300


def test_an_answer_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InvalidRegistration, match="not a registration"):
        check_registration(["lb-1"])


def test_registry_text_is_cut_and_its_control_characters_escaped() -> None:
    assert bounded_text("a\nb\x1b[31m\x7f") == "a\\x0ab\\x1b[31m\\x7f"
    long = bounded_text("x" * (2 * MIB))
    assert long.startswith("x" * 900) and long.endswith(f"… (cut, {2 * MIB} characters in all)")
    assert len(long) == MAX_REGISTRY_MESSAGE


def test_a_condition_message_is_capped_at_the_crd_limit_the_same_way_every_time() -> None:
    cond = Cond("LoadBalancerReady", "False", "LoadBalancerFailed", "y" * (3 * MIB))
    first = merge([], [cond], generation=1, now="2026-01-01T00:00:00Z")
    again = merge(first, [cond], generation=1, now="2026-01-01T00:00:01Z")
    assert first == again
    message = first[0]["message"]
    assert len(message) == MAX_CONDITION_MESSAGE and message.endswith(f"(cut, {3 * MIB} characters in all)")


class VerboseFailingBalancer:
    """A LoadBalancerProvider whose every call fails with a 2 MiB message (the seam, no network)."""

    def __init__(self) -> None:
        self.error = LoadBalancerError("registry said: " + "z" * (2 * MIB))

    def register(self, key: str, *, target: str) -> Registration:
        raise self.error

    def release(self, key: str) -> None:
        raise self.error

    def lookup(self, key: str) -> Registration | None:
        raise self.error


def test_a_2_mib_failure_leaves_a_small_status_log_line_and_trace(caplog: pytest.LogCaptureFixture) -> None:
    sink = ListSink()
    sim = Simulation(
        tracer=lambda clock: Recorder(sink, clock, backend="simulator"),
        interpose=Interposer(load_balancer=lambda _outside: VerboseFailingBalancer()),
    )
    caplog.set_level(logging.INFO)
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="m", replicas=1))
    sim.run_until_quiescent(until=120.0)
    status = (sim.get(KIND, "default", "llama") or {})["status"]
    lb = next(c for c in status["conditions"] if c["type"] == "LoadBalancerReady")
    assert lb["status"] == "False" and "registry said: zzz" in lb["message"] and "characters in all" in lb["message"]
    assert len(json.dumps(status)) < 16 * 1024
    assert max(len(r.getMessage()) for r in caplog.records) < 8 * 1024
    assert max(len(json.dumps(r)) for r in sink.records) < 32 * 1024


def test_the_crd_caps_condition_messages_and_load_balancer_fields() -> None:
    status = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    assert status["conditions"]["items"]["properties"]["message"]["maxLength"] == MAX_CONDITION_MESSAGE
    lb = status["loadBalancer"]["properties"]
    assert (lb["id"]["maxLength"], lb["address"]["maxLength"], lb["target"]["maxLength"]) == (
        MAX_LB_ID,
        MAX_LB_ADDRESS,
        MAX_LB_TARGET,
    )
    assert status["url"]["maxLength"] == MAX_LB_ADDRESS
