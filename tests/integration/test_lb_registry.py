"""The reference load balancer registry, spoken to over raw HTTP on 127.0.0.1.

Covers:
- Registrations: PUT creates (201, id ``lb-<n>``, address from the template) and answers 200
  with the same record when repeated; a new target keeps the id and the address; GET one and
  GET all; DELETE answers 204, then 404 with a message.
- Validation: namespace and name must be DNS labels, the body a JSON object with a non-empty
  string target no larger than the limits; every rejection is a 4xx with a JSON message and
  changes nothing; unknown endpoints are 404 and wrong methods 405.
- Stats and faults: every register and release call is kept with its caller (the replica named
  in the operator's User-Agent) and time; every well-formed one is counted per key (failed
  and not-found ones too, malformed ones not); ``POST /v1/faults`` makes the next calls answer
  503 with a message, ``DELETE /v1/faults`` clears them, bad fault bodies are 400; faults can be
  set when the server is created.
- Persistence: registrations and the id counter survive a restart (released ids are never
  reused), the state file is a journal of JSON lines (one per change) written without
  leftovers, a save that fails answers 500 and records nothing, an unreadable or foreign state
  file stops the server from starting, naming the line.
- Bearer token: required everywhere but ``/healthz`` when configured.
- Operations: one log line per request in Kubernetes style and nothing on stderr; port 0 gives
  a real port in ``url``; ``stop`` is idempotent and the port is free again; ``serve_forever``
  runs in the calling thread; the command line (``serve`` in a subprocess stopped by SIGTERM,
  ``list``, bad options, a busy port).

Servers listen on 127.0.0.1 port 0; ``start()`` returns once bound, so no test sleeps.
"""

from __future__ import annotations

import http.client
import json
import logging
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry import RegistryServer, RegistryStateError, main

LOGGER = "inference_operator.lb.registry"
BOUND = 10.0  # seconds any wait on a thread or a subprocess may take before the test fails


