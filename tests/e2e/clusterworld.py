"""The scenario world on the real control plane: kubectl, the session's operator and registry.

A user's actions are kubectl commands in the scenario's own namespace. Looking is done two ways:

- the InferenceServices of the namespace are **watched** from before the first action, on a
  thread, so every status write is seen and no Ready transition can be missed by sampling;
- the object, its children and the registry are **read** (one GET each) while polling for the
  step's condition, with a deadline.

A step is over when its condition holds, the watch has caught up with the object's version that
satisfied it, and the operator is idle: nothing queued and no reconcile, Event or API write for
a few polls in a row (its /metrics), so that what a pass does after the condition became true
(an Event on its way) is still part of the step. The registry counts calls per key; the world's
own calls (a record forgotten on purpose) are subtracted.

A GPU pool (``gpu_pool``) is kwok Nodes of the scenario's own, named ``<namespace>-<shape>``,
labelled and tainted for the namespace alone (``tests/shared/scenarios/scheduling.py``), so no
other test's pod lands on them and the scenario's pods land nowhere else; from then on the
namespace's ReplicaSets are watched too, and each step also waits for that watch to catch up.
``close`` deletes the scenario's InferenceServices, waits for their pods to go, then deletes
the pool's Nodes. ``other_nodes`` is the rest of the cluster as the pool found it: the
simulator mirrors it, since kube-scheduler's message counts every node.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import yaml

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE
from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry import RegistryServer
from inference_operator.sim.cluster.nodes import NodeShape, build_node

from ..shared.scenarios.observe import Snapshot, StepRecorder, transition_token
from ..shared.scenarios.scheduling import ReplicaSetSequence, placement, pool_node, shape_of_node
from ..shared.scenarios.world import Refusal, refusal_of
from .conftest import Cluster
from .harness import OperatorProcess, wait_until

Obj = dict[str, Any]
TIMEOUT = 90.0
PATHS = {
    KIND: "/apis/serving.inference-operator.dev/v1/namespaces/{ns}/inferenceservices",
    DEPLOYMENT: "/apis/apps/v1/namespaces/{ns}/deployments",
    SERVICE: "/api/v1/namespaces/{ns}/services",
    "Event": "/api/v1/namespaces/{ns}/events",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "Pod": "/api/v1/namespaces/{ns}/pods",
}
KWOK_NODE = {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}  # as hack/cluster_config.py's
POOL_ADDRESS = "198.18.254.{}"  # the blackholed range of the fake nodes' InternalIPs (hack/cluster_config.py)
QUIET_POLLS = 3  # operator counters unchanged (and nothing queued) this many polls in a row
QUIET_COUNTERS = ("reconcile_total", "api_writes_total", "events_posted_total", "workqueue_depth")


def kwok_node(shape: NodeShape, *, address: str) -> Obj:
    """The Node manifest of ``shape`` for kwok to run, at InternalIP ``address``: kwok's
    node-initialize stage fills in the conditions (Ready) and nodeInfo, and keeps the rest."""
    node = build_node(shape, now="")
    node["metadata"]["annotations"] = dict(KWOK_NODE)
    node["status"] = {
        **{k: v for k, v in node["status"].items() if k != "conditions"},
        "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": shape.name}],
    }
    return node


class _Http:
    """Raw JSON GETs and watches with the kubeconfig's credentials and connection pool."""

    def __init__(self, kubeconfig: str) -> None:
        from inference_operator.kube.client import KubeClient

        transport = KubeClient.from_kubeconfig(kubeconfig).transport  # its client certificate: in the pool
        self.host = transport.server
        self.pool = transport.pool

    def get(self, path: str, **params: str) -> Obj | None:
        url = self.host + path + (f"?{urlencode(params)}" if params else "")
        response = self.pool.request("GET", url, headers={"Accept": "application/json"}, timeout=30)
        if response.status == 404:
            return None
        if response.status != 200:
            raise AssertionError(f"GET {path} answered {response.status}: {response.data[:300]!r}")
        data: Obj = json.loads(response.data)
        return data


