"""The demo: four scenarios (create, scale and upgrade, delete, drift), run on the simulator, printed as a timeline.

Each scenario builds a fresh Simulation, acts like a user (``kubectl apply``, ``delete``,
``scale``), runs the control loop until it is quiet, prints what the operator did and when, and
checks the outcome. ``run_manifest`` does the same for a user's own manifest (read by
:mod:`.manifests`): its objects applied in order, each namespace it names created first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE
from inference_operator.api.samples import make_inference_service
from inference_operator.core.errors import ApiError
from inference_operator.core.objects import Obj
from inference_operator.manifests import Manifest
from inference_operator.sim import Simulation
from inference_operator.sim.clock import FakeClock
from inference_operator.trace.recorder import Recorder, Tracer
from inference_operator.trace.sink import FileSink

NS, NAME = "default", "llama"


@dataclass
class Report:
    """What one scenario printed and whether its checks held."""

    name: str
    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    trace: str | None = None
    """Record the scenario's simulation to this file (``demo --trace``); None: no recording."""
    _tracers: list[Tracer] = field(default_factory=list)

    def simulation(self, **options: Any) -> Simulation:
        """A fresh Simulation for the scenario, recording to ``trace`` when one is set."""
        if self.trace is None:
            return Simulation(**options)
        return Simulation(tracer=self._recorder(self.trace), **options)

    def _recorder(self, path: str) -> Callable[[FakeClock], Tracer]:
        def make(clock: FakeClock) -> Tracer:
            tracer = Recorder(FileSink(path), clock, backend="simulator")
            tracer.note(f"scenario {self.name}")
            self._tracers.append(tracer)
            return tracer

        return make

    def close(self) -> None:
        for tracer in self._tracers:
            tracer.close()

    def check(self, ok: bool, what: str) -> None:
        self.lines.append(f"  {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            self.failures.append(what)

    def timeline(self, sim: Simulation) -> None:
        self.lines.extend(str(entry) for entry in sim.timeline)
        sim.clear_timeline()


def _llama(replicas: int = 2, image: str = "vllm:0.6.3") -> Obj:
    return make_inference_service(NAME, image=image, model="Llama-3", replicas=replicas)


def _status(sim: Simulation) -> Obj:
    obj = sim.get(KIND, NS, NAME) or {}
    status: Obj = obj.get("status") or {}
    return status


def _ready(sim: Simulation) -> str | None:
    for c in _status(sim).get("conditions") or []:
        if c["type"] == "Ready":
            return str(c["status"])
    return None


def _created(sim: Simulation, replicas: int) -> None:
    """Setup shared by later scenarios: an InferenceService that is already Ready."""
    sim.apply(_llama(replicas))
    sim.run_until_quiescent()
    sim.clear_timeline()


def scenario_create(report: Report) -> None:
    sim = report.simulation(ready_after=5.0)
    sim.apply(_llama(replicas=2))
    runs = sim.run_until_quiescent()
    report.timeline(sim)
    st = _status(sim)
    report.check(_ready(sim) == "True", f"Ready=True (got {_ready(sim)}, phase {st.get('phase')})")
    report.check(st.get("readyReplicas") == 2, f"readyReplicas == 2 (got {st.get('readyReplicas')})")
    report.check(
        sim.get(DEPLOYMENT, NS, NAME) is not None and sim.get(SERVICE, NS, NAME) is not None,
        "Deployment and Service exist",
    )
    report.check(f"{NS}/{NAME}" in sim.lb.registrations, "load balancer registered")
    report.lines.append(f"  {runs} reconciles")


def scenario_scale_upgrade(report: Report) -> None:
    sim = report.simulation(ready_after=5.0)
    _created(sim, replicas=2)
    sim.apply(_llama(replicas=4, image="vllm:0.7.0"))
    runs = sim.run_until_quiescent()
    report.timeline(sim)
    st = _status(sim)
    dep = sim.get(DEPLOYMENT, NS, NAME) or {}
    image = dep.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image")
    report.check(st.get("observedGeneration") == 2, f"observedGeneration == 2 (got {st.get('observedGeneration')})")
    report.check(runs > 1, f"more than one reconcile (got {runs})")
    report.check(
        image == "vllm:0.7.0" and dep.get("spec", {}).get("replicas") == 4,
        f"Deployment patched to vllm:0.7.0 x4 (got {image} x{dep.get('spec', {}).get('replicas')})",
    )
    report.check(
        _ready(sim) == "True" and st.get("readyReplicas") == 4,
        f"Ready=True with 4 ready replicas (got {_ready(sim)}, {st.get('readyReplicas')})",
    )


def scenario_delete(report: Report) -> None:
    sim = report.simulation(ready_after=5.0)
    _created(sim, replicas=2)
    sim.delete(KIND, NS, NAME)
    sim.note(f"kubectl delete inferenceservice {NAME}")
    sim.run_until_quiescent(until=sim.now)  # what happens at once: the balancer, the finalizer, the GC
    collected = [k for k in (DEPLOYMENT, SERVICE) if sim.get(k, NS, NAME) is None]
    if collected:
        sim.note(f"garbage collector deleted {' and '.join(collected)} {NAME}")
    sim.run_until_quiescent()  # the pods stop within their grace period
    report.timeline(sim)
    gone = [k for k in (KIND, DEPLOYMENT, SERVICE) if sim.get(k, NS, NAME) is None]
    report.check(len(gone) == 3, f"InferenceService, Deployment and Service gone (gone: {', '.join(gone)})")
    releases = sim.lb.release_calls.count(f"{NS}/{NAME}")
    report.check(releases == 1, f"load balancer released exactly once (got {releases})")
    report.check(not sim.lb.registrations, "no load balancer record left behind")


def scenario_drift(report: Report) -> None:
    sim = report.simulation(ready_after=5.0)
    _created(sim, replicas=3)
    sim.api.patch(DEPLOYMENT, NS, NAME, {"spec": {"replicas": 99}})
    sim.note(f"kubectl scale deployment {NAME} --replicas=99")
    sim.run_until_quiescent()
    sim.delete(SERVICE, NS, NAME)
    sim.note(f"kubectl delete service {NAME}")
    sim.run_until_quiescent()
    report.timeline(sim)
    dep = sim.get(DEPLOYMENT, NS, NAME) or {}
    replicas = dep.get("spec", {}).get("replicas")
    report.check(replicas == 3, f"Deployment replicas back to 3 (got {replicas})")
    report.check(sim.get(SERVICE, NS, NAME) is not None, "deleted Service recreated")
    report.check(_ready(sim) == "True", f"Ready=True again (got {_ready(sim)})")


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    run: Callable[[Report], None]


SCENARIOS = (
    Scenario("create", "create: 2 replicas of vllm:0.6.3 until Ready", scenario_create),
    Scenario("scale-upgrade", "scale + upgrade: replicas 2→4, image vllm:0.6.3→vllm:0.7.0", scenario_scale_upgrade),
    Scenario("delete", "delete: load balancer released, then children garbage-collected", scenario_delete),
    Scenario("drift", "drift: Deployment scaled to 99 by hand, Service deleted by hand", scenario_drift),
)
SCENARIO_NAMES = tuple(s.name for s in SCENARIOS)


def trace_paths(path: str, names: list[str]) -> dict[str, str]:
    """Where ``demo --trace PATH`` records each scenario: PATH itself for one scenario, else
    PATH with the scenario's name before the suffix (``trace.jsonl`` → ``trace.create.jsonl``)."""
    if len(names) == 1:
        return {names[0]: path}
    base = Path(path)
    return {name: str(base.with_name(f"{base.stem}.{name}{base.suffix}")) for name in names}


def run_scenarios(
    names: list[str] | None,
    out: TextIO,
    scenarios: tuple[Scenario, ...] = SCENARIOS,
    *,
    trace: str | None = None,
    traced: dict[str, str] | None = None,
) -> int:
    """Run the named scenarios (all by default); returns how many failed their checks.

    ``trace``: record each scenario (see :func:`trace_paths`); ``traced`` is told which file each went to."""
    failed = 0
    chosen = [s for s in scenarios if not names or s.name in names]
    paths = trace_paths(trace, [s.name for s in chosen]) if trace is not None else {}
    for scenario in chosen:
        report = Report(scenario.name, trace=paths.get(scenario.name))
        try:
            scenario.run(report)
        finally:
            report.close()
        if traced is not None and scenario.name in paths:
            traced[scenario.name] = paths[scenario.name]
        print(f"== {scenario.title}", file=out)
        for line in report.lines:
            print(line, file=out)
        print(file=out)
        failed += bool(report.failures)
    return failed


class ManifestRefused(Exception):
    """The simulated API server refused an object of the manifest; the message is the one line
    ``kubectl apply`` prints for it."""


def refusal(err: ApiError, obj: Obj, source: str) -> str:
    meta = obj.get("metadata") or {}
    message = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
    return (
        f"{source}: Error from server ({err.reason or 'InternalError'}): error when applying "
        f'{obj.get("kind")} "{meta.get("name")}": {message}'
    )


def apply_object(sim: Simulation, obj: Obj, source: str) -> None:
    """``kubectl apply`` of one object; first the ``kubectl create namespace`` a user would
    type when the object names a namespace the cluster does not have yet."""
    namespace = obj["metadata"].get("namespace") if obj["kind"] != "Namespace" else None
    if namespace and sim.get("Namespace", "", namespace) is None:
        sim.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        sim.note(f"kubectl create namespace {namespace}")
    try:
        sim.apply(obj)
    except ApiError as err:
        raise ManifestRefused(refusal(err, obj, source)) from None


def run_manifest(manifest: Manifest, out: TextIO, *, ready_after: float = 5.0, trace: str | None = None) -> int:
    """Apply a user's manifest (its objects in order) to a fresh simulation and show how each
    InferenceService in it converges (``trace``: recording it to that file); 0 when all are Ready.

    The simulated cluster runs on its default nodes (two, 8 ``nvidia.com/gpu`` each), or on
    exactly the Nodes the manifest has (created first, as kubelets register them): pods that
    fit nowhere stay Pending, and the pods are listed on their nodes or with the scheduler's
    words.

    :class:`ManifestRefused` when the simulated API server refuses an object."""
    nodes = manifest.nodes
    report = Report("manifest", trace=trace)
    sim = report.simulation(ready_after=ready_after, **({"node_layout": []} if nodes else {}))
    try:
        for line in manifest.dropped:
            sim.note(f"dropped what the API server sets itself, as kubectl apply does: {line}")
        for node in nodes:
            try:
                sim.api.create(node, field_manager="kubelet")
            except ApiError as err:
                raise ManifestRefused(refusal(err, node, manifest.source)) from None
        for obj in manifest.objects:
            if obj["kind"] != "Node":
                apply_object(sim, obj, manifest.source)
        sim.run_until_quiescent()
    finally:
        report.close()
    for entry in sim.timeline:
        print(entry, file=out)
    keys = list(
        dict.fromkeys(
            (o["metadata"].get("namespace") or NS, o["metadata"]["name"]) for o in manifest.inference_services
        )
    )
    ready = 0
    for namespace, name in keys:
        obj = sim.get(KIND, namespace, name) or {}
        status = obj.get("status") or {}
        prefix = f"{namespace}/{name}: " if len(keys) > 1 else ""
        print(
            f"{prefix}phase={status.get('phase')} ready={status.get('readyReplicas')}/"
            f"{(obj.get('spec') or {}).get('replicas', 1)} url={status.get('url')}",
            file=out,
        )
        for c in status.get("conditions") or []:
            print(f"  {c['type']}={c['status']} {c['reason']}: {c['message']}", file=out)
        ready += status.get("phase") == "Ready"
    print_pods(sim, out)
    for key, why in sim.stalled().items():
        print(f"{key} did not converge: it {why}", file=out)
    return 0 if ready == len(keys) else 1


def print_pods(sim: Simulation, out: TextIO) -> None:
    """Each pod on its node, or Pending with the scheduler's message."""
    for pod in sim.api.list("Pod"):
        meta, status = pod["metadata"], pod.get("status") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            print(f"pod {meta['name']} on {node}: {status.get('phase')}", file=out)
            continue
        scheduled: Obj = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
        print(f"pod {meta['name']} Pending: {scheduled.get('message', 'not scheduled yet')}", file=out)
