"""The API server's field manager: ``metadata.managedFields`` on every write, and server-side apply.

The operator writes its children with server-side apply, trusting the API server to remove what it
stopped applying, keep what others own and refuse to overwrite someone else's field. The fake API
server must keep the same books, byte for byte, or the simulator would bless writes that loop or
clobber on a real cluster. This is a port of k8s.io/apimachinery's ``managedfields/internal``
pipeline (v0.36) over :mod:`.structured`:

- every Update-type write (create, update, patch, and their status forms) records an
  ``operation: Update`` entry per (manager, apiVersion, subresource) owning what the request
  added or changed; it takes those fields from every other manager (no conflicts for Update) and
  removed fields leave everyone's sets. The create compares against the kind's zero object, so
  scheme defaults are owned by the creator, while allocations done later by the registry (a
  Service's ``clusterIP``) and mutating admission belong to no one, as on a real server;
- :func:`apply` merges an applied configuration, prunes what the applier no longer applies
  unless someone else owns it, and raises :class:`~inference_operator.core.errors.Conflict` (the real
  message) for fields of other managers it would change, unless forced;
- entries are sorted and stamped (``time`` from the server clock) the way the server encodes
  them; an object with no managedFields stays untracked on update, and its first apply assigns
  the existing fields to ``before-first-apply``; more than ten Update entries are folded into
  ``ancient-changes``.

How entries are identified, encoded and named in conflicts is :mod:`.managedentries`. Not
modelled: kubectl's ``last-applied-configuration`` hand-over and version conversion.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from inference_operator.core.errors import ApiError, Conflict, Invalid
from inference_operator.core.objects import Obj
from inference_operator.ssa.fieldpaths import FieldSet, raw_field_set, reset_fields, strip_server_fields
from inference_operator.ssa.fieldschema import Node, schema_for
from inference_operator.ssa.managedentries import Entry, Managed, ManagerId, conflict_message, decode, encode, is_reset
from inference_operator.ssa.structured import (
    MISSING,
    compare,
    ensure_named_fields_are_members,
    merge,
    remove_items,
    same,
)

__all__ = [
    "BEFORE_FIRST_APPLY",
    "DEFAULT_FIELD_MANAGER",
    "GC_FIELD_MANAGER",
    "Applied",
    "BadRequest",
    "UnknownError",
    "apply",
    "settle_timestamps",
    "track_update",
]


DEFAULT_FIELD_MANAGER: Final = "unknown"
"""The manager of a write that names none, as the API server records a request without
``fieldManager`` and without a User-Agent."""
GC_FIELD_MANAGER: Final = "kube-controller-manager"
"""Whose writes the garbage collector's are (it runs in kube-controller-manager)."""
BEFORE_FIRST_APPLY: Final = "before-first-apply"
ANCIENT_CHANGES: Final = "ancient-changes"
MAX_UPDATE_MANAGERS: Final = 10
FIELD_MANAGER_MAX_LENGTH: Final = 128


class BadRequest(ApiError):
    """The request itself is malformed (HTTP 400)."""

    code = 400
    reason = "BadRequest"


class UnknownError(ApiError):
    """A failure the API server has no status for: HTTP 500 with no reason (``StatusReasonUnknown``),
    as a field manager's error reaches the client."""

    code = 500
    reason = ""


# --- the zero objects updates are compared with on create ------------------------------------------

_ZERO_META: Final[Obj] = {"creationTimestamp": None}
_ZERO_TEMPLATE: Final[Obj] = {"metadata": _ZERO_META, "spec": {"containers": None}}
_ZERO: Final[dict[str, Obj]] = {
    "Deployment": {
        "metadata": _ZERO_META,
        "spec": {"selector": None, "template": _ZERO_TEMPLATE, "strategy": {}},
        "status": {},
    },
    "ReplicaSet": {"metadata": _ZERO_META, "spec": {"selector": None, "template": _ZERO_TEMPLATE}, "status": {}},
    "Pod": {"metadata": _ZERO_META, "spec": {"containers": None}, "status": {}},
    "Service": {"metadata": _ZERO_META, "spec": {}, "status": {"loadBalancer": {}}},
}
"""What a new Go object of each kind looks like to SMD (struct fields are never absent)."""


