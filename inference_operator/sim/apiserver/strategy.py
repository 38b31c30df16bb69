"""What a write request turns into before it reaches the store: the API server's REST strategy.

kube-apiserver runs every create and update through a per-resource strategy
(``PrepareForCreate``, ``PrepareForUpdate``, ``Validate``…): identity comes from the request
path, server-set fields are reset on create and carried over on update, the main endpoint
ignores ``status`` and the status endpoint ignores everything else, defaulting and validation
run, and ``generation`` moves only when the spec does. Those rules are functions of the request
and the stored object alone, so they live here, apart from :mod:`.server`, which owns the
store, resourceVersions, the clock, locking, the request log and garbage collection.

Nothing here changes a stored object: each function builds a new candidate for the server to
commit (or to drop, when it equals what is stored).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from inference_operator.core.errors import Conflict, Invalid, NotFound, ServerError
from inference_operator.core.jsoncopy import merge_patch
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver import defaults, namespaces
from inference_operator.sim.apiserver.keys import Key, key_in
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.validation import (
    validate_metadata,
    validate_name,
    validate_status,
)

__all__ = [
    "check_create",
    "check_preconditions",
    "patched",
    "prepare_create",
    "prepare_status_update",
    "prepare_update",
    "success_status",
    "with_generated_name",
]

_SERVER_FIELDS: Final = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_OMITEMPTY_METADATA: Final = ("labels", "annotations", "finalizers", "ownerReferences")
_STATUS_RESETS_LABELS: Final = frozenset({"Deployment"})
"""Kinds whose status strategy resets labels as well as spec (apps/v1 Deployment)."""
MAX_GENERATED_PREFIX: Final = 58
GENERATED_SUFFIX_LENGTH: Final = 5
GENERATE_NAME_ATTEMPTS: Final = 8
"""The real server draws a generated name again on a collision (7 retries)."""
_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


# --- identity --------------------------------------------------------------------------------


def with_generated_name(obj: Obj, *, taken: Callable[[Key], bool], draw: Callable[[str], str]) -> Obj:
    """``obj`` named from its ``metadata.generateName`` when it has no name (a name wins); a copy.

    The name is the prefix (cut to 58 characters) and 5 random characters from ``draw`` (given the
    alphabet); like the real server, a name already ``taken`` is drawn again, a few times at most.
    """
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("name") or not meta.get("generateName"):
        return obj
    kind, prefix = str(obj.get("kind") or ""), str(meta["generateName"])[:MAX_GENERATED_PREFIX]
    name = ""
    for _ in range(GENERATE_NAME_ATTEMPTS):
        name = prefix + "".join(draw(_NAME_ALPHABET) for _ in range(GENERATED_SUFFIX_LENGTH))
        if not taken(key_in(kind, meta.get("namespace"), name)):
            break
    return {**obj, "metadata": {**meta, "name": name}}


def check_preconditions(key: Key, stored: Obj, sent: Mapping[str, Any], *, write: str = "update") -> None:
    """Refuse ``sent`` (a PUT body, a patch or an applied configuration) as the real server does.

    ``write`` is ``"update"`` (PUT), ``"patch"`` or ``"apply"``. A resourceVersion other than the
    stored one is a :class:`Conflict`; a PUT without one is :class:`Invalid` for a custom
    resource (built-in kinds allow an unconditional update). A uid in a PUT body is a
    precondition (:class:`Conflict`); in a merge patch or an applied configuration it would
    change the uid, which is :class:`Invalid` (immutable).
    """
    meta = sent.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    kind, namespace, name = key
    stored_meta = stored["metadata"]
    sent_rv, sent_uid = meta.get("resourceVersion"), meta.get("uid")
    foreign_uid = sent_uid not in (None, "") and sent_uid != stored_meta["uid"]
    if foreign_uid and write == "update":  # a PUT's uid is a precondition, checked before anything else
        raise Conflict(
            f'Precondition failed for {kind} "{namespace}/{name}": UID in object meta: {sent_uid}, '
            f"UID of the stored object: {stored_meta['uid']} (it was deleted and created again)",
            kind=kind,
            namespace=namespace,
            name=name,
        )
    if sent_rv in (None, "") and write == "update" and not traits_of(kind).built_in:
        raise Invalid(
            f'{kind} "{name}" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update',
            kind=kind,
            namespace=namespace,
            name=name,
        )
    if sent_rv not in (None, "") and str(sent_rv) != stored_meta["resourceVersion"]:
        raise Conflict(
            f'Operation cannot be fulfilled on {kind} "{namespace}/{name}": the object has been modified '
            f"(resourceVersion {sent_rv} was sent, the stored one is {stored_meta['resourceVersion']}); "
            "please apply your changes to the latest version and try again",
            kind=kind,
            namespace=namespace,
            name=name,
        )
    if foreign_uid:
        raise Invalid(
            f'{kind} "{name}" is invalid: metadata.uid: Invalid value: "{sent_uid}": field is immutable',
            kind=kind,
            namespace=namespace,
            name=name,
        )


def success_status(key: Key, uid: str) -> Obj:
    """What a DELETE that removed the object answers, for most kinds."""
    details = {"name": key[2], "kind": key[0], "uid": uid}
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def check_create(key: Key, obj: Mapping[str, Any]) -> None:
    """A create may not name a resourceVersion: the real server answers 500 (no reason)."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and meta.get("resourceVersion") not in (None, ""):
        raise ServerError(
            "resourceVersion should not be set on objects to be created", kind=key[0], namespace=key[1], name=key[2]
        )