def call(
    server: RegistryServer, method: str, path: str, body: Any = None, *, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """One raw request: ``(status, decoded JSON body or None)``."""
    port = int(server.url.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND)
    try:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        connection.request(method, path, body=data, headers=headers or {})
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw else None
    finally:
        connection.close()


def put(server: RegistryServer, key: str, target: str) -> tuple[int, Any]:
    return call(server, "PUT", f"/v1/registrations/{key}", {"target": target})


# Registrations


def test_a_first_put_creates_a_record_with_an_id_and_an_address(registry: RegistryServer) -> None:
    status, body = put(registry, "default/llama", "llama.default.svc.cluster.local:8000")
    assert status == 201
    assert body == {
        "key": "default/llama",
        "id": "lb-1",
        "address": "http://llama.default.lb.local",
        "target": "llama.default.svc.cluster.local:8000",
    }


def test_repeating_a_put_answers_200_with_the_same_record(registry: RegistryServer) -> None:
    _, first = put(registry, "default/llama", "t:8000")
    status, again = put(registry, "default/llama", "t:8000")
    assert status == 200
    assert again == first


def test_a_new_target_keeps_the_id_and_the_address(registry: RegistryServer) -> None:
    _, first = put(registry, "default/llama", "old:8000")
    status, updated = put(registry, "default/llama", "new:8000")
    assert status == 200
    assert updated == {**first, "target": "new:8000"}


def test_ids_are_numbered_in_order_of_creation(registry: RegistryServer) -> None:
    ids = [put(registry, f"team-{n}/llama", "t:1")[1]["id"] for n in range(3)]
    assert ids == ["lb-1", "lb-2", "lb-3"]


def test_get_all_lists_every_record_sorted_by_key(registry: RegistryServer) -> None:
    put(registry, "prod/b", "b:1")
    put(registry, "dev/a", "a:1")
    status, body = call(registry, "GET", "/v1/registrations")
    assert status == 200
    assert [item["key"] for item in body["items"]] == ["dev/a", "prod/b"]


def test_get_one_answers_the_record_or_404(registry: RegistryServer) -> None:
    _, record = put(registry, "default/llama", "t:1")
    assert call(registry, "GET", "/v1/registrations/default/llama") == (200, record)
    status, body = call(registry, "GET", "/v1/registrations/default/other")
    assert status == 404
    assert body == {"message": "no registration for default/other"}


def test_delete_answers_204_then_404_with_a_message(registry: RegistryServer) -> None:
    put(registry, "default/llama", "t:1")
    assert call(registry, "DELETE", "/v1/registrations/default/llama") == (204, None)
    assert call(registry, "GET", "/v1/registrations") == (200, {"items": []})
    status, body = call(registry, "DELETE", "/v1/registrations/default/llama")
    assert status == 404
    assert "default/llama" in body["message"]


def test_the_address_template_is_configurable() -> None:
    with RegistryServer(address_template="https://{namespace}-{name}.example.test") as server:
        assert put(server, "prod/llama", "t:1")[1]["address"] == "https://prod-llama.example.test"


def test_an_address_template_with_unknown_fields_is_refused() -> None:
    with pytest.raises(ValueError, match="may only use"):
        RegistryServer(address_template="http://{cluster}/{name}")


def test_healthz_answers_ok(registry: RegistryServer) -> None:
    assert call(registry, "GET", "/healthz") == (200, {"status": "ok"})


# Validation


@pytest.mark.parametrize(
    ("path", "body", "fragment"),
    [
        ("/v1/registrations/Default/llama", {"target": "t:1"}, "namespace 'Default' is not a DNS label"),
        ("/v1/registrations/default/llama_3", {"target": "t:1"}, "name 'llama_3' is not a DNS label"),
        ("/v1/registrations/default/" + "a" * 64, {"target": "t:1"}, "is not a DNS label"),
        ("/v1/registrations/default/-llama", {"target": "t:1"}, "is not a DNS label"),
        ("/v1/registrations/default/na%2Fme", {"target": "t:1"}, "name 'na/me' is not a DNS label"),
        ("/v1/registrations/default/llama", {"target": ""}, 'non-empty string "target"'),
        ("/v1/registrations/default/llama", {"target": "   "}, 'non-empty string "target"'),
        ("/v1/registrations/default/llama", {"target": 8000}, 'non-empty string "target"'),
        ("/v1/registrations/default/llama", {}, 'non-empty string "target"'),
        ("/v1/registrations/default/llama", ["t:1"], 'non-empty string "target"'),
        ("/v1/registrations/default/llama", b"{not json", "not valid JSON"),
        ("/v1/registrations/default/llama", None, "not valid JSON"),
        ("/v1/registrations/default/llama", {"target": "t" * 1025}, "longer than 1024 characters"),
    ],
)
def test_bad_input_is_rejected_with_400_and_a_message(
    registry: RegistryServer, path: str, body: Any, fragment: str
) -> None:
    status, answer = call(registry, "PUT", path, body)
    assert status == 400
    assert fragment in answer["message"]
    assert registry.registrations() == {}
    assert registry.stats()["register_calls"] == {}


def test_a_body_over_the_size_limit_is_rejected_with_413(registry: RegistryServer) -> None:
    status, answer = call(registry, "PUT", "/v1/registrations/default/llama", {"target": "t" * 70_000})
    assert status == 413
    assert "at most" in answer["message"]


def test_unknown_endpoints_answer_404_with_a_message(registry: RegistryServer) -> None:
    status, answer = call(registry, "GET", "/v2/things")
    assert status == 404
    assert answer == {"message": "no such endpoint: /v2/things"}


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/registrations/default/llama"), ("DELETE", "/v1/registrations"), ("PUT", "/v1/stats")],
)
def test_a_wrong_method_answers_405_naming_the_allowed_ones(registry: RegistryServer, method: str, path: str) -> None:
    status, answer = call(registry, method, path, {})
    assert status == 405
    assert "not allowed here; use" in answer["message"]


# Stats and faults


def test_each_register_and_release_call_is_kept_with_the_replica_that_made_it(registry: RegistryServer) -> None:
    a = HttpLoadBalancer(registry.url, identity="replica-a")
    b = HttpLoadBalancer(registry.url, identity="replica-b")
    a.register("default/x", target="x.default.svc:8000")
    b.register("default/x", target="x.default.svc:8000")
    b.release("default/x")
    calls = registry.calls()
    assert [(c.method, c.key, c.caller.split(" ", 1)[1]) for c in calls] == [
        ("PUT", "default/x", "(replica-a)"),
        ("PUT", "default/x", "(replica-b)"),
        ("DELETE", "default/x", "(replica-b)"),
    ]
    assert all(c.caller.startswith("inference-operator/") for c in calls)
    assert calls[0].at <= calls[1].at <= calls[2].at