def zero_object(kind: str) -> Obj:
    schema = schema_for(kind)
    if kind in _ZERO:
        return _ZERO[kind]
    return {"metadata": _ZERO_META} if schema.open else {}


_ALLOCATED: Final = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy")


def _registry_view(kind: str, new: Obj, request: Mapping[str, Any]) -> Obj:
    """``new`` without what the registry allocated after the field manager ran (a Service's IPs and
    node ports the request did not carry): nobody owns those."""
    if kind != "Service" or not isinstance(new.get("spec"), dict):
        return new
    sent = request.get("spec")
    asked: Mapping[str, Any] = sent if isinstance(sent, Mapping) else {}
    spec = {k: v for k, v in new["spec"].items() if k not in _ALLOCATED or k in asked}
    asked_ports = {
        (p.get("port"), p.get("protocol", "TCP")): p for p in asked.get("ports") or () if isinstance(p, dict)
    }
    ports = []
    for port in spec.get("ports") or ():
        requested = asked_ports.get((port.get("port"), port.get("protocol", "TCP")), {})
        ports.append(port if "nodePort" in requested else {k: v for k, v in port.items() if k != "nodePort"})
    if ports:
        spec["ports"] = ports
    return {**new, "spec": spec}


def _plain(obj: Mapping[str, Any] | None, kind: str) -> Any:
    """The object as SMD compares it: without managedFields; the zero object when there is none."""
    return zero_object(kind) if obj is None else _comparable(obj)


_UNOWNED_METADATA: Final = frozenset(
    {"managedFields", "generation", "resourceVersion", "uid", "creationTimestamp", "selfLink"}
)
"""Server-set metadata no entry ever holds: left out before comparing (it could only be stripped)."""


def _comparable(obj: Mapping[str, Any], unowned: frozenset[str] = _UNOWNED_METADATA) -> Mapping[str, Any]:
    """``obj`` without the ``unowned`` metadata fields (a shallow copy when it has some)."""
    meta = obj.get("metadata")
    if type(meta) is dict and not unowned.isdisjoint(meta):
        return {**obj, "metadata": {k: v for k, v in meta.items() if k not in unowned}}
    return obj


# --- Update -------------------------------------------------------------------------------------------


def track_update(
    kind: str,
    live: Obj | None,
    new: Obj,
    *,
    request: Mapping[str, Any],
    manager: str,
    subresource: str = "",
    now: Callable[[], str],
) -> list[Obj] | None:
    """The managedFields of ``new`` after an Update-type write by ``manager`` (``live`` is None on
    create). ``request`` is what the client sent (its managedFields, if any, are honoured on the
    main resource, as the server does)."""
    stored = _managed_fields(live)
    sent = None if subresource else _managed_fields(request)
    if is_reset(sent):
        managed: Managed = {}
    elif not sent or sent == stored:  # read-modify-write sends back what is stored: decode that
        managed = _decode_or_empty(stored)
    else:
        try:
            managed = decode(sent)
        except ValueError:
            managed = {}
        if not managed:
            managed = _decode_or_empty(stored)
    if not managed and live is not None:
        return None  # an untracked object stays untracked until it is applied to
    api_version = str(new.get("apiVersion") or "")
    try:
        _update(
            kind,
            _plain(live, kind),
            _plain(_registry_view(kind, new, request), kind),
            managed,
            ManagerId(manager or DEFAULT_FIELD_MANAGER, "Update", api_version, subresource),
            now=now,
        )
    except ValueError:
        return None  # what the server does when it cannot work the fields out: it drops them
    _cap_update_managers(managed)
    return encode(managed)


