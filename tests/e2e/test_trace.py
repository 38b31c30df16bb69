"""``inference-operator run --trace`` on a real control plane (the flight recorder).

Covers: the operator started with ``--trace`` (a ring of 4 MiB files, at most 3) records, while
an InferenceService with a secret env value is applied and becomes Ready: a cluster header,
watch events for it with resourceVersions, dequeues with the queue's contents, the four phases
of each pass, the writes with their results (the Deployment and Service applies, the status
updates, the load balancer registration), at least one write whose returned
resourceVersion is that of a watch event, and the Ready status written; the secret value
appears nowhere in the files.

The same trace (the whole ring) becomes a page with ``inference-operator trace view``, opened in
headless Chromium (tests/browser.py; the Debian package, installed when missing): filtered to the
object, every one of its records stepped through with real → presses shows its phase, queue and
data-flow edge, spec and status converge to Ready at its last step, a watch event links to the
write that caused it, and the page logs no error and loads nothing. Screenshot:
``artifacts/viewer/e2e-<seq>.png`` under the repository root.
"""

from __future__ import annotations

from pathlib import Path

from inference_operator.cli import main
from inference_operator.lb.registry import RegistryServer
from inference_operator.trace.recorder import PHASES
from inference_operator.trace.sink import read_trace, ring_files

from ..browser import chromium
from ..viewerpage import ARTIFACTS, check_clean, open_viewer, step_through
from .conftest import Cluster, suite_operator
from .harness import OperatorProcess
from .workloads import llama, wait_ready

SECRET = "s3cret-e2e-value"


def test_run_trace_records_the_control_loop_on_a_real_cluster(
    cluster: Cluster,
    namespace: str,
    operator: OperatorProcess,
    operator_kubeconfig: Path,
    registry: RegistryServer,
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    operator.stop()  # the session's operator holds the Lease: it hands it over to the traced one
    traced = suite_operator(cluster, operator_kubeconfig, registry, tmp_path / "traced.log", identity="e2e-traced")
    traced.extra_args += ["--trace", str(trace), "--trace-max-bytes", "4Mi", "--trace-files", "3"]
    try:
        traced.start()
        manifest = llama("traced", replicas=1, env=[{"name": "TOKEN", "value": SECRET}])
        cluster.kubectl.apply(manifest, namespace)
        wait_ready(cluster, "traced", namespace)
    finally:
        traced.stop()
        operator.start()

    files = ring_files(trace)
    assert 1 <= len(files) <= 3
    assert all(SECRET not in f.read_text() for f in files), "an env value was recorded"
    records = read_trace(trace, ring=True)
    header = records[0]
    assert header["backend"] == "cluster" and header["clock"] == "monotonic"
    key = f"{namespace}/traced"
    mine = [r for r in records if r.get("key") == key]
    events = [r for r in mine if r["type"] == "event"]
    assert {"InferenceService", "Deployment", "Service"} <= {e["kind"] for e in events}
    assert all(e["rv"] for e in events)
    dequeues = [r for r in mine if r["type"] == "dequeue"]
    assert dequeues and all("ready" in d["queue"] and "waiting" in d["queue"] for d in dequeues)
    assert {r["phase"] for r in mine if r["type"] == "phase"} == set(PHASES)
    writes = [r for r in mine if r["type"] == "write"]
    done = {(w["verb"], w["kind"]) for w in writes if w["result"] == "ok"}
    assert {("apply", "Deployment"), ("apply", "Service")} <= done
    assert ("update_status", "InferenceService") in done and ("register", "LoadBalancer") in done
    event_versions = {(e["kind"], e["rv"]) for e in events}
    assert any((w["kind"], w.get("rv")) in event_versions for w in writes), "a write's version in a watch event"
    by_seq = {r["seq"]: r for r in records}
    by_id = {w["id"]: w for w in writes}
    links = [(w, by_seq[w["event"]]) for w in writes if "event" in w]
    links += [(by_id[e["cause"]], e) for e in events if e.get("cause") in by_id]
    assert links, "a write linked to the event it caused, one way or the other"
    assert all(w["rv"] == e["rv"] and w["kind"] == e["kind"] for w, e in links)
    statuses = [r for r in mine if r.get("phase") == "status" and r["written"]]
    assert statuses and statuses[-1]["status"]["phase"] == "Ready"
    passes = {d["pass"] for d in dequeues}
    assert passes <= {r["pass"] for r in mine if r["type"] == "result"}, "every pass ended with a result"

    html = tmp_path / "trace.html"
    assert main(["trace", "view", str(trace), "-o", str(html)]) == 0
    with chromium() as browser:
        page = open_viewer(browser, html)
        shots = step_through(page, records, key=key)
        assert shots[-1]["statusPhase"] == "Ready" and shots[-1]["changed"] == 0, shots[-1]
        assert any(s["changed"] for s in shots), "spec and status differed before converging"
        assert any(s["links"] for s in shots), "a write and the event it caused are linked"
        page.screenshot(ARTIFACTS / f"e2e-{records[-1]['seq']}.png")
        check_clean(page, html)
