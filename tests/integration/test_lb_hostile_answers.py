"""A registry on 127.0.0.1 that answers with hostile content: what reaches status, logs and traces.

Covers: a 2 MiB error message becomes a LoadBalancerError of about 1 KiB on
one line; a 200 with an id of 4 MiB, a ``javascript:`` address or an id with a newline is a
LoadBalancerError naming the field, never a registration; a list with such a record is refused
the same way; and end to end, the simulated operator talking to such a registry through the
real HTTP client reports ``LoadBalancerReady=False`` with that clear message in a status of a
few KiB, and never records the registration; ``lb-registry list`` never prints a registry's
control characters (they are refused, and escaped in the error).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from inference_operator.api.constants import KIND
from inference_operator.api.samples import make_inference_service
from inference_operator.core.ports import LoadBalancerError
from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry.cli import main as registry_main
from inference_operator.sim import Simulation
from inference_operator.sim.wiring import Interposer
from tests.integration.stubs import StubServer

MIB = 1024 * 1024
TARGET = "llama.default.svc.cluster.local:8000"
GOOD = {"id": "lb-1", "address": "http://llama.lb.example.test", "target": TARGET}


def test_a_2_mib_error_message_is_cut_to_one_short_line(stub: Callable[..., StubServer]) -> None:
    server = stub(500, json.dumps({"message": "boom\n" + "x" * (2 * MIB)}).encode())
    with pytest.raises(LoadBalancerError) as raised:
        HttpLoadBalancer(server.url).register("default/llama", target=TARGET)
    message = str(raised.value)
    assert len(message) < 1300 and "\n" not in message
    assert message.endswith("characters in all)") and "HTTP 500 Internal Server Error: boom\\x0axxx" in message


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("id", "i" * (4 * MIB), f"id is {4 * MIB} characters long, at most 256 are accepted"),
        ("address", "javascript:alert(1)", "address 'javascript:alert(1)' is not an http:// or https:// URL"),
        ("id", "lb-1\nforged", "id 'lb-1\\\\x0aforged' is not letters"),
    ],
)
def test_a_hostile_registration_is_an_error_naming_the_field(
    stub: Callable[..., StubServer], field: str, value: str, problem: str
) -> None:
    server = stub(200, json.dumps({**GOOD, field: value}).encode())
    lb = HttpLoadBalancer(server.url)
    for call in (lambda: lb.register("default/llama", target=TARGET), lambda: lb.lookup("default/llama")):
        with pytest.raises(LoadBalancerError) as raised:
            call()
        assert "HTTP 200 OK without a valid registration: " + problem in str(raised.value)
        assert len(str(raised.value)) < 400


def test_a_list_with_a_hostile_record_is_refused(stub: Callable[..., StubServer]) -> None:
    body = {"items": [{"key": "default/llama", **GOOD, "address": "javascript:alert(1)"}]}
    with pytest.raises(LoadBalancerError, match=r"answered for default/llama without a valid registration: address"):
        HttpLoadBalancer(stub(200, json.dumps(body).encode()).url).list_registrations()


def test_the_operator_reports_a_hostile_registry_clearly_in_a_small_status(stub: Callable[..., StubServer]) -> None:
    server = stub(201, json.dumps({**GOOD, "id": "i" * (4 * MIB)}).encode())
    sim = Simulation(interpose=Interposer(load_balancer=lambda _outside: HttpLoadBalancer(server.url)))
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="m", replicas=1))
    sim.run_until_quiescent(until=30.0)
    status = (sim.get(KIND, "default", "llama") or {})["status"]
    lb = next(c for c in status["conditions"] if c["type"] == "LoadBalancerReady")
    assert lb["status"] == "False" and lb["reason"] == "LoadBalancerFailed"
    assert f"without a valid registration: id is {4 * MIB} characters long, at most 256 are accepted" in lb["message"]
    assert "loadBalancer" not in status or not status["loadBalancer"].get("id")
    assert len(json.dumps(status)) < 16 * 1024


def test_registry_list_never_prints_a_registrys_control_characters(
    stub: Callable[..., StubServer], capsys: pytest.CaptureFixture[str]
) -> None:
    body = {"items": [{"key": "default/\x1b[2Jllama", **GOOD}]}
    assert registry_main(["list", "--url", stub(200, json.dumps(body).encode()).url]) == 1
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\\x1b[2Jllama" in err and "is not namespace/name" in err