def test_stats_count_register_and_release_calls_per_key(registry: RegistryServer) -> None:
    put(registry, "default/a", "t:1")
    put(registry, "default/a", "t:1")
    put(registry, "default/b", "t:1")
    call(registry, "DELETE", "/v1/registrations/default/a")
    call(registry, "DELETE", "/v1/registrations/default/missing")
    status, stats = call(registry, "GET", "/v1/stats")
    assert status == 200
    assert stats == {
        "register_calls": {"default/a": 2, "default/b": 1},
        "release_calls": {"default/a": 1, "default/missing": 1},
        "registrations": 1,
        "faults": {"fail_registers": 0, "fail_releases": 0},
    }


def test_injected_register_faults_answer_503_then_the_call_succeeds(registry: RegistryServer) -> None:
    assert call(registry, "POST", "/v1/faults", {"fail_registers": 2}) == (
        200,
        {"fail_registers": 2, "fail_releases": 0},
    )
    for _ in range(2):
        status, answer = put(registry, "default/llama", "t:1")
        assert status == 503
        assert "injected failure (fail_registers)" in answer["message"]
    assert put(registry, "default/llama", "t:1")[0] == 201
    assert registry.stats()["register_calls"] == {"default/llama": 3}


def test_injected_release_faults_keep_the_record_until_a_release_succeeds(registry: RegistryServer) -> None:
    put(registry, "default/llama", "t:1")
    call(registry, "POST", "/v1/faults", {"fail_releases": 1})
    status, answer = call(registry, "DELETE", "/v1/registrations/default/llama")
    assert status == 503
    assert "injected failure (fail_releases)" in answer["message"]
    assert "default/llama" in registry.registrations()
    assert call(registry, "DELETE", "/v1/registrations/default/llama") == (204, None)
    assert registry.stats()["release_calls"] == {"default/llama": 2}


def test_deleting_faults_clears_them(registry: RegistryServer) -> None:
    call(registry, "POST", "/v1/faults", {"fail_registers": 5, "fail_releases": 5})
    assert call(registry, "DELETE", "/v1/faults") == (200, {"fail_registers": 0, "fail_releases": 0})
    assert put(registry, "default/llama", "t:1")[0] == 201


def test_posting_faults_replaces_the_previous_ones(registry: RegistryServer) -> None:
    call(registry, "POST", "/v1/faults", {"fail_registers": 5})
    assert call(registry, "POST", "/v1/faults", {"fail_releases": 1})[1] == {"fail_registers": 0, "fail_releases": 1}


@pytest.mark.parametrize(
    "body",
    [{"fail_registers": -1}, {"fail_registers": "2"}, {"fail_registers": True}, {"fail_everything": 1}, [1]],
)
def test_bad_fault_bodies_are_rejected_with_400(registry: RegistryServer, body: Any) -> None:
    status, answer = call(registry, "POST", "/v1/faults", body)
    assert status == 400
    assert "fail_registers and fail_releases" in answer["message"]
    assert registry.stats()["faults"] == {"fail_registers": 0, "fail_releases": 0}


def test_faults_can_be_set_when_the_server_is_created() -> None:
    with RegistryServer(fail_registers=1, fail_releases=1) as server:
        assert put(server, "default/llama", "t:1")[0] == 503
        assert put(server, "default/llama", "t:1")[0] == 201
        assert call(server, "DELETE", "/v1/registrations/default/llama")[0] == 503
        assert call(server, "DELETE", "/v1/registrations/default/llama")[0] == 204


# Persistence


def test_registrations_and_the_id_counter_survive_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "registry.json"
    with RegistryServer(state_file=state) as first:
        put(first, "default/a", "a:1")
        put(first, "default/b", "b:1")
        call(first, "DELETE", "/v1/registrations/default/b")
        before = call(first, "GET", "/v1/registrations")[1]
    with RegistryServer(state_file=state) as second:
        assert call(second, "GET", "/v1/registrations")[1] == before
        assert put(second, "default/a", "a:1") == (200, before["items"][0])
        assert put(second, "default/c", "c:1")[1]["id"] == "lb-3"


