"""The FakeApiServer refuses a Service whose ports clash, as kube-apiserver does.

Covers: two ports with the same name, or the same port and protocol, are 422 naming the later
item (``spec.ports[1].name: Duplicate value: "http"``); the same port number over TCP and UDP
is fine; and the case the scenario suite found: a user's merge patch renames the operator's
port away, after which the operator's server-side apply of its own port (same name) is refused
instead of silently storing two ports called ``http``.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.core.errors import Invalid
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock

Obj = dict[str, Any]


def service(*ports: Obj) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "llama", "namespace": "default"},
        "spec": {"selector": {"app": "llama"}, "ports": list(ports)},
    }


def test_two_ports_of_the_same_name_are_refused_naming_the_later_one() -> None:
    api = FakeApiServer(FakeClock())
    with pytest.raises(Invalid, match=r'spec\.ports\[1\]\.name: Duplicate value: "a"'):
        api.create(service({"name": "a", "port": 80}, {"name": "a", "port": 81}))


def test_two_ports_of_the_same_number_and_protocol_are_refused() -> None:
    api = FakeApiServer(FakeClock())
    with pytest.raises(Invalid, match=r"spec\.ports\[1\]: Duplicate value"):
        api.create(service({"name": "a", "port": 80}, {"name": "b", "port": 80, "protocol": "TCP"}))


def test_one_port_number_over_tcp_and_udp_is_fine() -> None:
    api = FakeApiServer(FakeClock())
    api.create(service({"name": "a", "port": 53}, {"name": "b", "port": 53, "protocol": "UDP"}))


def test_an_apply_that_would_add_a_second_port_of_the_same_name_is_refused() -> None:
    api = FakeApiServer(FakeClock())
    mine = service({"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"})
    api.apply(mine, field_manager="inference-operator", force=True)
    theirs = {"name": "http", "port": 9999, "targetPort": "http", "protocol": "TCP"}
    api.patch("Service", "default", "llama", {"spec": {"ports": [theirs]}}, field_manager="kubectl-patch")
    with pytest.raises(Invalid, match=r'spec\.ports\[1\]\.name: Duplicate value: "http"'):
        api.apply(mine, field_manager="inference-operator", force=True)
    assert [p["port"] for p in api.get("Service", "default", "llama")["spec"]["ports"]] == [9999]