class NamespaceWatch:
    """Every watch event of one kind's objects in a namespace, from a resourceVersion on."""

    def __init__(self, http: _Http, namespace: str, kind: str = KIND) -> None:
        self._http = http
        self._kind = kind
        self._path = PATHS[kind].format(ns=quote(namespace))
        listed = http.get(self._path) or {}
        self._rv = listed["metadata"]["resourceVersion"]
        self._events: list[tuple[str, Obj]] = []
        self._taken: dict[str, int] = {}  # per name, how many of its events were taken
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._error: Exception | None = None
        self._thread = threading.Thread(target=self._run, name=f"watch-{namespace}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._watch_once()
        except Exception as err:  # noqa: BLE001 - reported by the next take()
            self._error = err

    def _watch_once(self) -> None:
        params = {"watch": "true", "resourceVersion": self._rv, "timeoutSeconds": "2", "allowWatchBookmarks": "true"}
        url = f"{self._http.host}{self._path}?{urlencode(params)}"
        response = self._http.pool.request("GET", url, preload_content=False, timeout=10)
        try:
            buffer = b""
            for chunk in response.stream(4096):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        self._take_line(json.loads(line))
        finally:
            response.release_conn()

    def _take_line(self, event: Obj) -> None:
        if event["type"] == "ERROR":
            raise AssertionError(f"the watch of {self._kind}s failed: {event['object']}")
        obj = event["object"]
        with self._lock:
            self._rv = obj["metadata"]["resourceVersion"]
            if event["type"] != "BOOKMARK":
                self._events.append((event["type"], obj))

    def seen(self, name: str, resource_version: str | None) -> bool:
        """The watch delivered this version of the object (None: it is absent, so its deletion if
        it ever existed)."""
        with self._lock:
            mine = [(kind, obj) for kind, obj in self._events if obj["metadata"]["name"] == name]
        if resource_version is None:
            return not mine or mine[-1][0] == "DELETED"
        return any(obj["metadata"]["resourceVersion"] == resource_version for _, obj in mine)

    def take(self, name: str | None = None) -> list[tuple[str, Obj]]:
        """The events of ``name`` (None: of every object) not taken yet."""
        if self._error is not None:
            raise self._error
        key = name or ""
        with self._lock:
            mine = [e for e in self._events if name is None or e[1]["metadata"]["name"] == name]
            taken, self._taken[key] = self._taken.get(key, 0), len(mine)
        return mine[taken:]

    def stop(self) -> None:
        self._stop.set()


class ClusterWorld(StepRecorder):
    """:class:`~tests.shared.scenarios.world.World` on the e2e control plane, in ``namespace`` (which must exist)."""

    backend = "cluster"

    def __init__(
        self, cluster: Cluster, namespace: str, *, registry: RegistryServer, operator: OperatorProcess
    ) -> None:
        super().__init__()
        self.cluster = cluster
        self.kubectl = cluster.kubectl
        self.namespace = namespace
        self.registry = registry
        self.operator = operator
        self._http = _Http(str(cluster.kubeconfig))
        self._watch = NamespaceWatch(self._http, namespace)
        self._rs_watch: NamespaceWatch | None = None  # once a pool joined
        self._replicasets = ReplicaSetSequence()
        self._pool: dict[str, str] = {}  # a pool node's name → its name in the pool
        self._removed: set[str] = set()  # pool nodes the scenario deleted
        self.other_nodes: list[NodeShape] = []
        self._own_calls: dict[str, dict[str, int]] = {}
        self._lb_seen: dict[str, dict[str, int]] = {}
        self._events_seen: dict[str, int] = {}

    def close(self) -> None:
        """Stop watching; disarm load balancer faults a failed scenario may have left armed;
        take the pool away once nothing of the scenario runs on it (its pods deleted first)."""
        self._watch.stop()
        if self._rs_watch is not None:
            self._rs_watch.stop()
        self.registry.set_faults()
        if not self._pool:
            return
        self.kubectl.run("delete", "inferenceservices", "--all", "-n", self.namespace, "--wait=false")
        # Pods the scenario made itself (another workload's) have no owner to take them away.
        self.kubectl.run("delete", "pods", "--all", "-n", self.namespace, "--wait=false")
        wait_until(
            lambda: not (self._http.get(PATHS["Pod"].format(ns=quote(self.namespace))) or {}).get("items"),
            timeout=TIMEOUT,
            what=f"the pods in {self.namespace} to be gone before their nodes",
        )
        left = [node for node in self._pool if node not in self._removed]
        if left:
            self.kubectl.run("delete", "node", *left, "--wait=true", "--timeout=60s")

    # -- a user's actions ---------------------------------------------------------------------

    def apply(self, manifest: Obj) -> Refusal | None:
        result = self.kubectl.apply(manifest, self.namespace, check=False)
        if result.returncode == 0:
            return None
        words = result.stderr.strip()
        code = 422 if " is invalid: " in words else 403 if "forbidden" in words else 0
        return refusal_of(code, words)

    def create(self, manifest: Obj) -> None:
        self.kubectl.run("create", "-n", self.namespace, "-f", "-", stdin=yaml.safe_dump(manifest))

    def delete(self, kind: str, name: str) -> None:
        self.kubectl.run("delete", kind.lower(), name, "-n", self.namespace, "--wait=false")

    def patch(self, kind: str, name: str, patch: Obj) -> None:
        self.kubectl.run("patch", kind.lower(), name, "-n", self.namespace, "--type=merge", "-p", json.dumps(patch))

    def scale_deployment(self, name: str, replicas: int) -> None:
        self.kubectl.run("scale", "deployment", name, "-n", self.namespace, f"--replicas={replicas}")

    def pause_rollout(self, name: str) -> None:
        self.kubectl.run("rollout", "pause", f"deployment/{name}", "-n", self.namespace)

        def ready_again() -> Snapshot | None:
            dep = self._get(DEPLOYMENT, name) or {}
            observed = int((dep.get("status") or {}).get("observedGeneration") or 0)
            snapshot = self.snapshot(name)
            paused = bool((dep.get("spec") or {}).get("paused"))
            generation = int((dep.get("metadata") or {}).get("generation") or 0)
            return snapshot if paused and observed >= generation and snapshot.settled_ready else None

        wait_until(ready_again, timeout=TIMEOUT, what=f"{name} Ready again once the pause was observed")
        self._wait_quiet()
        snapshot = wait_until(ready_again, timeout=TIMEOUT, what=f"{name} still Ready once the operator was idle")
        version = ((snapshot.isvc or {}).get("metadata") or {}).get("resourceVersion")
        wait_until(lambda: self._watch.seen(name, version), timeout=30, what=f"the watch to deliver {name}")
        self._watch.take(name)  # not compared: see World.pause_rollout
        self._events(name)

    def resume_rollout(self, name: str) -> None:
        self.kubectl.run("rollout", "resume", f"deployment/{name}", "-n", self.namespace)

    def forbid_services(self, quota: str) -> None:
        self.kubectl.run("create", "quota", quota, "--hard=services=0", "-n", self.namespace)
        wait_until(
            lambda: ((self.kubectl.get("quota", quota, self.namespace) or {}).get("status") or {}).get("hard"),
            timeout=30,
            what="the quota controller to fill in the quota's status",
        )

    def allow_services(self, quota: str) -> None:
        self.kubectl.run("delete", "quota", quota, "-n", self.namespace)

    def gpu_pool(self, shapes: Sequence[NodeShape]) -> Obj:
        listed = self._http.get("/api/v1/nodes") or {}
        self.other_nodes = [shape_of_node(node) for node in listed.get("items") or []]
        first = 100 + len(self.other_nodes)
        wanted: dict[str, NodeShape] = {}
        for index, shape in enumerate(shapes):
            name = f"{self.namespace}-{shape.name}"
            wanted[name] = pool_node(shape, pool=self.namespace, name=name)
            node = kwok_node(wanted[name], address=POOL_ADDRESS.format(first + index))
            self.kubectl.run("create", "-f", "-", stdin=yaml.safe_dump(node))
            self._pool[name] = shape.name
        for name, member in wanted.items():
            wait_until(
                functools.partial(self._node_ready, name, member.taints),
                timeout=TIMEOUT,
                what=f"the pool node {name} to be Ready with its own taints only",
            )
        self._rs_watch = NamespaceWatch(self._http, self.namespace, "ReplicaSet")
        return placement(self.namespace)

    def _node_ready(self, name: str, taints: Sequence[Any]) -> bool:
        node = self._http.get(f"/api/v1/nodes/{quote(name)}") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (node.get("status") or {}).get("conditions") or []
        )
        have = [
            {k: t[k] for k in ("key", "value", "effect") if k in t}
            for t in (node.get("spec") or {}).get("taints") or []
        ]
        return ready and have == [dict(t) for t in taints]

    def remove_node(self, name: str) -> None:
        stored = next(node for node, short in self._pool.items() if short == name)
        self.kubectl.run("delete", "node", stored, "--wait=false")
        self._removed.add(stored)

    def forget_lb_record(self, name: str) -> None:
        HttpLoadBalancer(self.registry.url).release(self._key(name))
        own = self._own_calls.setdefault(name, {})
        own["release"] = own.get("release", 0) + 1

    def fail_lb_calls(self, *, registers: int = 0, releases: int = 0) -> None:
        self.registry.set_faults(fail_registers=registers, fail_releases=releases)

    # -- looking ----------------------------------------------------------------------------

    def _key(self, name: str) -> str:
        return f"{self.namespace}/{name}"

    def _get(self, kind: str, name: str) -> Obj | None:
        return self._http.get(f"{PATHS[kind].format(ns=quote(self.namespace))}/{quote(name)}")

    def snapshot(self, name: str) -> Snapshot:
        return Snapshot(
            isvc=self._get(KIND, name),
            deployment=self._get(DEPLOYMENT, name),
            service=self._get(SERVICE, name),
            registered=self._key(name) in self.registry.registrations(),
            **self._scheduling(),
        )

    def _scheduling(self) -> Obj:
        if self._rs_watch is None:
            return {}
        ns = quote(self.namespace)
        return {
            "replicasets": tuple((self._http.get(PATHS["ReplicaSet"].format(ns=ns)) or {}).get("items") or []),
            "pods": tuple((self._http.get(PATHS["Pod"].format(ns=ns)) or {}).get("items") or []),
            "node_names": dict(self._pool),
        }

    def settle(self, step: str, name: str, until: Callable[[Snapshot], bool], *, what: str) -> Snapshot:
        def holds() -> Snapshot | None:
            snapshot = self.snapshot(name)
            return snapshot if until(snapshot) else None

        wait_until(holds, timeout=TIMEOUT, what=f"{what} ({name} in {self.namespace})")
        self._wait_quiet()
        snapshot = wait_until(holds, timeout=TIMEOUT, what=f"{what} to still hold once the operator was idle")
        version = ((snapshot.isvc or {}).get("metadata") or {}).get("resourceVersion")
        wait_until(
            lambda: self._watch.seen(name, version),
            timeout=30,
            what=f"the watch to deliver version {version} of {name}",
        )
        rs_watch = self._rs_watch
        for rs in snapshot.replicasets:
            meta = rs["metadata"]
            wait_until(
                functools.partial(rs_watch.seen, meta["name"], meta["resourceVersion"]) if rs_watch else bool,
                timeout=30,
                what=f"the watch to deliver version {meta['resourceVersion']} of ReplicaSet {meta['name']}",
            )
        tokens = [transition_token(obj, deleted=kind == "DELETED") for kind, obj in self._watch.take(name)]
        rs_tokens = None if rs_watch is None else self._replicasets.take(rs_watch.take())
        self._record(step=step, name=name, snapshot=snapshot, tokens=tokens, replicasets=rs_tokens)
        return snapshot

    def _wait_quiet(self) -> None:
        history: list[tuple[float, ...]] = []

        def quiet() -> bool:
            stats = self.operator.stats()
            # A labelled counter shows no sample before its first increment (a fresh operator
            # has written nothing): absent is zero. The queue depth is always there.
            backlog = stats["workqueue_depth"] + stats["events_pending"]  # Events on their way too
            history.append((*(stats.get(c, 0.0) for c in QUIET_COUNTERS[:-1]), backlog))
            recent = history[-QUIET_POLLS:]
            return len(recent) == QUIET_POLLS and len(set(recent)) == 1 and recent[-1][-1] == 0

        wait_until(quiet, timeout=TIMEOUT, what="the operator to be idle")

    def _lb_calls(self, name: str) -> dict[str, int]:
        key, own = self._key(name), self._own_calls.get(name, {})
        stats = self.registry.stats()
        totals = {
            "register": stats["register_calls"].get(key, 0) - own.get("register", 0),
            "release": stats["release_calls"].get(key, 0) - own.get("release", 0),
        }
        seen = self._lb_seen.get(name, {})
        self._lb_seen[name] = totals
        return {call: totals[call] - seen.get(call, 0) for call in totals}

    def _events(self, name: str) -> list[str]:
        """``type/reason`` of the object's Events posted or repeated since the last step."""
        listed = self._http.get(
            PATHS["Event"].format(ns=quote(self.namespace)),
            fieldSelector=f"involvedObject.kind={KIND},involvedObject.name={name}",
        )
        out = []
        for event in (listed or {}).get("items") or []:
            uid, count = event["metadata"]["uid"], int(event.get("count") or 1)
            if self._events_seen.get(uid) != count:
                out.append(f"{event['type']}/{event['reason']}")
                self._events_seen[uid] = count
        return out
