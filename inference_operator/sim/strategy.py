"""What a write request turns into before it reaches the store: the API server's REST strategy.

kube-apiserver runs every create and update through a per-resource strategy
(``PrepareForCreate``, ``PrepareForUpdate``, ``Validate``…): identity comes from the request
path, server-set fields are reset on create and carried over on update, the main endpoint
ignores ``status`` and the status endpoint ignores everything else, defaulting and validation
run, and ``generation`` moves only when the spec does. Those rules are functions of the request
and the stored object alone, so they live here, apart from :mod:`.apiserver`, which owns the
store, resourceVersions, the clock, locking, the request log and garbage collection.

Nothing here changes a stored object: each function builds a new candidate for the server to
commit (or to drop, when it equals what is stored).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ..errors import Conflict, Invalid, NotFound
from ..jsoncopy import merge_patch
from . import defaults, namespaces
from .kinds import traits_of
from .managedfields import BadRequest
from .validation import path_segment_problem, validate_metadata, validate_name

__all__ = [
    "DEFAULT_NAMESPACE",
    "Key",
    "check_preconditions",
    "key_for",
    "key_of",
    "key_of_stored",
    "patched",
    "prepare_create",
    "prepare_status_update",
    "prepare_update",
    "with_generated_name",
]

Obj = dict[str, Any]
Key = tuple[str, str, str]
"""(kind, namespace, name); namespace is ``""`` for cluster-scoped kinds."""

DEFAULT_NAMESPACE: Final = "default"
_SERVER_FIELDS: Final = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
_OMITEMPTY_METADATA: Final = ("labels", "annotations", "finalizers", "ownerReferences")
MAX_GENERATED_PREFIX: Final = 58
GENERATED_SUFFIX_LENGTH: Final = 5
GENERATE_NAME_ATTEMPTS: Final = 8
"""The real server draws a generated name again on a collision (7 retries)."""
_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


# --- identity --------------------------------------------------------------------------------


def key_for(kind: str, namespace: str | None, name: str) -> Key:
    """The store key: cluster-scoped kinds drop the namespace, namespaced ones default it."""
    problem = path_segment_problem(name)
    if "/" in name:  # the request path then names some other resource, which does not exist
        raise NotFound("the server could not find the requested resource", kind=kind, name=name)
    if problem:
        raise BadRequest(f"Name parameter invalid: {name!r}: {problem}", kind=kind, name=name)
    return _key(kind, namespace, name)


def _key(kind: str, namespace: str | None, name: str) -> Key:
    if not traits_of(kind).namespaced:
        return (kind, "", name)
    return (kind, namespace or DEFAULT_NAMESPACE, name)


def key_of(obj: Mapping[str, Any]) -> Key:
    """The store key of a client's object; :class:`Invalid` without a kind or a name."""
    kind = obj.get("kind")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(kind, str) or not kind:
        raise Invalid("Object 'Kind' is missing", name=str(name or ""))
    if not isinstance(name, str) or not name:
        raise Invalid(f"{kind}: metadata.name: Required value: name or generateName is required", kind=kind)
    return _key(kind, meta.get("namespace") if isinstance(meta, Mapping) else None, name)


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
        if not taken(_key(kind, meta.get("namespace"), name)):
            break
    return {**obj, "metadata": {**meta, "name": name}}


def key_of_stored(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def check_preconditions(key: Key, stored: Obj, sent: Mapping[str, Any]) -> None:
    """:class:`Conflict` if ``sent`` names a resourceVersion or uid other than the stored one."""
    meta = sent.get("metadata")
    if not isinstance(meta, Mapping):
        return
    kind, namespace, name = key
    stored_meta = stored["metadata"]
    sent_rv = meta.get("resourceVersion")
    if sent_rv not in (None, "") and str(sent_rv) != stored_meta["resourceVersion"]:
        raise Conflict(
            f'Operation cannot be fulfilled on {kind} "{namespace}/{name}": the object has been modified '
            f"(resourceVersion {sent_rv} was sent, the stored one is {stored_meta['resourceVersion']}); "
            "please apply your changes to the latest version and try again",
            kind=kind,
            namespace=namespace,
            name=name,
        )
    sent_uid = meta.get("uid")
    if sent_uid not in (None, "") and sent_uid != stored_meta["uid"]:
        raise Conflict(
            f'Precondition failed for {kind} "{namespace}/{name}": UID in object meta: {sent_uid}, '
            f"UID of the stored object: {stored_meta['uid']} (it was deleted and created again)",
            kind=kind,
            namespace=namespace,
            name=name,
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
    if traits.status_subresource:
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
    if "deletionTimestamp" in old_meta:
        added = [f for f in meta.get("finalizers", ()) if f not in old_meta.get("finalizers", ())]
        if added:
            raise Invalid(
                f'{kind} "{key[2]}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added '
                f"if the object is being deleted, found new finalizers {added!r}",
                kind=kind,
                namespace=key[1],
                name=key[2],
            )
    if traits.tracks_generation and (
        candidate.get("spec") != stored.get("spec")
        or (traits.annotations_bump_generation and meta.get("annotations") != old_meta.get("annotations"))
    ):
        meta["generation"] = old_meta.get("generation", 0) + 1
    return candidate


def prepare_status_update(key: Key, stored: Obj, source: Mapping[str, Any]) -> Obj:
    """What PUT / PATCH on ``/status`` would store: ``stored`` with ``source``'s status only."""
    kind, namespace, name = key
    if not traits_of(kind).status_subresource:
        raise NotFound(f"{kind} has no status subresource", kind=kind, namespace=namespace, name=name)
    candidate = dict(stored)
    status = source.get("status")
    if status is None:
        candidate.pop("status", None)
    else:
        candidate["status"] = defaults.ingest_status(kind, status)
    return candidate


def patched(kind: str, stored: Obj, patch: Obj) -> Obj:
    """The merge-patched object, owned by the caller (shares nothing with either input)."""
    return defaults.ingest(kind, merge_patch(stored, patch, copy=False))


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
