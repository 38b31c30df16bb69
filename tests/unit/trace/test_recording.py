"""Recording a trace: the demo, a failing write, the kube runtime's events, the ``run`` flags.

Covers: each of the four demo scenarios (``demo --trace``) records every phase of the control
loop, dequeues with the queue's contents, results, the status written, the platform's moves,
and at least one operator write linked to the watch event it caused (same resourceVersion);
``demo`` prints the same with and without ``--trace``; ``demo -f --trace`` records a manifest;
a refused write is recorded with its error and code, and the rate-limited retry it caused with
its backoff; a failed load balancer release too, with the Terminating status written; the
kube runtime records watch events through the same tracer (and nothing when off);
``run --trace*`` values parse, and a bad one is an error naming the flag.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inference_operator.api.constants import KIND
from inference_operator.api.samples import make_inference_service
from inference_operator.cli import main
from inference_operator.demo import SCENARIO_NAMES
from inference_operator.kube.config import ConfigError, OperatorConfig
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.sim import Simulation
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.faults import FaultyApi, WriteFault
from inference_operator.sim.lbfaults import FaultyLoadBalancer
from inference_operator.sim.wiring import Interposer
from inference_operator.trace.recorder import NULL_TRACER, PHASES, Recorder
from inference_operator.trace.sink import ListSink, read_trace

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def linked_writes(records: list[Obj]) -> list[tuple[Obj, Obj]]:
    """(write, event) pairs where the event names the write as its cause."""
    by_id = {r["id"]: r for r in records if r["type"] in ("write", "platform")}
    return [(by_id[r["cause"]], r) for r in records if r["type"] == "event" and r.get("cause") in by_id]


@pytest.mark.parametrize("scenario", SCENARIO_NAMES)
def test_each_demo_scenario_records_every_phase_and_a_write_linked_to_its_event(
    scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{scenario}.jsonl"
    code, _, err = run(capsys, "demo", "--scenario", scenario, "--trace", str(path))
    assert code == 0 and str(path) in err
    records = read_trace(path)
    types = {r["type"] for r in records}
    assert {"header", "event", "enqueue", "dequeue", "phase", "write", "result", "platform"} <= types
    assert {r["phase"] for r in records if r["type"] == "phase"} == set(PHASES)
    pairs = [(w, e) for w, e in linked_writes(records) if w["type"] == "write"]
    assert pairs, "an operator write and the event it caused"
    for write, event in pairs:
        assert write["rv"] == event["rv"] and write["kind"] == event["kind"] and write["key"] == event["key"]
        assert write["seq"] < event["seq"]
    dequeues = [r for r in records if r["type"] == "dequeue"]
    assert all({"ready", "waiting", "processing"} <= set(r["queue"]) for r in dequeues)
    passes = {r["pass"] for r in dequeues}
    assert passes == {r["pass"] for r in records if r["type"] == "result"}, "every pass ends with a result"
    statuses = [r for r in records if r.get("phase") == "status" and r["written"]]
    assert statuses and statuses[-1]["status"]["phase"] == "Ready"
    assert [r["t"] for r in records] == sorted(r["t"] for r in records), "fake time only moves forward"


def test_the_demo_prints_the_same_with_and_without_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, plain, _ = run(capsys, "demo")
    code, traced, err = run(capsys, "demo", "--trace", str(tmp_path / "t.jsonl"))
    assert code == 0 and traced == plain
    for name in SCENARIO_NAMES:
        assert (tmp_path / f"t.{name}.jsonl").exists() and f"t.{name}.jsonl" in err


def test_the_platform_moves_show_in_the_delete_and_create_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "demo", "--scenario", "create", "--scenario", "delete", "--trace", str(tmp_path / "t.jsonl"))
    create = read_trace(tmp_path / "t.create.jsonl")
    assert any(r["type"] == "platform" and r["action"] == "pods-ready" for r in create)
    delete = read_trace(tmp_path / "t.delete.jsonl")
    collected = [r for r in delete if r["type"] == "platform" and r["actor"] == "garbage-collector"]
    # The whole cascade: the children, and the Deployment's ReplicaSet and its pods after them.
    assert {r["kind"] for r in collected} == {"Deployment", "Service", "ReplicaSet", "Pod"}
    assert {e["kind"] for w, e in linked_writes(delete) if w in collected} == {"Deployment", "Service"}
    assert any(r["type"] == "write" and r["verb"] == "release" and r["kind"] == "LoadBalancer" for r in delete)


def test_a_manifest_is_recorded_with_demo_f(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = ROOT / "deploy" / "samples" / "llama-3-8b.yaml"
    path = tmp_path / "m.jsonl"
    code, out, _ = run(capsys, "demo", "-f", str(sample), "--trace", str(path))
    assert code == 0 and "phase=Ready" in out
    assert {r["phase"] for r in read_trace(path) if r["type"] == "phase"} == set(PHASES)


def test_demo_trace_into_a_missing_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "demo", "--trace", str(tmp_path / "nowhere" / "t.jsonl"))
    assert code == 2 and "--trace" in err and "does not exist" in err


def test_a_refused_write_is_recorded_with_its_error_and_the_backoff_it_caused() -> None:
    sink = ListSink()
    faults: list[FaultyApi] = []

    def faulty(sim: Simulation) -> FaultyApi:
        faults.append(FaultyApi(sim.api, clock=sim.clock))
        faults[-1].arm(WriteFault("conflict", verb="update_status", kind=KIND))
        return faults[-1]

    sim = Simulation(tracer=lambda clock: Recorder(sink, clock, backend="simulator"), interpose=Interposer(api=faulty))
    sim.apply(make_inference_service("a", image="vllm", model="m", replicas=1))
    sim.run_until_quiescent()
    records = sink.records
    failed = [r for r in records if r["type"] == "write" and r["result"] == "error"]
    assert failed and failed[0]["code"] == 409 and "Conflict" in failed[0]["error"]
    same_pass = [r for r in records if r.get("pass") == failed[0]["pass"]]
    retry = [r for r in same_pass if r["type"] == "enqueue" and r["how"] == "rate_limited"]
    assert retry and retry[0]["retries"] == 1 and retry[0]["delay"] > 0
    result = [r for r in same_pass if r["type"] == "result"]
    assert result[0]["outcome"] == "error" and "Conflict" in result[0]["error"]
    later = [r for r in records if r["type"] == "dequeue" and r["pass"] > failed[0]["pass"]]
    assert later and later[0]["retries"] == 1


class ListingClient:
    """Just enough of KubeClient for a runtime that is never started."""

    def iter_pages(self, *args: Any, **kwargs: Any) -> Any:
        yield [], "1"


def isvc_event(rv: str) -> Obj:
    obj = make_inference_service("a", image="vllm", model="m")
    obj["metadata"].update(uid="u1", resourceVersion=rv, generation=1)
    return obj


def test_the_kube_runtime_records_watch_events_through_the_same_tracer() -> None:
    sink = ListSink()
    clock = FakeClock()
    config = OperatorConfig(workers=1, leader_election=False)
    tracer = Recorder(sink, clock, backend="cluster")
    rt = OperatorRuntime(config, ListingClient(), clock=clock, tracer=tracer)  # type: ignore[arg-type]
    rt.on_event(KIND, "ADDED", isvc_event("5"))
    rt.on_event(KIND, "MODIFIED", isvc_event("5"))  # already known: recorded, nothing queued
    events = [r for r in sink.records if r["type"] == "event"]
    assert [(e["event"], e["rv"], e["enqueued"]) for e in events] == [
        ("ADDED", "5", "default/a"),
        ("MODIFIED", "5", None),
    ]
    assert [r["key"] for r in sink.records if r["type"] == "enqueue"] == ["default/a"]
    assert sink.records[0]["backend"] == "cluster" and sink.records[0]["clock"] == "monotonic"
    assert rt.controller.tracer is tracer and rt.reconciler.tracer is tracer
    rt.stop(timeout=1.0)
    assert sink.closed


def test_the_kube_runtime_traces_nothing_by_default() -> None:
    rt = OperatorRuntime(OperatorConfig(workers=1, leader_election=False), ListingClient(), clock=FakeClock())  # type: ignore[arg-type]
    assert rt.tracer is NULL_TRACER and rt.reconciler.backend is rt.backend
    rt.stop(timeout=1.0)


def test_trace_settings_default_to_off_and_parse_sizes(tmp_path: Path) -> None:
    default = OperatorConfig.from_env({})
    assert default.trace_file == "" and default.trace_max_bytes == 16 * 2**20 and default.trace_files == 4
    env = {
        "INFERENCE_OPERATOR_TRACE": str(tmp_path / "t.jsonl"),
        "INFERENCE_OPERATOR_TRACE_MAX_BYTES": "512Ki",
        "INFERENCE_OPERATOR_TRACE_FILES": "3",
    }
    config = OperatorConfig.from_env(env)
    assert (config.trace_file, config.trace_max_bytes, config.trace_files) == (str(tmp_path / "t.jsonl"), 524288, 3)
    assert OperatorConfig.from_env({"INFERENCE_OPERATOR_TRACE_MAX_BYTES": "2000000"}).trace_max_bytes == 2_000_000


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("TRACE_MAX_BYTES", "12x", "whole number of bytes"),
        ("TRACE_MAX_BYTES", "10", "at least 1024"),
        ("TRACE_FILES", "0", "from 1 to 1000"),
        ("TRACE", "/nonexistent-dir/t.jsonl", "does not exist"),
    ],
)
def test_a_bad_trace_setting_names_the_variable(name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        OperatorConfig.from_env({f"INFERENCE_OPERATOR_{name}": value})
    assert f"INFERENCE_OPERATOR_{name}=" in str(caught.value)


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--trace-max-bytes", "12x"), ("--trace-files", "none"), ("--trace", "/nonexistent-dir/t.jsonl")],
)
def test_a_bad_run_trace_flag_is_an_error_naming_the_flag(
    flag: str, value: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("TRACE", "TRACE_MAX_BYTES", "TRACE_FILES"):
        monkeypatch.delenv(f"INFERENCE_OPERATOR_{name}", raising=False)
    code, _, err = run(capsys, "run", flag, value)
    assert code == 2
    assert err.startswith(f"error: {flag}: INFERENCE_OPERATOR_") and value in err
    assert len(err.strip().splitlines()) == 1


def test_every_record_is_one_line_of_strict_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.jsonl"
    run(capsys, "demo", "--scenario", "drift", "--trace", str(path))
    for line in path.read_text().splitlines():
        record = json.loads(line, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
        assert isinstance(record["seq"], int) and isinstance(record["t"], int | float) and record["type"]


def test_a_failed_release_is_a_failed_write_and_the_terminating_status_is_recorded() -> None:
    sink = ListSink()
    balancers: list[FaultyLoadBalancer] = []

    def faulty(sim: Simulation) -> FaultyLoadBalancer:
        balancers.append(FaultyLoadBalancer(sim.lb, clock=sim.clock))
        return balancers[-1]

    sim = Simulation(
        tracer=lambda clock: Recorder(sink, clock, backend="simulator"), interpose=Interposer(load_balancer=faulty)
    )
    balancer = balancers[-1]
    sim.apply(make_inference_service("a", image="vllm", model="m", replicas=1))
    sim.run_until_quiescent()
    balancer.fail_next(1, calls=frozenset({"release"}))
    sim.delete(KIND, "default", "a")
    sim.run_until_quiescent()
    releases = [r for r in sink.records if r["type"] == "write" and r["verb"] == "release"]
    assert [r["result"] for r in releases] == ["error", "ok"]
    failed_pass = releases[0]["pass"]
    terminating = [r for r in sink.records if r.get("pass") == failed_pass and r.get("phase") == "status"]
    assert terminating and terminating[0]["status"]["phase"] == "Terminating"
    assert any(r.get("how") == "rate_limited" and r.get("pass") == failed_pass for r in sink.records)
    assert sim.get(KIND, "default", "a") is None
