"""Drivers for the crash-point, API-server-restart and registry-outage tests (test_crash_points).

Why a module of its own: those tests share more machinery than checks. An operator scoped to
one namespace that is revived when it dies (``Supervised``), a registry that can go away and
come back on the same port with the same records (``RestartableRegistry``), one
InferenceService driven along create → Ready → update → Ready → delete (``run_path``), and
the invariants checked at each stop of that path (``check_live``, ``check_gone``).

Waiting here polls with deadlines, like ``harness.wait_until``, with one difference: an
operator that exited is started again between two polls, outside the probe, so a failed
restart fails the test instead of being taken for "not yet".
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from inference_operator.core.ports import Registration
from inference_operator.kube.crashpoint import EXIT_CODE
from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry import RegistryServer

from .harness import FINALIZER, Kubectl, OperatorProcess, WaitTimeout, free_port, is_ready

T = TypeVar("T")
Obj = dict[str, Any]
CRASH_ENV = "INFERENCE_OPERATOR_CRASH_AFTER_WRITES"
CRASH_ON_ENV = "INFERENCE_OPERATOR_CRASH_ON"
DRY_RUN = 1_000_000  # armed (every call logged and counted), never reached
GPU = "nvidia.com/gpu"
PHASE_TIMEOUT = 60.0
COUNTED = re.compile(r"Counted write n=(\d+) crash_after=\d+ call=(.+)$")
CRASHED = re.compile(r"Crashing on purpose after write n=(\d+) matched=\d+ on=.* call=(.+) exit_code=")


class RestartableRegistry:
    """The reference registry on a fixed port and state file: ``stop`` is an outage (connections
    refused), ``start`` brings the same records back at the same URL."""

    def __init__(self, state_file: Path) -> None:
        self.state_file = state_file
        self.port = free_port()
        self.server: RegistryServer | None = None
        self.url = f"http://127.0.0.1:{self.port}"
        self.client = HttpLoadBalancer(self.url, timeout=5)

    def start(self) -> None:
        assert self.server is None, "the registry already runs"
        self.server = RegistryServer(host="127.0.0.1", port=self.port, state_file=self.state_file)
        self.server.start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def records(self, namespace: str) -> dict[str, Registration]:
        """The registry's records in ``namespace``, by name (asked over HTTP, as a person would)."""
        prefix = f"{namespace}/"
        return {k.removeprefix(prefix): r for k, r in self.client.list_registrations().items() if k.startswith(prefix)}

    def calls(self, key: str) -> tuple[int, int]:
        """(register, release) calls the registry answered for ``key`` since it last started."""
        assert self.server is not None
        stats = self.server.stats()
        return stats["register_calls"].get(key, 0), stats["release_calls"].get(key, 0)


