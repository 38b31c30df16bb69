"""A cluster snapshot read for a what-if: what ``kubectl get nodes,pods,deployments,replicasets,
inferenceservices -A -o yaml`` printed, sorted into what the simulator can hold.

Why this exists: a snapshot is a record of objects the server made, not manifests to apply.
Most of what it carries cannot be created again (``uid``, ``resourceVersion``,
``managedFields``, status the server owns, owner references to objects that will not exist),
and some of it must not be: the InferenceServices' Deployments, ReplicaSets and pods are the
operator's and the cluster's to make. So each object is reduced to what decides the rollout:

- a Node to its name, labels, annotations, taints, ``unschedulable``, capacity, allocatable
  and conditions (Ready); addresses, images and node info are dropped;
- an InferenceService to its name, namespace, labels, annotations and spec; its status is the
  operator's to write;
- a pod of an InferenceService in the snapshot to the node it is bound to (the simulated
  cluster makes the service's pods again and puts them back there);
- any other pod to what the scheduler counts of it: containers and init containers with their
  resources, overhead, node, node selector and tolerations, labels; nothing controls it in
  the simulator (its owner references are dropped), a bound one holds its requests;
- Deployments and ReplicaSets are not loaded: an InferenceService's are made again from its
  spec; another workload's pods are loaded without them. Except a rollout in progress: a
  ReplicaSet of an InferenceService's Deployment older than its newest (a lower revision) that
  still has replicas is loaded as it is (name, labels, its numeric revision and replica annotations,
  replicas, selector, template; no owner), with its pods put back on their nodes, so that the
  Deployment the operator makes adopts it, as the real controller adopts a ReplicaSet its
  selector matches, and the rollout goes on from where the snapshot caught it;
- finished pods (Succeeded, Failed) hold nothing and are left out, as is any other kind; so
  are terminating pods (a ``deletionTimestamp``): they are on their way out, and a service's
  must not count as a place for one of its running pods.

What was left out is said, one line per reason (:attr:`Snapshot.notes`). Checks here are the
envelope's (kind, apiVersion, name, namespace) and an InferenceService's spec (the operator's
own parser); Nodes and pods are checked by the simulated API server when they are created.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from inference_operator.api.constants import API_VERSION, KIND, OWNER_LABEL
from inference_operator.api.models import SpecError, check_name, parse_spec
from inference_operator.api.quantity import parse_quantity
from inference_operator.core.objects import Obj, key_of
from inference_operator.manifests import ManifestError, read_objects
from inference_operator.sim.cluster.replicasets import (
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    POD_TEMPLATE_HASH,
    REVISION,
    revision_of,
)

__all__ = ["MAX_SNAPSHOT_BYTES", "Snapshot", "counted", "read_snapshot", "service_of", "template_hash"]

MAX_SNAPSHOT_BYTES: Final = 64 << 20
"""A snapshot larger than this is refused (a Node with its image list is about 20 KiB)."""
MODELLED: Final = {"Node": "v1", "Pod": "v1", "Deployment": "apps/v1", "ReplicaSet": "apps/v1", KIND: API_VERSION}
"""The kinds a snapshot may hold that the what-if reads, with their apiVersion."""
_NODE_SPEC: Final = ("taints", "unschedulable")
_NODE_STATUS: Final = ("capacity", "allocatable", "conditions")
_POD_SPEC: Final = ("nodeName", "nodeSelector", "tolerations", "overhead")
_CONTAINER: Final = ("name", "image", "resources")
_RS_SPEC: Final = ("replicas", "selector", "template", "minReadySeconds")
_RS_ANNOTATIONS: Final = (REVISION, DESIRED_REPLICAS, MAX_REPLICAS)


@dataclass
class Snapshot:
    """The cluster a snapshot shows, in the shape the simulator loads."""

    source: str
    nodes: list[Obj] = field(default_factory=list)
    services: list[Obj] = field(default_factory=list)
    placements: dict[str, Counter[str]] = field(default_factory=dict)
    """``namespace/name`` of an InferenceService → how many of its pods each node ran (but those
    of :attr:`replicasets`)."""
    unplaced: Counter[str] = field(default_factory=Counter)
    """``namespace/name`` of an InferenceService → how many of its pods were on no node."""
    replicasets: list[Obj] = field(default_factory=list)
    """Earlier ReplicaSets of InferenceServices caught mid-rollout, still holding replicas."""
    earlier: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    """(``namespace/name`` of an InferenceService, ``pod-template-hash`` of one of its
    :attr:`replicasets`) → how many of that ReplicaSet's pods each node ran."""
    bound: list[Obj] = field(default_factory=list)
    """Pods of other workloads, bound to a node: they hold their requests."""
    waiting: list[Obj] = field(default_factory=list)
    """Pods of other workloads not bound yet: they compete for what the rollout frees."""
    notes: list[str] = field(default_factory=list)
    """What was left out or changed, one line per reason."""
    counts: Counter[str] = field(default_factory=Counter)
    """Objects read, by kind."""

    @property
    def earlier_templates(self) -> set[tuple[str, str]]:
        """(``namespace/name`` of an InferenceService, ``pod-template-hash``) of each of
        :attr:`replicasets`."""
        return {(service_of(rs), template_hash(rs)) for rs in self.replicasets}

    @property
    def namespaces(self) -> list[str]:
        found = {str(o["metadata"]["namespace"]) for o in [*self.services, *self.bound, *self.waiting]}
        return sorted(found)