def _managed_fields(obj: Mapping[str, Any] | None) -> Any:
    meta = (obj or {}).get("metadata")
    return meta.get("managedFields") if isinstance(meta, dict) else None


def _decode_or_empty(stored: Any) -> Managed:
    try:
        return decode(stored, stored=True)
    except ValueError:
        return {}


def _update(kind: str, live: Any, new: Any, managed: Managed, key: ManagerId, *, now: Callable[[], str]) -> None:
    """One Update through SMD's ``Updater.Update`` as ``current-operation``, merged into ``key``."""
    diff = compare(live, new, schema_for(kind), skip=reset_fields(kind, key.subresource))
    changed = frozenset(diff.modified | diff.added)
    lost = changed | diff.removed
    _take_from_others(managed, lost, skip=key)
    taken = strip_server_fields(changed)
    previous = managed.get(key)
    if previous is not None and previous.owns_all(taken) and not previous.owns_any(diff.removed):
        if taken:  # it changed only what it owned already: the same fields, a new time
            managed[key] = previous.restamped(now(), key.api_version)
        return
    if previous is not None:  # like any other manager, it loses what changed, then takes it back
        left = previous.without(lost)
        previous = left
        if left is None:
            del managed[key]
        else:
            managed[key] = left
    if taken:
        fields = taken | previous.fields if previous else taken
        managed[key] = Entry(fields, key.api_version, now())


def _take_from_others(managed: Managed, fields: FieldSet, *, skip: ManagerId | None) -> None:
    if not fields:
        return
    for key, entry in list(managed.items()):
        if key == skip:
            continue
        left = entry.without(fields)
        if left is None:
            del managed[key]
        elif left is not entry:
            managed[key] = left


def _cap_update_managers(managed: Managed) -> None:
    updaters = [key for key in managed if key.operation == "Update"]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda k: (managed[k].time or "", k.identifier()))
    first_of_version: dict[str, ManagerId] = {}
    length = len(updaters)
    for key in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        entry = managed[key]
        bucket = ManagerId(ANCIENT_CHANGES, "Update", entry.api_version)
        first = first_of_version.get(entry.api_version)
        if first is None:
            first_of_version[entry.api_version] = key
            continue
        if bucket not in managed:
            managed[bucket] = managed.pop(first)
        managed[bucket] = Entry(entry.fields | managed[bucket].fields, entry.api_version, entry.time)
        del managed[key]
        length -= 1


# --- Apply --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Applied:
    """The outcome of an apply: the merged object (before defaulting) and its managedFields."""

    merged: Obj
    managed_fields: list[Obj] | None
    changed: bool
    """False when the merge changed nothing in the object (managedFields may still change)."""


def apply(kind: str, live: Obj | None, config: Obj, *, manager: str, force: bool, now: Callable[[], str]) -> Applied:
    """Merge ``config`` into ``live`` (None: the object is being created) as ``manager``.

    :class:`Conflict` names every field another manager owns and this apply would change,
    unless ``force`` takes them over.
    """
    meta = config.get("metadata")
    if isinstance(meta, Mapping) and meta.get("managedFields") is not None:
        raise BadRequest("metadata.managedFields must be nil", kind=kind)
    node = schema_for(kind)
    try:
        managed = decode(_managed_fields(live), stored=True)
    except ValueError as err:
        raise UnknownError(f"failed to decode managed fields: {err}", kind=kind) from err
    api_version = str(config.get("apiVersion") or (live or {}).get("apiVersion") or "")
    before = _plain(live, kind)
    if live is not None and not managed:
        _update(kind, zero_object(kind), before, managed, ManagerId(BEFORE_FIRST_APPLY, "Update", api_version), now=now)
    key = ManagerId(manager, "Apply")
    try:
        applied = raw_field_set(config, node, skip=reset_fields(kind), strict=True)
        merged = merge(before, config, node)
    except ValueError as err:
        raise UnknownError(
            f"failed to create typed patch object ({_name(config)}; {api_version}, Kind={kind}): {err}", kind=kind
        ) from err
    merged = {} if merged is MISSING else merged
    last = managed.get(key)
    managed[key] = Entry(applied, api_version, last.time if last else None)
    merged = _prune(merged, managed, node, last, managed[key].fields)
    _resolve_conflicts(kind, before, merged, managed, key, force=force)
    changed = not same(before, merged)
    fields = strip_server_fields(managed[key].fields)
    if not fields:
        del managed[key]
    elif last is not None and last.fields == fields:  # the same fields: stored again, restamped if it wrote
        managed[key] = last.restamped(now() if changed else last.time, api_version)
    else:
        managed[key] = Entry(fields, api_version, now() if changed else managed[key].time)
    return Applied(merged, encode(managed), changed)