@dataclass
class Supervised:
    """One operator process, started again (without the crash hook) whenever it exits."""

    make: Callable[[int], OperatorProcess]
    """Builds the process; the argument is the crash point (0: none)."""
    crash_after: int = 0
    proc: OperatorProcess | None = None
    exits: list[int] = field(default_factory=list)
    revived_at: list[str] = field(default_factory=list)
    phase: str = "start"
    phase_seconds: dict[str, float] = field(default_factory=dict)
    _phase_started: float = field(default_factory=time.monotonic)

    def enter(self, phase: str) -> None:
        """Start timing ``phase`` (the previous one ends here)."""
        now = time.monotonic()
        self.phase_seconds[self.phase] = now - self._phase_started
        self.phase, self._phase_started = phase, now

    def start(self) -> None:
        self.proc = self.make(self.crash_after)
        self.proc.start()

    def revive(self) -> None:
        """Restart the operator if it exited; an exit that was not the planned crash fails."""
        assert self.proc is not None and self.proc.process is not None
        code = self.proc.process.poll()
        if code is None:
            return
        self.proc.process = None
        self.exits.append(code)
        planned = code == EXIT_CODE and self.crash_after > 0 and len(self.exits) == 1
        assert planned, f"the operator exited with {code} unplanned (phase {self.phase}):\n{self.proc.log_tail()}"
        self.revived_at.append(self.phase)
        self.proc = self.make(0)
        self.proc.start()

    def wait(self, check: Callable[[], T | None], *, what: str, timeout: float = PHASE_TIMEOUT) -> T:
        """Poll ``check`` until truthy, reviving the operator between polls."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while True:
            self.revive()
            try:
                result = check()
            except Exception as err:  # noqa: BLE001 - a failing probe (API down, …) is "not yet"
                last = f"{type(err).__name__}: {err}"
            else:
                if result:
                    return result
                last = result
            if time.monotonic() >= deadline:
                tail = self.proc.log_tail() if self.proc else "(no operator)"
                raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last saw: {last!r}\n{tail}")
            time.sleep(0.2)  # a bounded poll interval, not a wait for the condition itself

    def stop(self) -> None:
        """Stop the operator gracefully; one that already exited is only recorded in ``exits``
        (never restarted, never raising: this also runs while a failure is being reported)."""
        if self.proc is None or self.proc.process is None:
            return
        code = self.proc.process.poll()
        if code is None:
            self.proc.stop()
        else:
            self.exits.append(code)
            self.proc.process = None


# --- the invariants ---------------------------------------------------------------------------


def controlled_by(child: Obj, uid: str) -> bool:
    refs = child["metadata"].get("ownerReferences") or []
    return any(r.get("controller") and r.get("uid") == uid for r in refs)


def check_live(kubectl: Kubectl, registry: RestartableRegistry, namespace: str, obj: Obj) -> Registration:
    """A Ready InferenceService: exactly one Deployment and one Service, controlled by it and
    equal to its spec for image, replicas and GPUs (a removed GPU limit is gone), and a
    registry record matching what its status says."""
    name, uid, spec = obj["metadata"]["name"], obj["metadata"]["uid"], obj["spec"]
    assert obj["metadata"].get("finalizers") == [FINALIZER], obj["metadata"]
    deployments = kubectl.json("get", "deployments", "-n", namespace)["items"]
    services = kubectl.json("get", "services", "-n", namespace)["items"]
    for kind, children in (("Deployment", deployments), ("Service", services)):
        names = [c["metadata"]["name"] for c in children]
        assert names == [name], f"expected exactly one {kind} {name} in {namespace}, found {names}"
        assert controlled_by(children[0], uid), f"{kind} {name} is not controlled by uid {uid}"
    (deployment,) = deployments
    assert deployment["spec"]["replicas"] == spec["replicas"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == spec["image"]
    gpus = ((container.get("resources") or {}).get("limits") or {}).get(GPU)
    expected = str(spec["gpu"]) if spec.get("gpu") else None
    assert gpus == expected, f"Deployment limits[{GPU}] is {gpus!r}, spec.gpu is {spec.get('gpu')!r}"
    (service,) = services
    assert [p["port"] for p in service["spec"]["ports"]] == [spec.get("port", 8000)]
    records = registry.records(namespace)
    assert list(records) == [name], f"expected one registry record for {name}, found {sorted(records)}"
    lb = obj["status"]["loadBalancer"]
    assert (lb["id"], lb["target"]) == (records[name].id, records[name].target), (lb, records[name])
    return records[name]


def children_and_record_gone(kubectl: Kubectl, registry: RestartableRegistry, namespace: str) -> bool:
    """No InferenceService, Deployment, Service or registry record left in ``namespace``."""
    kinds = "inferenceservices,deployments,services"
    left = kubectl.json("get", kinds, "-n", namespace)["items"]
    return not left and not registry.records(namespace)


# --- one path ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CrashPlan:
    """Crash right after the ``k``-th call of one kind (``apply Deployment``, ``register``, …),
    which was call ``position`` of the dry run. Counting by kind makes it the same point in
    every run, however many status writes a rollout takes this time."""

    kind: str
    k: int
    position: int

    @property
    def prefix(self) -> str:
        return self.kind + " "


def kind_of(call: str) -> str:
    """``update_status InferenceService ns/name`` → ``update_status InferenceService``."""
    return call.rsplit(" ", 1)[0]


def plans_from(writes: list[str]) -> list[CrashPlan]:
    """One crash point after every call of a dry run, as the k-th call of its kind."""
    seen: dict[str, int] = {}
    plans = []
    for position, call in enumerate(writes, 1):
        kind = kind_of(call)
        seen[kind] = seen.get(kind, 0) + 1
        plans.append(CrashPlan(kind, seen[kind], position))
    return plans


def manifest(name: str, spec: Obj) -> Obj:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": {"name": name},
        "spec": {"model": "meta-llama/Llama-3.1-8B", **spec},
    }


CREATE: Obj = {"image": "vllm/vllm-openai:v0.6.3", "replicas": 1, "gpu": 1}
UPDATE: Obj = {"image": "vllm/vllm-openai:v0.7.0", "replicas": 2, "gpu": 0}
"""The update changes the image and replicas and removes the GPU limit."""


def ready_at(kubectl: Kubectl, name: str, namespace: str, generation: int) -> Obj | None:
    """The InferenceService once Ready for ``generation`` (observedGeneration == generation)."""
    obj = kubectl.get("infsvc", name, namespace)
    return obj if obj is not None and obj["metadata"]["generation"] == generation and is_ready(obj) else None


@dataclass
class PathOutcome:
    namespace: str
    plan: CrashPlan | None
    crashed_after: str | None
    """The write the operator died after (from its last words), None if it never did."""
    crashed_at: int | None
    """Which of its mutating calls that was, counting all kinds."""
    noticed_in: str | None
    """The phase of the path in which the test saw the exit."""
    seconds: float
    phase_seconds: dict[str, float]
    """How long each stop of the path took (start, create, update, delete, collect)."""
    writes: list[str]
    """Counted writes of the first process, in order (with the hook armed)."""
    register_calls: int
    release_calls: int


def run_path(
    kubectl: Kubectl,
    registry: RestartableRegistry,
    make_operator: Callable[[str, int, str], OperatorProcess],
    *,
    plan: CrashPlan | None,
    label: str,
    name: str = "llama",
) -> PathOutcome:
    """create → Ready → update → Ready → delete → gone for one InferenceService in a namespace
    of its own (``crash-<label>-…``), with an operator that dies as ``plan`` says (never, when
    the path has fewer calls of that kind). Without a plan, a dry run: calls counted, no crash."""
    started = time.monotonic()
    namespace = f"crash-{label}-{uuid.uuid4().hex[:5]}"
    kubectl.run("create", "namespace", namespace)
    crash_after, on = (plan.k, plan.prefix) if plan else (DRY_RUN, "")
    sup = Supervised(lambda n: make_operator(namespace, n, on if n else ""), crash_after)
    first_log: Path | None = None
    try:
        sup.start()
        assert sup.proc is not None
        first_log = sup.proc.log_path
        key = f"{namespace}/{name}"

        sup.enter("create")
        kubectl.apply(manifest(name, CREATE), namespace)
        obj = sup.wait(lambda: ready_at(kubectl, name, namespace, 1), what="Ready")
        created = check_live(kubectl, registry, namespace, obj)

        sup.enter("update")
        kubectl.apply(manifest(name, UPDATE), namespace)
        obj = sup.wait(lambda: ready_at(kubectl, name, namespace, 2), what="generation 2 Ready")
        updated = check_live(kubectl, registry, namespace, obj)
        assert updated.id == created.id, f"the record was replaced ({created.id} → {updated.id}), not kept"

        sup.enter("delete")
        kubectl.run("delete", "infsvc", name, "-n", namespace, "--wait=false")
        sup.wait(lambda: kubectl.get("infsvc", name, namespace) is None, what="the InferenceService to be gone")
        # Gone means the finalizer left; a record left now was released too late or never,
        # since nothing would ever release it.
        assert registry.client.lookup(key) is None, f"record {key} leaked after the finalizer left"
        sup.enter("collect")
        sup.wait(lambda: children_and_record_gone(kubectl, registry, namespace), what="children collected")
        register_calls, release_calls = registry.calls(key)
        assert release_calls >= 1, "the object is gone but its record was never released"
        sup.enter("stop")
        sup.stop()
        assert sup.exits in ([], [EXIT_CODE]), f"the operator exited with {sup.exits}, not once as planned"
    except BaseException:
        if sup.proc is not None and sup.proc.process is not None:
            sup.proc.process.kill()
            sup.proc.process.wait(10)
        raise
    finally:
        kubectl.run("delete", "namespace", namespace, "--wait=false", check=False)
    text = first_log.read_text(errors="replace") if first_log else ""
    writes = [m.group(2) for line in text.splitlines() if (m := COUNTED.search(line))]
    crashed = [m for line in text.splitlines() if (m := CRASHED.search(line))]
    return PathOutcome(
        namespace=namespace,
        plan=plan,
        crashed_after=crashed[0].group(2) if crashed else None,
        crashed_at=int(crashed[0].group(1)) if crashed else None,
        noticed_in=sup.revived_at[0] if sup.revived_at else None,
        seconds=time.monotonic() - started,
        phase_seconds=sup.phase_seconds,
        writes=writes,
        register_calls=register_calls,
        release_calls=release_calls,
    )
