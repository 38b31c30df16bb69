"""HttpLoadBalancer, the operator's client of the load balancer registry, on 127.0.0.1.

Covers:
- The protocol: it is a ``LoadBalancerProvider`` (checked by mypy on an assignment below).
- Against the reference registry: register then list shows it; registering twice is idempotent
  with the same id; a new target keeps the id; release removes the record; lookup finds a
  record or answers None, and a failing lookup raises with the status; releasing a missing
  key succeeds (404 tolerated) and is still counted in the registry's stats; the registry's
  stats count every call; injected faults raise LoadBalancerError naming the method, the URL,
  the status and the registry's message, then the retry succeeds; a rejected request (400)
  raises with the registry's message; a bearer token is sent when configured and never shown.
- Against a registry that is not there: a closed port raises with the URL and the OS error; a
  server that accepts and never answers raises after the timeout (0.2 s), not later.
- Against a registry that answers oddly (a canned stub): a 5xx with an HTML body, a 2xx that is
  not a registration, a redirect, a malformed list; and what goes on the wire: paths under a
  base path, quoted key parts, headers.
- Concurrency: threads registering different keys all get distinct ids; threads registering
  the same key all get the one id.
- Construction: bad URLs, timeouts, tokens and keys are refused with ValueError.

Servers listen on 127.0.0.1 port 0; ``start()`` returns once bound, so no test sleeps.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from inference_operator.core.ports import LoadBalancerError, LoadBalancerProvider, Registration
from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry import RegistryServer
from tests.integration.stubs import StubServer

BOUND = 10.0  # seconds any network wait may take before the test fails
TARGET = "llama.default.svc.cluster.local:8000"


@pytest.fixture
def lb(registry: RegistryServer) -> HttpLoadBalancer:
    return HttpLoadBalancer(registry.url, timeout=BOUND)


def as_provider(lb: HttpLoadBalancer) -> LoadBalancerProvider:
    provider: LoadBalancerProvider = lb  # mypy checks that the class satisfies the protocol
    return provider


# The protocol, against the reference registry


def test_it_is_a_load_balancer_provider(lb: HttpLoadBalancer) -> None:
    provider = as_provider(lb)
    assert provider.register("default/llama", target=TARGET).id == "lb-1"
    provider.release("default/llama")


def test_a_registration_shows_up_in_the_list(lb: HttpLoadBalancer) -> None:
    registration = lb.register("default/llama", target=TARGET)
    assert registration == Registration(id="lb-1", address="http://llama.default.lb.local", target=TARGET)
    assert lb.list_registrations() == {"default/llama": registration}


def test_registering_twice_is_idempotent_with_the_same_id(lb: HttpLoadBalancer, registry: RegistryServer) -> None:
    first = lb.register("default/llama", target=TARGET)
    assert lb.register("default/llama", target=TARGET) == first
    assert lb.list_registrations() == {"default/llama": first}
    assert registry.stats()["register_calls"] == {"default/llama": 2}


def test_a_new_target_keeps_the_id(lb: HttpLoadBalancer) -> None:
    first = lb.register("default/llama", target="old.default.svc.cluster.local:8000")
    updated = lb.register("default/llama", target=TARGET)
    assert (updated.id, updated.address, updated.target) == (first.id, first.address, TARGET)


def test_release_removes_the_registration(lb: HttpLoadBalancer) -> None:
    lb.register("default/llama", target=TARGET)
    lb.register("default/mistral", target=TARGET)
    lb.release("default/llama")
    assert list(lb.list_registrations()) == ["default/mistral"]


def test_lookup_finds_a_record_and_answers_none_for_a_missing_one(lb: HttpLoadBalancer) -> None:
    registered = lb.register("default/llama", target=TARGET)
    assert lb.lookup("default/llama") == registered
    lb.release("default/llama")
    assert lb.lookup("default/llama") is None


def test_a_failing_lookup_raises_with_the_status(stub: Callable[..., StubServer]) -> None:
    server = stub(503, b'{"message": "restoring from backup"}')
    with pytest.raises(LoadBalancerError) as raised:
        HttpLoadBalancer(server.url).lookup("default/llama")
    assert str(raised.value).endswith(
        "GET " + server.url + "/v1/registrations/default/llama: HTTP 503 Service Unavailable: restoring from backup"
    )


def test_releasing_a_missing_key_succeeds_and_is_counted(lb: HttpLoadBalancer, registry: RegistryServer) -> None:
    lb.release("default/never-registered")
    lb.release("default/never-registered")
    assert registry.stats()["release_calls"] == {"default/never-registered": 2}


def test_the_registry_counts_every_call_per_key(lb: HttpLoadBalancer, registry: RegistryServer) -> None:
    lb.register("default/a", target=TARGET)
    lb.register("default/a", target=TARGET)
    lb.register("prod/b", target=TARGET)
    lb.release("default/a")
    lb.release("prod/b")
    stats = registry.stats()
    assert stats["register_calls"] == {"default/a": 2, "prod/b": 1}
    assert stats["release_calls"] == {"default/a": 1, "prod/b": 1}


def test_an_injected_register_failure_raises_a_useful_error_then_the_retry_succeeds(
    lb: HttpLoadBalancer, registry: RegistryServer
) -> None:
    registry.set_faults(fail_registers=1)
    with pytest.raises(LoadBalancerError) as raised:
        lb.register("default/llama", target=TARGET)
    assert str(raised.value) == (
        f"load balancer registry PUT {registry.url}/v1/registrations/default/llama: HTTP 503 Service Unavailable: "
        "injected failure (fail_registers): the registry is unavailable, retry later"
    )
    assert lb.register("default/llama", target=TARGET).id == "lb-1"


def test_an_injected_release_failure_raises_then_the_retry_removes_the_record(
    lb: HttpLoadBalancer, registry: RegistryServer
) -> None:
    lb.register("default/llama", target=TARGET)
    registry.set_faults(fail_releases=2)
    for _ in range(2):
        with pytest.raises(LoadBalancerError, match=r"DELETE .*/v1/registrations/default/llama: HTTP 503"):
            lb.release("default/llama")
    assert "default/llama" in lb.list_registrations()
    lb.release("default/llama")
    assert lb.list_registrations() == {}


def test_a_rejected_request_raises_with_the_registry_message(lb: HttpLoadBalancer) -> None:
    with pytest.raises(LoadBalancerError, match=r"PUT .*: HTTP 400 Bad Request: name 'Llama' is not a DNS label"):
        lb.register("default/Llama", target=TARGET)


def test_a_configured_token_is_sent_as_a_bearer_header_and_never_shown() -> None:
    with RegistryServer(token="s3cret") as server:
        assert HttpLoadBalancer(server.url, token="s3cret").register("default/llama", target=TARGET).id == "lb-1"
        with pytest.raises(LoadBalancerError, match="HTTP 401 Unauthorized: missing or wrong bearer token") as raised:
            HttpLoadBalancer(server.url, token="guess-123").release("default/llama")
        assert "guess-123" not in str(raised.value)
        with pytest.raises(LoadBalancerError, match="HTTP 401"):
            HttpLoadBalancer(server.url).list_registrations()
    assert "s3cret" not in repr(HttpLoadBalancer("http://127.0.0.1:1", token="s3cret"))


# A registry that is not there


def test_a_closed_port_raises_with_the_url_and_the_os_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    lb = HttpLoadBalancer(f"http://127.0.0.1:{port}", timeout=BOUND)
    with pytest.raises(LoadBalancerError) as raised:
        lb.register("default/llama", target=TARGET)
    message = str(raised.value)
    assert f"PUT http://127.0.0.1:{port}/v1/registrations/default/llama" in message
    assert "connection failed: Connection refused" in message


def test_a_server_that_never_answers_raises_after_the_timeout() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel accepts connections into the backlog; nobody ever answers
        port = silent.getsockname()[1]
        lb = HttpLoadBalancer(f"http://127.0.0.1:{port}", timeout=0.2)
        started = time.monotonic()
        with pytest.raises(LoadBalancerError, match=r"DELETE .*: no answer within 0.2 s \(timed out\)"):
            lb.release("default/llama")
        assert time.monotonic() - started < 2.0


# A registry that answers oddly


def test_a_5xx_with_an_html_body_raises_with_the_status_only(stub: Callable[..., StubServer]) -> None:
    server = stub(502, b"<html><body>Bad Gateway from the proxy</body></html>")
    with pytest.raises(LoadBalancerError) as raised:
        HttpLoadBalancer(server.url).register("default/llama", target=TARGET)
    assert str(raised.value).endswith("/v1/registrations/default/llama: HTTP 502 Bad Gateway")


@pytest.mark.parametrize(
    "body",
    [b"", b"not json", b"[]", b'{"id": "lb-1", "address": "http://a"}', b'{"id": 1, "address": "a", "target": "t"}'],
)
def test_a_success_status_without_a_registration_raises(stub: Callable[..., StubServer], body: bytes) -> None:
    server = stub(200, body)
    with pytest.raises(LoadBalancerError, match=r"PUT .*: HTTP 200 OK without a valid registration"):
        HttpLoadBalancer(server.url).register("default/llama", target=TARGET)


def test_a_redirect_is_not_followed_and_raises(stub: Callable[..., StubServer]) -> None:
    server = stub(307, headers={"Location": "http://elsewhere.test/"})
    with pytest.raises(LoadBalancerError, match=r"DELETE .*: HTTP 307 Temporary Redirect"):
        HttpLoadBalancer(server.url).release("default/llama")
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [200, 204, 404])
def test_release_accepts_200_204_and_404(stub: Callable[..., StubServer], status: int) -> None:
    HttpLoadBalancer(stub(status).url).release("default/llama")


@pytest.mark.parametrize("status", [400, 401, 403, 409, 500, 503])
def test_release_raises_on_other_statuses(stub: Callable[..., StubServer], status: int) -> None:
    server = stub(status, json.dumps({"message": "told you so"}).encode())
    with pytest.raises(LoadBalancerError, match=rf"HTTP {status} .*: told you so$"):
        HttpLoadBalancer(server.url).release("default/llama")


@pytest.mark.parametrize(
    "body",
    [b"{}", b'{"items": {}}', b'{"items": [{"id": "lb-1", "address": "a", "target": "t"}]}', b'{"items": [1]}'],
)
def test_a_malformed_list_raises(stub: Callable[..., StubServer], body: bytes) -> None:
    with pytest.raises(LoadBalancerError, match=r"GET .*/v1/registrations: answered"):
        HttpLoadBalancer(stub(200, body).url).list_registrations()


def test_requests_go_under_the_base_path_with_json_and_headers(stub: Callable[..., StubServer]) -> None:
    answer = {"id": "lb-9", "address": "http://a", "target": TARGET}
    server = stub(201, json.dumps(answer).encode())
    lb = HttpLoadBalancer(server.url + "/registry/", token="s3cret")
    assert lb.register("default/llama", target=TARGET) == Registration(**answer)
    method, path, headers, body = server.requests[0]
    assert (method, path) == ("PUT", "/registry/v1/registrations/default/llama")
    assert json.loads(body) == {"target": TARGET}
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["User-Agent"].startswith("inference-operator/")


def test_key_parts_are_quoted_in_the_path(stub: Callable[..., StubServer]) -> None:
    server = stub(204)
    HttpLoadBalancer(server.url).release("default/na me?x")
    assert server.requests[0][1] == "/v1/registrations/default/na%20me%3Fx"


# Concurrency


def test_threads_registering_different_keys_get_distinct_ids(lb: HttpLoadBalancer, registry: RegistryServer) -> None:
    keys = [f"team-{n % 4}/model-{n}" for n in range(64)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        registrations = list(pool.map(lambda key: lb.register(key, target=TARGET), keys, timeout=BOUND))
    assert len({r.id for r in registrations}) == len(keys)
    assert lb.list_registrations() == dict(zip(keys, registrations, strict=True))
    assert registry.stats()["register_calls"] == dict.fromkeys(keys, 1)


def test_threads_registering_the_same_key_get_one_id(lb: HttpLoadBalancer) -> None:
    with ThreadPoolExecutor(max_workers=8) as pool:
        registrations = list(pool.map(lambda _: lb.register("default/llama", target=TARGET), range(16), timeout=BOUND))
    assert {r.id for r in registrations} == {"lb-1"}


# Construction


@pytest.mark.parametrize(
    "url",
    ["127.0.0.1:9090", "ftp://127.0.0.1", "http://", "http://user:pw@127.0.0.1", "http://h:99999", "http://h/?a=1"],
)
def test_a_bad_url_is_refused(url: str) -> None:
    with pytest.raises(ValueError):
        HttpLoadBalancer(url)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"timeout": 0}, "timeout must be positive"), ({"token": ""}, "token"), ({"token": "a\nb"}, "token")],
)
def test_bad_options_are_refused(kwargs: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        HttpLoadBalancer("http://127.0.0.1:1", **kwargs)


@pytest.mark.parametrize("key", ["llama", "/llama", "default/", ""])
def test_a_key_that_is_not_namespace_slash_name_is_refused(key: str) -> None:
    with pytest.raises(ValueError, match="namespace/name"):
        HttpLoadBalancer("http://127.0.0.1:1").release(key)