# --- candidates ------------------------------------------------------------------------------


def prepare_create(key: Key, obj: Obj, *, allocator: defaults.Allocator, defaulter: defaults.Defaulter | None) -> Obj:
    """What a create would store, before the server stamps uid, timestamps, generation, version."""
    kind, _, name = key
    new = defaults.ingest(kind, obj)
    meta = _normalised_metadata(new, key)
    validate_name(kind, name, generate_name=str(meta.get("generateName") or ""))
    traits = traits_of(kind)
    validate_metadata(kind, meta)
    for field in _SERVER_FIELDS:
        meta.pop(field, None)
    if traits.status_subresource and not traits.status_on_create:
        new.pop("status", None)
        status = defaults.initial_status(kind)
        if status is not None:
            new["status"] = status
    namespaces.prepare(kind, new, None)
    defaults.prepare(kind, new, None, allocator, defaulter)
    return new


def prepare_update(
    key: Key, stored: Obj, candidate: Obj, *, allocator: defaults.Allocator, defaulter: defaults.Defaulter | None
) -> Obj:
    """What PUT / PATCH on the main endpoint would store (before the no-op check).

    ``candidate`` is the caller's :func:`~.defaults.ingest`-ed object; it is completed in place.
    """
    kind = key[0]
    traits = traits_of(kind)
    if "apiVersion" in stored:
        candidate["apiVersion"] = stored["apiVersion"]  # the storage version; no conversion here
    candidate["kind"] = kind
    meta = _normalised_metadata(candidate, key)
    old_meta: Obj = stored["metadata"]
    for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
        if field in meta and field not in old_meta:  # only a DELETE sets them
            raise Invalid(
                f'{kind} "{key[2]}" is invalid: metadata.{field}: Invalid value: {meta[field]!r}: field is immutable',
                kind=kind,
                namespace=key[1],
                name=key[2],
            )
    for field in _SERVER_FIELDS:
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    if traits.status_subresource:
        if "status" in stored:
            candidate["status"] = stored["status"]
        else:
            candidate.pop("status", None)
    namespaces.prepare(kind, candidate, stored)
    validate_metadata(kind, meta)
    defaults.prepare(kind, candidate, stored, allocator, defaulter)
    _forbid_new_finalizers(key, old_meta, meta)
    if traits.tracks_generation and (
        candidate.get("spec") != stored.get("spec")
        or (traits.annotations_bump_generation and meta.get("annotations") != old_meta.get("annotations"))
    ):
        meta["generation"] = old_meta.get("generation", 0) + 1
    return candidate