def read_snapshot(path: str) -> Snapshot:
    """Read the snapshot file ``path``; :class:`ManifestError` naming the file, the object and the
    field when it cannot be one."""
    snapshot = Snapshot(source=path)
    objects = [_envelope(obj, path) for obj in read_objects(path, limit=MAX_SNAPSHOT_BYTES)]
    for obj in objects:
        snapshot.counts[str(obj["kind"])] += 1
    services = {key_of(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects if o["kind"] == KIND}
    if not snapshot.counts["Node"]:
        raise ManifestError(f"{path}: no Node in it; a snapshot is what kubectl get nodes,pods,... -A -o yaml prints")
    skipped: Counter[str] = Counter()
    children: Counter[str] = Counter()
    finished = elsewhere = terminating = 0
    nodes = {o["metadata"]["name"] for o in objects if o["kind"] == "Node"}
    earlier = _earlier_replicasets(objects, services, path)
    snapshot.replicasets = [rs for _, rs in sorted(earlier.items())]
    hashes = snapshot.earlier_templates
    owners: Counter[str] = Counter()
    for obj in objects:
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "Node":
            snapshot.nodes.append(_node(obj))
        elif kind == KIND:
            snapshot.services.append(_service(obj, path))
        elif kind in ("Deployment", "ReplicaSet"):
            children[kind] += 1
        elif kind == "Pod":
            owner = service_of(obj)
            phase = (obj.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                finished += 1
            elif meta.get("deletionTimestamp"):
                terminating += 1
            elif owner in services:
                node = (obj.get("spec") or {}).get("nodeName")
                template = (owner, template_hash(obj))
                if not isinstance(node, str) or not node:
                    snapshot.unplaced[owner] += 1
                elif template in hashes:
                    snapshot.earlier.setdefault(template, Counter())[node] += 1
                else:
                    snapshot.placements.setdefault(owner, Counter())[node] += 1
            elif (obj.get("spec") or {}).get("nodeName") and obj["spec"]["nodeName"] not in nodes:
                elsewhere += 1
            else:
                pod = _pod(obj, path)
                owners.update(
                    str(ref.get("kind")) for ref in meta.get("ownerReferences") or () if isinstance(ref, dict)
                )
                (snapshot.bound if pod["spec"].get("nodeName") else snapshot.waiting).append(pod)
        else:
            skipped[f"{kind} ({obj['apiVersion']})"] += 1
    _say(snapshot, skipped=skipped, children=children, finished=finished, owners=owners)
    if elsewhere:
        snapshot.notes.append(f"not loaded: {elsewhere} pod(s) of other workloads bound to nodes not in the snapshot")
    if terminating:
        snapshot.notes.append(
            f"not loaded: {terminating} terminating pod(s) (being deleted: what they hold is free here at once, "
            "not after their grace period)"
        )
    return snapshot


def _say(
    snapshot: Snapshot, *, skipped: Counter[str], children: Counter[str], finished: int, owners: Counter[str]
) -> None:
    notes = snapshot.notes
    notes.append(
        "Nodes as they are (labels, taints, unschedulable, allocatable, conditions); addresses, images and "
        "node info dropped"
    )
    if snapshot.services:
        notes.append(
            "InferenceServices without status, uid, resourceVersion, managedFields; their Deployments, ReplicaSets "
            "and pods made again by the simulated operator and cluster, on the nodes the snapshot shows"
        )
    if snapshot.bound or snapshot.waiting:
        dropped = f"; owner references dropped ({counted(owners)}): nothing controls them here" if owners else ""
        notes.append(
            f"pods of other workloads: {len(snapshot.bound)} bound, holding their requests, "
            f"{len(snapshot.waiting)} waiting to be scheduled (only containers' resources, node selector and "
            f"tolerations kept{dropped})"
        )
    if snapshot.replicasets:
        listed = ", ".join(
            f"{key_of(rs['metadata']['namespace'], rs['metadata']['name'])} ({rs['spec'].get('replicas', 1)} replicas)"
            for rs in snapshot.replicasets
        )
        notes.append(
            f"rollouts in progress: ReplicaSets of an earlier template still holding replicas, loaded as they are "
            f"for the Deployment the operator makes to adopt: {listed}"
        )
        children["ReplicaSet"] -= len(snapshot.replicasets)
        children = +children
    if children:
        notes.append(f"not loaded: {counted(children)} (made again for InferenceServices; other workloads' pods kept)")
    if finished:
        notes.append(f"not loaded: {finished} finished pod(s) (Succeeded or Failed: they hold nothing)")
    if skipped:
        notes.append(f"skipped, kinds the simulator does not model: {counted(skipped)}")


def service_of(obj: Obj) -> str:
    """``namespace/name`` of the InferenceService a pod or ReplicaSet is of (its owner label)."""
    meta = obj["metadata"]
    return key_of(meta["namespace"], str((meta.get("labels") or {}).get(OWNER_LABEL) or ""))


def template_hash(obj: Obj) -> str:
    """The ``pod-template-hash`` label of a pod or ReplicaSet ("" without one)."""
    return str((obj["metadata"].get("labels") or {}).get(POD_TEMPLATE_HASH) or "")


def _of_deployment(rs: Obj) -> bool:
    """``rs`` is controlled by the Deployment named as the InferenceService its label names."""
    name = str((rs["metadata"].get("labels") or {}).get(OWNER_LABEL) or "")
    return any(
        isinstance(ref, dict) and ref.get("controller") and ref.get("kind") == "Deployment" and ref.get("name") == name
        for ref in rs["metadata"].get("ownerReferences") or ()
    )


def _earlier_replicasets(objects: list[Obj], services: set[str], path: str) -> dict[str, Obj]:
    """The ReplicaSets of a rollout in progress, by ``namespace/name``: of each InferenceService's
    Deployment, those older than the newest (by revision, then creation) that still have
    replicas, reduced to what the Deployment controller reads (the numeric annotations only)."""
    by_service: dict[str, list[Obj]] = {}
    for obj in objects:
        if obj["kind"] == "ReplicaSet" and template_hash(obj) and _of_deployment(obj) and service_of(obj) in services:
            by_service.setdefault(service_of(obj), []).append(obj)
    out: dict[str, Obj] = {}
    for found in by_service.values():
        newest = max(found, key=lambda rs: (revision_of(rs), str(rs["metadata"].get("creationTimestamp") or "")))
        for rs in found:
            spec = rs.get("spec") or {}
            replicas = spec.get("replicas", 1)
            if rs is newest or type(replicas) is not int or replicas <= 0:
                continue
            meta = rs["metadata"]
            what = f"{path}: ReplicaSet {meta['namespace']}/{meta['name']}"
            if not isinstance(spec.get("template"), dict) or not isinstance(spec.get("selector"), dict):
                raise ManifestError(f"{what}: spec.selector and spec.template must be objects")
            annotations = {
                k: v for k, v in (meta.get("annotations") or {}).items() if k in _RS_ANNOTATIONS and v.isdecimal()
            }
            reduced: Obj = {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta["labels"])}
            if annotations:
                reduced["annotations"] = annotations
            out[key_of(meta["namespace"], meta["name"])] = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": reduced,
                "spec": {k: spec[k] for k in _RS_SPEC if k in spec},
            }
    return out


