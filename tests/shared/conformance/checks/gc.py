"""Garbage collection through ownerReferences: background, foreground, orphan, several owners,
dangling and late references, chains and owners of another kind.

On the real cluster kube-controller-manager's garbage collector does this a little later; the fake
collects synchronously. So every check waits for the end state it expects (``wait_gone``,
``wait_for``), never for something not to happen. Dependents that must stay visible while their
owner is deleted hold a finalizer of their own, taken off by the check.
"""

from __future__ import annotations

from typing import Any

from ..objects import configmap, owner_ref, secret
from ..recorder import Api
from ..registry import check
from ..transports import Request

HOLD = "conformance.example/hold"
"""A finalizer nobody but the check removes: keeps a dependent there, marked, for as long as needed."""

Obj = dict[str, Any]


def _terminating(obj: Obj) -> bool:
    return "deletionTimestamp" in obj["metadata"]


def _release(api: Api, name: str) -> None:
    api.patch("ConfigMap", name, {"metadata": {"finalizers": None}}, keep=())


@check("gc/background-chain-owner-child-grandchild")
def gc_chain(api: Api) -> None:
    owner = api.create(configmap("owner"))
    child = api.create(configmap("child", ownerReferences=[owner_ref(owner)]))
    api.create(configmap("grandchild", ownerReferences=[owner_ref(child)]))
    api.delete("ConfigMap", "owner")
    api.wait_gone("ConfigMap", "child")
    api.wait_gone("ConfigMap", "grandchild")