def _name(obj: Mapping[str, Any]) -> str:
    found = obj.get("metadata")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _prune(merged: Obj, managed: Managed, node: Node, last: Entry | None, applying: FieldSet) -> Obj:
    """Remove what the applier applied last time and not now, unless someone else owns it."""
    if last is None or last.fields <= applying:
        return merged  # nothing applied before is missing now: nothing to remove

    def named(fields: FieldSet) -> FieldSet:
        return ensure_named_fields_are_members(fields, node)

    last_fields = named(last.fields)
    pruned = remove_items(merged, last_fields, node)
    owned = named(frozenset().union(*(entry.fields for entry in managed.values())))
    merged_fields = named(raw_field_set(merged, node))
    pruned = remove_items(merged, merged_fields - (named(raw_field_set(pruned, node)) | owned), node)
    dangling = (merged_fields - named(raw_field_set(pruned, node))) & last_fields
    result = remove_items(merged, dangling, node)
    return result if isinstance(result, dict) else {}


def _resolve_conflicts(kind: str, live: Any, merged: Any, managed: Managed, key: ManagerId, *, force: bool) -> None:
    if all(other == key for other in managed):
        return  # nobody else owns anything: nothing to conflict with or take away
    diff = compare(live, merged, schema_for(kind), skip=reset_fields(kind))  # reset fields are never reported
    changed = frozenset(diff.modified | diff.added)
    removed = frozenset(diff.removed)
    conflicts = {
        other: entry.fields & changed for other, entry in managed.items() if other != key and entry.owns_any(changed)
    }
    if conflicts and not force:
        raise Conflict(conflict_message(conflicts), kind=kind)
    _take_from_others(managed, changed | removed, skip=key)


def validate_field_manager(manager: str, *, kind: str, apply: bool) -> None:
    """:class:`Invalid` for a missing (on apply) or too long manager name, as PatchOptions says."""
    if apply and not manager:
        raise Invalid(
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
            kind=kind,
        )
    if len(manager) > FIELD_MANAGER_MAX_LENGTH:
        raise Invalid(
            f'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than '
            f"{FIELD_MANAGER_MAX_LENGTH} bytes",
            kind=kind,
        )


# --- storage ------------------------------------------------------------------------------------------


def settle_timestamps(stored: Obj, candidate: Obj) -> None:
    """Keep the stored entries' times when nothing but those times changed (in place), so a
    write that changes nothing stays a no-op (the store's ``IgnoreManagedFieldsTimestampsTransformer``)."""
    old = stored["metadata"].get("managedFields") or []
    new = candidate["metadata"].get("managedFields") or []
    if len(old) != len(new) or not new:
        return
    if all(a.get("time") == b.get("time") for a, b in zip(old, new, strict=True)):
        return
    if any(_untimed(a) != _untimed(b) for a, b in zip(old, new, strict=True)):
        return
    only_entries = frozenset({"managedFields"})
    if _comparable(stored, only_entries) != _comparable(candidate, only_entries):
        return
    candidate["metadata"] = {**candidate["metadata"], "managedFields": old}


def _untimed(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "time"}