def prepare_status_update(key: Key, stored: Obj, source: Mapping[str, Any], *, ingested: bool = False) -> Obj:
    """What PUT / PATCH on ``/status`` would store: ``stored`` with ``source``'s status.

    A custom resource takes nothing else from ``source``. The Go-typed kinds' status strategies
    only reset ``spec`` (a Deployment's labels too): the metadata the request carries is kept,
    as on the main endpoint (the server-set fields stay the server's). ``ingested``: the status
    is the server's own copy already (decoded against a custom resource's schema).
    """
    kind, namespace, name = key
    traits = traits_of(kind)
    if not traits.status_subresource:
        raise NotFound(f"{kind} has no status subresource", kind=kind, namespace=namespace, name=name)
    candidate = dict(stored)
    status = source.get("status")
    if status is None:
        candidate.pop("status", None)
    else:
        candidate["status"] = status if ingested else defaults.ingest_status(kind, status)
    if traits.built_in:
        candidate["metadata"] = _status_metadata(key, stored, source)
        validate_status(kind, candidate)
    return candidate


def _status_metadata(key: Key, stored: Obj, source: Mapping[str, Any]) -> Obj:
    """The metadata a status write to a Go-typed kind stores (see :func:`prepare_status_update`)."""
    source_meta = source.get("metadata") or {}
    old_meta: Obj = stored["metadata"]
    if isinstance(source_meta, dict) and _same_but_managed_fields(source_meta, old_meta):
        # What a controller sends back (read, status changed): the stored metadata, which was
        # ingested, normalised and validated when stored, so the steps below would rebuild it.
        return dict(old_meta)
    return _rebuilt_status_metadata(key, stored, source)


def _same_but_managed_fields(sent: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Whether two metadata maps are equal, whatever their ``managedFields``."""
    skip = int("managedFields" in sent) - int("managedFields" in stored)
    if len(sent) - len(stored) != skip:
        return False
    return all(k == "managedFields" or (k in stored and stored[k] == v) for k, v in sent.items())


def _rebuilt_status_metadata(key: Key, stored: Obj, source: Mapping[str, Any]) -> Obj:
    source_meta = source.get("metadata") or {}
    if isinstance(source_meta, dict) and "managedFields" in source_meta:
        # replaced by the stored entries below whatever was sent: not worth a copy
        source_meta = {k: v for k, v in source_meta.items() if k != "managedFields"}
    sent = defaults.ingest(key[0], {"metadata": source_meta})
    meta = _normalised_metadata(sent, key)
    old_meta: Obj = stored["metadata"]
    for field in (*_SERVER_FIELDS, "managedFields"):
        if field in old_meta:
            meta[field] = old_meta[field]
        else:
            meta.pop(field, None)
    if key[0] in _STATUS_RESETS_LABELS:
        meta.pop("labels", None)
        if "labels" in old_meta:
            meta["labels"] = old_meta["labels"]
    validate_metadata(key[0], meta)
    _forbid_new_finalizers(key, old_meta, meta)
    return meta


def patched(kind: str, stored: Obj, patch: Obj) -> Obj:
    """The merge-patched object, owned by the caller (shares nothing with either input)."""
    return defaults.ingest(kind, merge_patch(stored, patch, copy=False))


def _forbid_new_finalizers(key: Key, old_meta: Obj, meta: Obj) -> None:
    """:class:`Invalid` if ``meta`` adds a finalizer to a terminating object."""
    if "deletionTimestamp" not in old_meta:
        return
    added = [f for f in meta.get("finalizers", ()) if f not in old_meta.get("finalizers", ())]
    if added:
        kind, namespace, name = key
        raise Invalid(
            f'{kind} "{name}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added '
            f"if the object is being deleted, found new finalizers {added!r}",
            kind=kind,
            namespace=namespace,
            name=name,
        )


def _normalised_metadata(obj: Obj, key: Key) -> Obj:
    """``obj['metadata']``, replaced by a normalised copy: identity from the key, empty fields dropped."""
    meta = obj.get("metadata")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta["name"] = key[2]
    if key[1]:
        meta["namespace"] = key[1]
    else:
        meta.pop("namespace", None)
    for field in _OMITEMPTY_METADATA:
        if field in meta and not meta[field]:
            del meta[field]
    obj["metadata"] = meta
    return meta