@check("gc/background-marks-a-dependent-with-a-finalizer")
def gc_background_finalizer(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", finalizers=[HOLD], ownerReferences=[owner_ref(owner)]))
    api.delete("ConfigMap", "owner")
    api.wait_gone("ConfigMap", "owner")
    keep = ("metadata.finalizers", "metadata.ownerReferences", "metadata.deletionGracePeriodSeconds")
    api.wait_for("ConfigMap", "dependent", _terminating, what="is terminating", keep=keep)
    _release(api, "dependent")
    api.wait_gone("ConfigMap", "dependent")


@check("gc/foreground-owner-waits-for-blocking-dependent")
def gc_foreground_blocking(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", finalizers=[HOLD], ownerReferences=[owner_ref(owner, block=True)]))
    api.delete("ConfigMap", "owner", propagation="Foreground", keep=("metadata.finalizers",))
    api.wait_for("ConfigMap", "dependent", _terminating, what="is terminating", keep=("metadata.finalizers",))
    api.get("ConfigMap", "owner", keep=("metadata.finalizers", "metadata.deletionTimestamp"))
    _release(api, "dependent")
    api.wait_gone("ConfigMap", "dependent")
    api.wait_gone("ConfigMap", "owner")


@check("gc/foreground-non-blocking-dependent-does-not-hold-owner")
def gc_foreground_non_blocking(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", finalizers=[HOLD], ownerReferences=[owner_ref(owner)]))
    api.delete("ConfigMap", "owner", propagation="Foreground")
    api.wait_gone("ConfigMap", "owner")
    api.wait_for("ConfigMap", "dependent", _terminating, what="is terminating", keep=("metadata.finalizers",))
    _release(api, "dependent")
    api.wait_gone("ConfigMap", "dependent")


@check("gc/foreground-chain-goes-bottom-up")
def gc_foreground_chain(api: Api) -> None:
    owner = api.create(configmap("owner"))
    child = api.create(configmap("child", ownerReferences=[owner_ref(owner, block=True)]))
    api.create(configmap("grandchild", finalizers=[HOLD], ownerReferences=[owner_ref(child, block=True)]))
    api.delete("ConfigMap", "owner", propagation="Foreground")
    api.wait_for("ConfigMap", "grandchild", _terminating, what="is terminating", keep=("metadata.finalizers",))
    api.wait_for(
        "ConfigMap",
        "child",
        lambda obj: "foregroundDeletion" in obj["metadata"].get("finalizers", ()),
        what="waits for its own dependents",
        keep=("metadata.finalizers",),
    )
    api.get("ConfigMap", "owner", keep=("metadata.finalizers",))
    _release(api, "grandchild")
    api.wait_gone("ConfigMap", "owner")
    api.wait_gone("ConfigMap", "child")
    api.wait_gone("ConfigMap", "grandchild")


@check("gc/foreground-without-dependents-deletes")
def gc_foreground_alone(api: Api) -> None:
    api.create(configmap("alone"))
    api.delete("ConfigMap", "alone", propagation="Foreground", keep=None)
    api.wait_gone("ConfigMap", "alone")


@check("gc/orphan-strips-owner-references")
def gc_orphan(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("first", ownerReferences=[owner_ref(owner, controller=True, block=True)]))
    api.create(configmap("second", ownerReferences=[owner_ref(owner)]))
    api.delete("ConfigMap", "owner", propagation="Orphan", keep=None)
    for name in ("first", "second"):
        api.wait_for(
            "ConfigMap",
            name,
            lambda obj: not obj["metadata"].get("ownerReferences"),
            what="has no ownerReferences",
            keep=("metadata.ownerReferences", "metadata.deletionTimestamp"),
        )
    api.wait_gone("ConfigMap", "owner")


@check("gc/orphan-keeps-references-to-other-owners")
def gc_orphan_other(api: Api) -> None:
    first = api.create(configmap("first-owner"))
    second = api.create(configmap("second-owner"))
    api.create(configmap("dependent", ownerReferences=[owner_ref(first), owner_ref(second)]))
    api.delete("ConfigMap", "first-owner", propagation="Orphan")
    api.wait_for(
        "ConfigMap",
        "dependent",
        lambda obj: len(obj["metadata"].get("ownerReferences", ())) == 1,
        what="has one ownerReference",
        keep=("metadata.ownerReferences",),
    )
    api.wait_gone("ConfigMap", "first-owner")


@check("gc/several-owners-dependent-stays-while-one-lives")
def gc_several_owners(api: Api) -> None:
    first = api.create(configmap("first-owner"))
    second = api.create(configmap("second-owner"))
    api.create(configmap("dependent", ownerReferences=[owner_ref(first), owner_ref(second)]))
    api.delete("ConfigMap", "first-owner")
    api.wait_for(
        "ConfigMap",
        "dependent",
        lambda obj: len(obj["metadata"].get("ownerReferences", ())) == 1,
        what="keeps the living owner only",
        keep=("metadata.ownerReferences", "metadata.deletionTimestamp"),
    )
    api.delete("ConfigMap", "second-owner")
    api.wait_gone("ConfigMap", "dependent")


@check("gc/owner-uid-mismatch-collects-dependent")
def gc_uid_mismatch(api: Api) -> None:
    owner = api.create(configmap("owner"))
    ref = {**owner_ref(owner), "uid": "3a1f5b2e-0000-4000-8000-000000000001"}
    api.create(configmap("dependent", ownerReferences=[ref]), keep=("metadata.ownerReferences",))
    api.wait_gone("ConfigMap", "dependent")
    api.get("ConfigMap", "owner", keep=("metadata.name",))


@check("gc/cross-kind-configmap-owned-by-secret")
def gc_cross_kind(api: Api) -> None:
    owner = api.create(secret("owner"), keep=("metadata.name", "metadata.uid"))
    api.create(configmap("dependent", ownerReferences=[owner_ref(owner)]))
    api.delete("Secret", "owner")
    api.wait_gone("ConfigMap", "dependent")


@check("gc/dependent-created-after-owner-is-gone")
def gc_late_dependent(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.delete("ConfigMap", "owner")
    api.create(configmap("late", ownerReferences=[owner_ref(owner)]), keep=("metadata.ownerReferences",))
    api.wait_gone("ConfigMap", "late")


@check("gc/reference-removed-by-update-is-not-collected")
def gc_reference_removed(api: Api) -> None:
    owner = api.create(configmap("owner"))
    dependent = api.create(configmap("dependent", ownerReferences=[owner_ref(owner)]))
    meta = {k: v for k, v in dependent["metadata"].items() if k != "ownerReferences"}
    api.update({**dependent, "metadata": meta}, keep=("metadata.ownerReferences",))
    api.delete("ConfigMap", "owner")
    api.wait_gone("ConfigMap", "owner")
    api.get("ConfigMap", "dependent", keep=("metadata.ownerReferences",))


@check("gc/reference-naming-another-kind-is-an-absent-owner")
def gc_wrong_kind(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", ownerReferences=[{**owner_ref(owner), "kind": "Secret"}]), keep=())
    api.wait_gone("ConfigMap", "dependent")
    api.get("ConfigMap", "owner", keep=("metadata.name",))


@check("gc/reference-naming-another-name-is-an-absent-owner")
def gc_wrong_name(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", ownerReferences=[{**owner_ref(owner), "name": "somebody"}]), keep=())
    api.wait_gone("ConfigMap", "dependent")


@check("gc/owner-in-another-namespace-is-absent")
def gc_other_namespace(api: Api) -> None:
    other = f"{api.ns}-other"
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}, keep=("metadata.name",))
    try:
        owner = api.create(configmap("owner", namespace=other), keep=("metadata.namespace",))
        api.create(configmap("dependent", ownerReferences=[owner_ref(owner)]), keep=())
        api.wait_gone("ConfigMap", "dependent")
        api.get("ConfigMap", "owner", namespace=other, keep=("metadata.name",))
    finally:  # not recorded: what deleting a namespace answers is the namespaces area's
        api.transport.request(Request("delete", "Namespace", name=other))


@check("gc/cluster-scoped-owner-of-a-namespaced-dependent")
def gc_cluster_scoped_owner(api: Api) -> None:
    """A living Namespace is a solid owner: deleting the other owner only strips that reference.
    (Not waiting for the Namespace to go: that is the namespace controller's pace, not the GC's.)"""
    other = f"{api.ns}-owner"
    namespace = api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}, keep=())
    try:
        owner = api.create(configmap("owner"))
        refs = [owner_ref(namespace), owner_ref(owner)]
        api.create(configmap("dependent", ownerReferences=refs), keep=("metadata.ownerReferences",))
        api.delete("ConfigMap", "owner")
        api.wait_for(
            "ConfigMap",
            "dependent",
            lambda obj: len(obj["metadata"].get("ownerReferences", ())) == 1,
            what="keeps the Namespace as its owner",
            keep=("metadata.ownerReferences", "metadata.deletionTimestamp"),
        )
    finally:  # not recorded: what deleting a namespace answers is the namespaces area's
        api.transport.request(Request("delete", "Namespace", name=other))


@check("gc/foreground-owner-goes-when-the-blocking-reference-is-removed")
def gc_foreground_unblocked(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", finalizers=[HOLD], ownerReferences=[owner_ref(owner, block=True)]))
    api.delete("ConfigMap", "owner", propagation="Foreground", keep=("metadata.finalizers",))
    api.wait_for("ConfigMap", "dependent", _terminating, what="is terminating", keep=("metadata.finalizers",))
    api.patch("ConfigMap", "dependent", {"metadata": {"ownerReferences": None}}, keep=("metadata.ownerReferences",))
    api.wait_gone("ConfigMap", "owner")
    _release(api, "dependent")
    api.wait_gone("ConfigMap", "dependent")


@check("gc/orphan-of-an-owner-with-its-own-finalizer-keeps-that-finalizer")
def gc_orphan_own_finalizer(api: Api) -> None:
    api.create(configmap("owner", finalizers=[HOLD]))
    api.delete("ConfigMap", "owner", propagation="Orphan", keep=("metadata.finalizers",))
    api.wait_for(
        "ConfigMap",
        "owner",
        lambda obj: obj["metadata"].get("finalizers") == [HOLD],
        what="holds only its own finalizer",
        keep=("metadata.finalizers", "metadata.deletionTimestamp"),
    )
    _release(api, "owner")
    api.wait_gone("ConfigMap", "owner")


@check("gc/second-delete-with-a-policy-of-a-terminating-owner")
def gc_second_delete(api: Api) -> None:
    owner = api.create(configmap("owner", finalizers=[HOLD]))
    api.create(configmap("blocking", ownerReferences=[owner_ref(owner, block=True)]))
    api.delete("ConfigMap", "owner", keep=("metadata.finalizers",))
    api.delete("ConfigMap", "owner", propagation="Foreground", keep=("metadata.finalizers",))
    api.wait_gone("ConfigMap", "blocking")
    api.wait_for(
        "ConfigMap",
        "owner",
        lambda obj: obj["metadata"].get("finalizers") == [HOLD],
        what="holds only its own finalizer",
        keep=("metadata.finalizers",),
    )
    _release(api, "owner")
    api.wait_gone("ConfigMap", "owner")
