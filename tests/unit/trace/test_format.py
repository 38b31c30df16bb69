"""The trace format and where it is written (inference_operator.trace.recorder, trace.sink).

Covers: a trace written to a file reads back as the same records, header first; a reader
refuses a file of another format or version; redaction (env values of an InferenceService
never appear anywhere in a trace, also not in a diff of the env; Secret and ConfigMap data
are redacted; references to a Secret key stay); the ring bound (each file within its size,
at most N files, the newest records kept, every file starts with the header); the no-op
tracer is the default everywhere and leaves the queue without hooks; the queue's snapshot is
bounded and ordered; metrics and a tracer both hear the queue.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inference_operator.api.constants import KIND
from inference_operator.api.samples import make_inference_service
from inference_operator.control.controller import Controller
from inference_operator.control.metrics import Metrics
from inference_operator.control.workqueue import RateLimitingQueue
from inference_operator.core.ports import Result
from inference_operator.sim import Simulation
from inference_operator.sim.backend import FakeBackend
from inference_operator.sim.clock import FakeClock
from inference_operator.trace.recorder import NULL_TRACER, Recorder
from inference_operator.trace.redact import REDACTED, redact, redact_at
from inference_operator.trace.sink import FileSink, ListSink, RingSink, TraceError, read_trace, ring_files

Obj = dict[str, Any]
SECRET = "s3cret"


def traced_simulation(sink: ListSink | FileSink) -> Simulation:
    return Simulation(ready_after=5.0, tracer=lambda clock: Recorder(sink, clock, backend="simulator"))


def with_token(value: str = SECRET, replicas: int = 2) -> Obj:
    manifest = make_inference_service("llama", image="vllm:0.6.3", model="Llama-3", replicas=replicas)
    manifest["spec"]["env"] = [{"name": "TOKEN", "value": value}]
    return manifest


def test_a_trace_written_to_a_file_reads_back_as_the_same_records(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    memory = ListSink()
    for sink in (memory, FileSink(path)):
        sim = traced_simulation(sink)
        sim.apply(with_token())
        sim.run_until_quiescent()
        sim.tracer.close()
    back = read_trace(path)
    assert back == memory.records
    header = back[0]
    assert header["type"] == "header"
    assert header["format"] == "inference-operator-trace" and header["version"] == 2
    assert header["backend"] == "simulator" and header["clock"] == "fake"
    assert header["started"] and header["operatorVersion"]
    assert [r["seq"] for r in back] == list(range(1, len(back) + 1))
    assert all(line.strip() for line in path.read_text().splitlines())


def test_a_reader_refuses_another_format_or_version(tmp_path: Path) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"type": "header", "format": "something-else", "version": 1}) + "\n")
    with pytest.raises(TraceError, match="something-else"):
        read_trace(other)
    newer = tmp_path / "newer.jsonl"
    newer.write_text(json.dumps({"type": "header", "format": "inference-operator-trace", "version": 3}) + "\n")
    with pytest.raises(TraceError, match="version 3; this reader knows 1, 2"):
        read_trace(newer)
    headless = tmp_path / "headless.jsonl"
    headless.write_text(json.dumps({"type": "event"}) + "\n")
    with pytest.raises(TraceError, match="header"):
        read_trace(headless)


def test_an_env_value_never_appears_in_the_trace_file(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    sim = traced_simulation(FileSink(path))
    sim.apply(with_token(SECRET))
    sim.run_until_quiescent()
    sim.apply(with_token("n3w-s3cret"))  # the env changes: the diff phase compares the two values
    sim.run_until_quiescent()
    # The Deployment really got the new value: only the trace is redacted.
    container = sim.get("Deployment", "default", "llama")["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    assert container["env"] == [{"name": "TOKEN", "value": "n3w-s3cret"}]
    sim.delete(KIND, "default", "llama")
    sim.run_until_quiescent()
    sim.tracer.close()
    text = path.read_text()
    assert SECRET not in text and "n3w-s3cret" not in text
    assert REDACTED in text
    records = read_trace(path)
    env_diffs = [f for r in records if r.get("phase") == "diff" for f in r.get("fields") or [] if ".env" in f["path"]]
    assert env_diffs, "the env change shows in a diff, redacted"


def test_secret_data_is_redacted_and_references_are_kept() -> None:
    secret = {"kind": "Secret", "data": {"token": "czNjcmV0"}, "stringData": {"x": SECRET}}
    assert SECRET not in json.dumps(redact(secret)) and "czNjcmV0" not in json.dumps(redact(secret))
    config_map = {"kind": "ConfigMap", "data": {"key": SECRET}}
    assert redact(config_map)["data"] == {"key": REDACTED}
    env = {
        "env": [{"name": "A", "value": SECRET}, {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    }
    assert redact(env) == {
        "env": [
            {"name": "A", "value": REDACTED},
            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        ]
    }
    path = '.spec.template.spec.containers[name="server"].env'
    assert SECRET not in json.dumps(redact_at(path, [{"name": "A", "value": SECRET}]))
    assert redact_at(path + '[name="A"].value', SECRET) == REDACTED
    assert redact_at(path + '[name="A"]', {"name": "A", "value": SECRET}) == {"name": "A", "value": REDACTED}


def records(n: int, size: int = 100) -> list[Obj]:
    return [{"seq": i, "type": "note", "text": "x" * size} for i in range(1, n + 1)]


def test_the_ring_keeps_each_file_within_its_size_and_at_most_n_files(tmp_path: Path) -> None:
    path = tmp_path / "ring.jsonl"
    sink = RingSink(path, max_bytes=2048, files=3)
    header = {"seq": 0, "type": "header", "format": "inference-operator-trace", "version": 1}
    sink.write(header)
    for record in records(500):
        sink.write(record)
    sink.close()
    files = ring_files(path)
    assert [f.name for f in files] == ["ring.jsonl.2", "ring.jsonl.1", "ring.jsonl"]
    assert not (tmp_path / "ring.jsonl.3").exists()
    assert all(f.stat().st_size <= 2048 for f in files)
    for f in files:
        assert json.loads(f.read_text().splitlines()[0]) == header
    kept = read_trace(path, ring=True)
    assert kept[0] == header
    seqs = [r["seq"] for r in kept[1:]]
    assert seqs == list(range(seqs[0], 501)), "the newest records, in order, none missing in between"
    assert sink.rotations > 0


def test_a_new_ring_replaces_the_files_of_the_previous_recording(tmp_path: Path) -> None:
    path = tmp_path / "ring.jsonl"
    for stale in ("ring.jsonl.1", "ring.jsonl.7"):
        (tmp_path / stale).write_text("old\n")
    sink = RingSink(path, max_bytes=4096, files=2)
    sink.write({"seq": 0, "type": "header", "format": "inference-operator-trace", "version": 1})
    sink.close()
    assert ring_files(path) == [path]


def test_a_ring_of_one_file_keeps_only_the_newest_records(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    sink = RingSink(path, max_bytes=1024, files=1)
    sink.write({"seq": 0, "type": "header", "format": "inference-operator-trace", "version": 1})
    for record in records(100):
        sink.write(record)
    sink.close()
    assert ring_files(path) == [path] and path.stat().st_size <= 1024
    assert read_trace(path)[-1]["seq"] == 100


def test_a_recorder_on_a_ring_bounds_what_a_long_run_leaves_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    sim = Simulation(tracer=lambda c: Recorder(RingSink(path, max_bytes=8192, files=2), c, backend="simulator"))
    for i in range(20):
        sim.apply(make_inference_service(f"s-{i}", image="vllm", model="m", replicas=1))
    sim.run_until_quiescent()
    sim.tracer.close()
    files = ring_files(path)
    assert len(files) == 2 and sum(f.stat().st_size for f in files) <= 2 * 8192
    assert read_trace(path, ring=True)[0]["type"] == "header"


def test_tracing_is_off_by_default_and_leaves_nothing_in_between() -> None:
    sim = Simulation()
    assert sim.tracer is NULL_TRACER and not NULL_TRACER.enabled
    assert sim.controller.tracer is NULL_TRACER and sim.reconciler.tracer is NULL_TRACER
    assert isinstance(sim.reconciler.backend, FakeBackend), "no tracing wrapper around the Backend"
    assert sim.controller.queue.hooks is None, "no queue hooks: adds cost nothing extra"
    assert sim.cluster.tracer is NULL_TRACER and sim.api.on_collected is None


def test_the_queue_snapshot_is_bounded_and_in_order() -> None:
    clock = FakeClock()
    queue = RateLimitingQueue(clock, name="q")
    for i in range(30):
        queue.add(f"ns/r{i:02d}")
    for i in range(30):
        queue.add_after(f"ns/w{i:02d}", 30.0 - i)
    contents = queue.contents(limit=5)
    assert contents["ready"] == ["ns/r00", "ns/r01", "ns/r02", "ns/r03", "ns/r04"]
    assert contents["readyCount"] == 30 and contents["waitingCount"] == 30
    assert [w["key"] for w in contents["waiting"]] == ["ns/w29", "ns/w28", "ns/w27", "ns/w26", "ns/w25"]  # type: ignore[index]
    assert contents["waiting"][0] == {"key": "ns/w29", "dueIn": 1.0, "retries": 0}  # type: ignore[index]


def test_with_metrics_and_a_tracer_both_are_told_of_the_queue() -> None:
    clock = FakeClock()
    metrics = Metrics(clock)
    sink = ListSink()
    tracer = Recorder(sink, clock, backend="simulator")
    controller = Controller(
        "c",
        lambda ns, name: Result(requeue_after=2.0),
        RateLimitingQueue(clock, name="c"),
        metrics=metrics,
        tracer=tracer,
    )
    controller.enqueue("ns/a")
    assert controller.step()
    assert metrics.sample("workqueue_adds_total", name="c", controller="inferenceservice") == 1
    kinds = [(r["type"], r.get("how")) for r in sink.records[1:]]
    assert kinds == [("enqueue", "add"), ("dequeue", None), ("enqueue", "after"), ("result", None)]
    assert sink.records[-1]["outcome"] == "requeue_after" and sink.records[-1]["requeueAfter"] == 2.0


def test_a_write_and_its_event_are_linked_in_whichever_order_they_arrive() -> None:
    sink = ListSink()
    tracer = Recorder(sink, FakeClock(), backend="cluster")
    dep = {"metadata": {"namespace": "ns", "name": "a", "resourceVersion": "7"}}
    tracer.write("apply", "Deployment", "ns/a", rv="7", error=None, detail={})
    tracer.event("Deployment", "ADDED", dep, enqueued="ns/a")  # after the write: names it
    dep8 = {"metadata": {"namespace": "ns", "name": "a", "resourceVersion": "8"}}
    tracer.event("Deployment", "MODIFIED", dep8, enqueued="ns/a")  # the watch beat the answer
    tracer.write("apply", "Deployment", "ns/a", rv="8", error=None, detail={})
    first_write, first_event, early_event, late_write = sink.records[1:]
    assert first_event["cause"] == first_write["id"]
    assert "cause" not in early_event and late_write["event"] == early_event["seq"]
    tracer.write("apply", "Deployment", "ns/a", rv=None, error=RuntimeError("refused"), detail={})
    assert "event" not in sink.records[-1] and sink.records[-1]["result"] == "error"