def counted(counts: Counter[str]) -> str:
    """``2 Deployments, 1 Service (v1)``: how many of each kind, by name."""

    def plural(kind: str, n: int) -> str:
        name, paren, rest = kind.partition(" (")
        return f"{n} {name}{'s' if n > 1 else ''}{paren}{rest}"

    return ", ".join(plural(kind, n) for kind, n in sorted(counts.items()))


def _envelope(obj: Any, path: str) -> Obj:
    """``obj`` if it has a kind, an apiVersion, a name and (namespaced kinds) a namespace."""
    if not isinstance(obj, dict):
        raise ManifestError(f"{path}: an item is not an object with apiVersion and kind")
    kind, api_version, meta = obj.get("kind"), obj.get("apiVersion"), obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    what = f"{path}: {kind if isinstance(kind, str) and kind else '(no kind)'} "
    what += name if isinstance(name, str) and name else "(no name)"
    if not isinstance(kind, str) or not kind:
        raise ManifestError(f"{what}: kind not set")
    if not isinstance(api_version, str) or not api_version:
        raise ManifestError(f"{what}: apiVersion not set")
    if kind in MODELLED and MODELLED[kind] != api_version:
        raise ManifestError(f"{what}: apiVersion {api_version} is not one the what-if reads; use {MODELLED[kind]}")
    if not isinstance(meta, dict) or not isinstance(name, str) or not name:
        raise ManifestError(f"{what}: metadata.name is required")
    namespace = meta.get("namespace")
    if kind in MODELLED and kind != "Node" and (not isinstance(namespace, str) or not namespace):
        raise ManifestError(f"{what}: metadata.namespace is required (kubectl get -A prints it)")
    for key in ("labels", "annotations"):
        values = meta.get(key)
        if values is not None and (
            not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values())
        ):
            raise ManifestError(f"{what}: metadata.{key} must map keys to strings")
    for key in ("spec", "status"):
        if obj.get(key) is not None and not isinstance(obj[key], dict):
            raise ManifestError(f"{what}: {key} is not an object")
    return obj


