"""Which ReplicaSets are a Deployment's: the controller reference index, and adoption of orphans.

kube-controller-manager's Deployment controller finds its ReplicaSets by their controller
reference, and claims (``ClaimReplicaSets``) a ReplicaSet no controller owns whose labels its
selector matches: a patch adding its controller reference, with the ReplicaSet's uid as a
precondition. This keeps both indexes from the ReplicaSet watch, says which Deployments an
event concerns, and adopts. Releasing a ReplicaSet whose labels stopped matching is not
modelled.
"""

from __future__ import annotations

from collections import defaultdict

from inference_operator.core.errors import NotFound
from inference_operator.core.objects import Obj, key_of
from inference_operator.sim.apiserver.managedfields import GC_FIELD_MANAGER as CONTROLLER_MANAGER
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.cluster.replicasets import controller_of, controller_reference, selector_matches
from inference_operator.sim.informer import SharedInformer

__all__ = ["ReplicaSetClaims"]


class ReplicaSetClaims:
    """The ReplicaSets each Deployment controls, and those no controller owns, by namespace."""

    def __init__(self, *, api: FakeApiServer, deployments: SharedInformer, replicasets: SharedInformer) -> None:
        self.api = api
        self.deployments = deployments
        self.replicasets = replicasets
        self._owned: defaultdict[str, set[str]] = defaultdict(set)  # Deployment uid → ReplicaSet names
        self._orphans: defaultdict[str, set[str]] = defaultdict(set)  # namespace → ReplicaSets no controller owns

    def observe(self, old: Obj | None, new: Obj | None) -> list[str]:
        """Keep both indexes; the keys of the Deployments to look at again: the owner, before and
        after (``addReplicaSet``, ``updateReplicaSet``, ``deleteReplicaSet``), or, for a
        ReplicaSet no controller owns that is new, just orphaned or relabelled, every Deployment
        whose selector matches its labels: one may adopt it."""
        old_ref = controller_of(old) if old is not None else None
        new_ref = controller_of(new) if new is not None else None
        keys: list[str] = []
        if old is not None and old_ref is not None and old_ref.get("kind") == "Deployment" and old_ref != new_ref:
            self._owned[str(old_ref["uid"])].discard(old["metadata"]["name"])
            keys.append(key_of(old["metadata"]["namespace"], str(old_ref["name"])))
        if new is None:
            if old is not None:
                self._orphans.get(old["metadata"]["namespace"], set()).discard(old["metadata"]["name"])
            return keys
        meta = new["metadata"]
        if new_ref is not None:
            self._orphans.get(meta["namespace"], set()).discard(meta["name"])
            if new_ref.get("kind") == "Deployment":
                self._owned[str(new_ref["uid"])].add(meta["name"])
                keys.append(key_of(meta["namespace"], str(new_ref["name"])))
            return keys
        self._orphans[meta["namespace"]].add(meta["name"])
        labels = meta.get("labels") or {}
        if old is not None and old_ref is None and (old["metadata"].get("labels") or {}) == labels:
            return keys  # an orphan's other changes: no Deployment's claim can have changed
        for dep in self.deployments.list(meta["namespace"]):
            if selector_matches(dep["spec"].get("selector") or {}, labels):
                keys.append(key_of(meta["namespace"], dep["metadata"]["name"]))
        return keys

    def owned_by(self, dep: Obj) -> list[Obj]:
        """The ReplicaSets ``dep`` controls, by name."""
        namespace = dep["metadata"]["namespace"]
        found = [self.replicasets.get(namespace, n) for n in sorted(self._owned.get(dep["metadata"]["uid"], ()))]
        return [rs for rs in found if rs is not None]

    def adopt_orphans(self, dep: Obj) -> None:
        """Adopt each ReplicaSet of the namespace that no controller owns, is not being deleted,
        and whose labels ``dep``'s selector matches. A ReplicaSet gone meanwhile is skipped; any
        other refusal fails the pass, which is retried with backoff (``ClaimObject``)."""
        meta = dep["metadata"]
        namespace = meta["namespace"]
        selector = dep["spec"].get("selector") or {}
        for name in sorted(self._orphans.get(namespace, ())):
            rs = self.replicasets.get(namespace, name)
            if rs is None or controller_of(rs) is not None or "deletionTimestamp" in rs["metadata"]:
                continue
            if not selector_matches(selector, rs["metadata"].get("labels") or {}):
                continue
            references = [*(rs["metadata"].get("ownerReferences") or ()), controller_reference(dep)]
            patch = {"metadata": {"ownerReferences": references, "uid": rs["metadata"]["uid"]}}
            try:
                self.api.patch("ReplicaSet", namespace, name, patch, field_manager=CONTROLLER_MANAGER)
            except NotFound:
                continue
            self._orphans[namespace].discard(name)
            self._owned[str(meta["uid"])].add(name)