def test_the_state_file_is_a_journal_of_json_lines_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    state = tmp_path / "registry.json"
    with RegistryServer(state_file=state) as server:
        put(server, "default/llama", "t:1")
        put(server, "default/llama", "t:2")
        call(server, "DELETE", "/v1/registrations/default/llama")
    assert journal(state) == [
        {"version": 2, "next_id": 1},
        {"put": "default/llama", "id": "lb-1", "address": "http://llama.default.lb.local", "target": "t:1"},
        {"put": "default/llama", "id": "lb-1", "address": "http://llama.default.lb.local", "target": "t:2"},
        {"delete": "default/llama"},
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["registry.json"]


def journal(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("first", [True, False], ids=["first-write", "append"])
def test_a_failed_save_answers_500_and_records_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, first: bool
) -> None:
    state = tmp_path / "registry.json"
    with RegistryServer(state_file=state) as server:
        if not first:
            assert put(server, "default/other", "t:1")[0] == 201
            state.unlink()
        state.mkdir()  # neither os.replace nor an append can write a file over a directory
        status, answer = put(server, "default/llama", "t:1")
        assert status == 500
        assert f"could not save the registry state to {state}" in answer["message"]
        assert "default/llama" not in server.registrations()
    assert "Failed to save state" in caplog.text
    assert [p.name for p in tmp_path.iterdir()] == ["registry.json"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{broken", "not valid JSON"),
        ('{"version": 3, "next_id": 0}', "state version 3"),
        ('{"version": 2, "next_id": 0}\n{"put": "a/b", "id": "lb-1"}\n', "line 2 is not a registry change"),
        ('{"version": 2, "next_id": 0}\n{broken\n{"delete": "a/b"}\n', "line 2 is not valid JSON"),
        ('{"version": 1, "registrations": {}}', "not a registry state file"),
        ('{"version": 1, "next_id": 0, "registrations": {"a/b": {"id": "lb-1"}}}', "not a registry state file"),
        ('{"version": 1, "next_id": 0, "registrations": {"a/b": {"id": 1, "address": "x", "target": "y"}}}', "id"),
        ("[]", "not a registry state file"),
    ],
)
def test_a_state_file_that_is_not_registry_state_stops_the_start(tmp_path: Path, content: str, fragment: str) -> None:
    state = tmp_path / "registry.json"
    state.write_text(content)
    with pytest.raises(RegistryStateError, match=fragment) as raised:
        RegistryServer(state_file=state)
    assert str(state) in str(raised.value)


def test_a_state_file_in_a_missing_directory_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(RegistryStateError, match="does not exist"):
        RegistryServer(state_file=tmp_path / "nowhere" / "registry.json")


def test_the_id_counter_never_reuses_an_id_found_in_the_state(tmp_path: Path) -> None:
    state = tmp_path / "registry.json"
    record = {"id": "lb-7", "address": "http://a", "target": "t:1"}
    state.write_text(json.dumps({"version": 1, "next_id": 2, "registrations": {"default/a": record}}))
    with RegistryServer(state_file=state) as server:
        assert put(server, "default/b", "t:1")[1]["id"] == "lb-8"


# Bearer token


def test_a_configured_token_is_required_except_for_healthz() -> None:
    with RegistryServer(token="s3cret") as server:
        status, answer = call(server, "GET", "/v1/registrations")
        assert status == 401
        assert "bearer token" in answer["message"]
        assert call(server, "GET", "/v1/registrations", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert call(server, "GET", "/v1/registrations", headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert call(server, "GET", "/healthz")[0] == 200


# Operations


def test_each_request_logs_one_kubernetes_style_line_and_nothing_reaches_stderr(
    registry: RegistryServer, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    put(registry, "default/llama", "a:1")
    put(registry, "default/llama", "a:1")
    put(registry, "default/llama", "b:1")
    call(registry, "GET", "/v1/registrations")
    call(registry, "DELETE", "/v1/registrations/default/llama")
    call(registry, "DELETE", "/v1/registrations/default/llama")
    put(registry, "Bad/llama", "a:1")
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == [
        "Registered key=default/llama id=lb-1 target=a:1 address=http://llama.default.lb.local caller=unknown",
        "Registration unchanged key=default/llama id=lb-1 target=a:1 caller=unknown",
        "Updated registration key=default/llama id=lb-1 target=b:1 previous=a:1 caller=unknown",
        "Served method=GET path=/v1/registrations status=200",
        "Released key=default/llama id=lb-1 target=b:1 caller=unknown",
        "Released nothing key=default/llama reason=NotFound caller=unknown",
        "Rejected request method=PUT path=/v1/registrations/Bad/llama status=400 message=namespace 'Bad' is not a "
        "DNS label: at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit",
    ]
    assert capsys.readouterr().err == ""


def test_port_zero_binds_a_free_port_shown_in_the_url(registry: RegistryServer) -> None:
    assert registry.url.startswith("http://127.0.0.1:")
    assert int(registry.url.rsplit(":", 1)[1]) > 0


def test_the_url_of_a_server_not_started_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = RegistryServer().url


def test_stop_is_idempotent_and_frees_the_port() -> None:
    server = RegistryServer()
    server.start()
    port = int(server.url.rsplit(":", 1)[1])
    server.stop()
    server.stop()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=BOUND)
    with RegistryServer(port=port) as again:
        assert call(again, "GET", "/healthz")[0] == 200


def test_serve_forever_serves_in_the_calling_thread_until_stopped() -> None:
    server = RegistryServer()
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        deadline = time.monotonic() + BOUND
        while True:  # wait for the bind done by the other thread
            try:
                url = server.url
                break
            except RuntimeError:
                assert time.monotonic() < deadline, "the server did not bind in time"
        port = int(url.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND)
        connection.request("GET", "/healthz")
        assert connection.getresponse().status == 200
        connection.close()
    finally:
        server.stop()
        thread.join(BOUND)
    assert not thread.is_alive()


# Command line


def test_serve_runs_as_a_module_and_stops_gracefully_on_sigterm(tmp_path: Path) -> None:
    state = tmp_path / "registry.json"
    command = [sys.executable, "-m", "inference_operator.lb.registry", "serve", "--port", "0", "--state", str(state)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    assert process.stderr is not None
    try:
        url = _wait_for_url(process.stderr)
        server_port = int(url.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", server_port, timeout=BOUND)
        connection.request("PUT", "/v1/registrations/default/llama", body=b'{"target": "t:1"}')
        assert connection.getresponse().status == 201
        connection.close()
        process.send_signal(signal.SIGTERM)
        assert process.wait(BOUND) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(BOUND)
        process.stderr.close()
    assert journal(state)[-1]["put"] == "default/llama"


def _wait_for_url(stream: Any) -> str:
    """Read the subprocess's log until the line announcing the URL, within BOUND seconds."""
    deadline = time.monotonic() + BOUND
    seen: list[str] = []
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=deadline - time.monotonic()):
                break
            line = stream.readline()
            if not line:
                break
            seen.append(line)
            if "Serving load balancer registry url=" in line:
                return str(line.split("url=", 1)[1].split()[0])
    raise AssertionError(f"the registry did not announce its URL; it said: {''.join(seen)!r}")


def test_list_prints_a_table_of_registrations(registry: RegistryServer, capsys: pytest.CaptureFixture[str]) -> None:
    put(registry, "default/llama", "llama.default.svc.cluster.local:8000")
    assert main(["list", "--url", registry.url]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["KEY", "ID", "ADDRESS", "TARGET"]
    assert lines[1].split() == [
        "default/llama",
        "lb-1",
        "http://llama.default.lb.local",
        "llama.default.svc.cluster.local:8000",
    ]


def test_list_against_an_unreachable_registry_says_why_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert main(["list", "--url", f"http://127.0.0.1:{port}", "--timeout", "2"]) == 1
    assert f"error: load balancer registry GET http://127.0.0.1:{port}/v1/registrations" in capsys.readouterr().err


def test_serve_on_a_busy_port_says_why_and_exits_1(
    registry: RegistryServer, capsys: pytest.CaptureFixture[str]
) -> None:
    port = registry.url.rsplit(":", 1)[1]
    assert main(["serve", "--port", port]) == 1
    assert f"error: cannot start the registry on 127.0.0.1:{port}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--port", "70000"],
        ["serve", "--port", "http"],
        ["serve", "--fail-registers", "-1"],
        ["serve", "--address-template", "{nope}"],
        [],
    ],
)
def test_bad_options_exit_with_usage_code_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 2
    assert "error:" in capsys.readouterr().err