def _metadata(meta: Obj, *, namespaced: bool) -> Obj:
    out: Obj = {"name": meta["name"]}
    if namespaced:
        out["namespace"] = meta["namespace"]
    for key in ("labels", "annotations"):
        if meta.get(key):
            out[key] = dict(meta[key])
    return out


def _node(obj: Obj) -> Obj:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _metadata(obj["metadata"], namespaced=False),
        "spec": {k: spec[k] for k in _NODE_SPEC if k in spec},
        "status": {k: status[k] for k in _NODE_STATUS if k in status},
    }


def _service(obj: Obj, path: str) -> Obj:
    meta = obj["metadata"]
    try:
        check_name(meta["name"])
        parse_spec(obj.get("spec"))
    except SpecError as err:
        raise ManifestError(f"{path}: {KIND} {meta['namespace']}/{meta['name']}: invalid: {err.message}") from None
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": _metadata(meta, namespaced=True),
        "spec": obj.get("spec") or {},
    }


def _pod(obj: Obj, path: str) -> Obj:
    meta, spec = obj["metadata"], obj.get("spec") or {}
    what = f"{path}: Pod {meta['namespace']}/{meta['name']}"
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise ManifestError(f"{what}: spec.containers must be a non-empty list")
    out: Obj = {k: spec[k] for k in _POD_SPEC if spec.get(k) is not None}
    for key in ("containers", "initContainers"):
        listed = spec.get(key) or []
        if not isinstance(listed, list) or not all(isinstance(c, dict) for c in listed):
            raise ManifestError(f"{what}: spec.{key} must be a list of containers")
        for index, container in enumerate(listed):
            resources = container.get("resources") or {}
            for kind in ("requests", "limits"):
                _check_quantities(resources.get(kind), f"{what}: spec.{key}[{index}].resources.{kind}")
        if listed:
            out[key] = [{k: c[k] for k in _CONTAINER if k in c} for c in listed]
    _check_quantities(spec.get("overhead"), f"{what}: spec.overhead")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {k: v for k, v in _metadata(meta, namespaced=True).items() if k != "annotations"},
        "spec": out,
    }


def _check_quantities(values: Any, where: str) -> None:
    """``values`` maps resource names to quantities, as the API server requires of a pod it holds."""
    if values is None:
        return
    if not isinstance(values, dict):
        raise ManifestError(f"{where}: is not a map of resource names to quantities")
    for name, value in values.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool) or parse_quantity(value) is None:
            raise ManifestError(f"{where}.{name}: {value!r} is not a quantity (such as 8, 500m or 64Gi)")
