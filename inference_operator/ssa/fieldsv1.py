"""The ``fieldsV1`` JSON of ``managedFields``, to and from field sets, as the API server writes it.

Field sets are computed by :mod:`.fieldpaths`; this module spells them the way kube-apiserver
stores them in ``metadata.managedFields`` (key for key, in the server's order) and reads them
back, and prints paths the way the server's conflict messages do.
"""

from __future__ import annotations

import functools
import json
import marshal
import threading
from collections.abc import Iterable, Mapping
from typing import Any, cast

from inference_operator.ssa.fieldpaths import (
    _FIELD,
    _KEY,
    _VALUE,
    FieldSet,
    Path,
    PathElement,
    field_element,
    index_element,
    key_element,
    shared_field_set,
    value_element,
)

__all__ = [
    "element_string",
    "from_fields_v1",
    "known_field_set",
    "managed_fields_of",
    "parse_element",
    "shared_fields_v1",
    "to_fields_v1",
]


# --- fieldsV1 ------------------------------------------------------------------------------------------


def _json(value: Any) -> str:
    """Compact JSON as Go's encoder writes it (HTML characters escaped)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


@functools.lru_cache(maxsize=65536)
def element_string(element: PathElement) -> str:
    """The ``fieldsV1`` key of a path element: ``f:name``, ``k:{…}``, ``v:…`` or ``i:N``."""
    tag = element[0]
    if tag == _FIELD:
        return f"f:{element[1]}"
    if tag == _KEY:
        return "k:{" + ",".join(f"{_json(name)}:{_json(value)}" for name, _, value in element[1]) + "}"
    if tag == _VALUE:
        return f"v:{_json(element[2])}"
    return f"i:{element[1]}"


@functools.lru_cache(maxsize=65536)
def parse_element(text: str) -> PathElement:
    tag, _, rest = text.partition(":")
    if tag == "f":
        return field_element(rest)
    if tag == "k":
        keys = json.loads(rest)
        if not isinstance(keys, dict):
            raise ValueError(f"not a key path element: {text!r}")
        return key_element(keys)
    if tag == "v":
        return value_element(json.loads(rest))
    if tag == "i":
        return index_element(int(rest))
    raise ValueError(f"unknown path element type: {text!r}")


def to_fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` object of a field set, keys in the order the API server writes them
    (path elements sorted, ``.`` first where a member also has children); the caller's own.

    Field sets (frozensets) are encoded once and copied out: every write encodes the entries
    it changed, and objects of one shape share their sets (all Deployments the operator
    applies, all its status updates), so this was a sorting tree walk per write."""
    if type(fields) is frozenset:
        return cast(dict[str, Any], marshal.loads(_encoded(fields)))
    return _build(fields)


@functools.lru_cache(maxsize=256)
def _encoded(fields: FieldSet) -> bytes:
    return marshal.dumps(_shared(fields), 2)  # version 2: no shared references in the copies


def shared_fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    """:func:`to_fields_v1`, not copied: one object for every caller of the same set, which
    must never be modified. For the API server's store, whose objects are never modified in
    place and only ever handed out as copies (it shares untouched entries between versions
    already); a copy per write was most of the cost of encoding an entry."""
    return _shared(fields) if type(fields) is frozenset else _build(fields)


def _shared(fields: FieldSet) -> dict[str, Any]:
    return _encoding(fields, whole=True)


def _encoding(fields: FieldSet, *, whole: bool = False) -> dict[str, Any]:
    """The encoding of ``fields``, one object per set while it is remembered, and known by its
    identity (:func:`known_field_set`, :func:`_read`).

    A set encoded a second time is kept (the :data:`_KEPT_ENCODINGS` used last): those are
    the sets every object of a kind shares (a pod's conditions, a Deployment's status, the
    operator's apply), which must stay known however many objects are written between two
    writes of one. Sets encoded once (the corners that are one object's own: a pod's IP, an
    owner's uid, and the entries around them) are only among the last :data:`_RECENT_ENCODINGS`.
    Reading back a stored entry encoded longer ago then parses only those corners. The set
    of a ``whole`` entry is remembered with its paths shared with other entries' (memory).
    """
    kept = _KEPT.get(fields)
    if kept is not None:
        with _FIELDS_OF_LOCK:  # the most recently used last: the last to be forgotten
            if _KEPT.get(fields) is kept:
                del _KEPT[fields]
                _KEPT[fields] = kept
        return kept
    recent = _RECENT.get(fields)
    if recent is None:
        encoded = _build(fields)  # outside the lock: it encodes its subtrees through here
        with _FIELDS_OF_LOCK:
            meanwhile = _KEPT.get(fields, _RECENT.get(fields))  # another thread's
            if meanwhile is not None:
                return meanwhile
            if whole:  # the caller's paths are its walk's own tuples: keep shared ones instead
                fields = shared_field_set(fields)
            _RECENT[fields] = encoded
            _FIELDS_OF[id(encoded)] = (encoded, fields)
            while len(_RECENT) > _RECENT_ENCODINGS:
                _forget(_RECENT.pop(next(iter(_RECENT))))  # the oldest
        return encoded
    with _FIELDS_OF_LOCK:  # the second time: kept
        if _RECENT.get(fields) is recent:  # (not another thread's, made meanwhile)
            del _RECENT[fields]
            _KEPT[fields] = recent
            while len(_KEPT) > _KEPT_ENCODINGS:
                _forget(_KEPT.pop(next(iter(_KEPT))))  # the least recently used
    return recent


def _forget(encoded: dict[str, Any]) -> None:
    known = _FIELDS_OF.get(id(encoded))
    if known is not None and known[0] is encoded:
        del _FIELDS_OF[id(encoded)]


_RECENT_ENCODINGS = 4096
_KEPT_ENCODINGS = 2048
_RECENT: dict[FieldSet, dict[str, Any]] = {}
_KEPT: dict[FieldSet, dict[str, Any]] = {}
_FIELDS_OF_LOCK = threading.Lock()
_FIELDS_OF: dict[int, tuple[dict[str, Any], FieldSet]] = {}
"""The field set of each remembered encoding (:func:`_encoding`), by the encoding's id (held
there, so the id cannot be reused while it is known)."""


def known_field_set(fields_v1: Mapping[str, Any]) -> FieldSet | None:
    """The field set ``fields_v1`` encodes, when it is one of :func:`shared_fields_v1`'s recent
    results (the object itself, not an equal one); None otherwise. The API server's stored
    entries are, so a write that needs an entry's fields mostly need not parse them back."""
    known = _FIELDS_OF.get(id(fields_v1))
    return known[1] if known is not None and known[0] is fields_v1 else None


def _build(fields: Iterable[Path]) -> dict[str, Any]:
    """The ``fieldsV1`` of ``fields``, level by level: each element's subtree is encoded once per
    set of paths below it (:func:`_subtree`), so sets that differ in one corner (the owner
    reference's uid of each Pod a ReplicaSet makes) share the encoding of the rest."""
    below: dict[PathElement, list[Path]] = {}
    members: set[PathElement] = set()
    for path in fields:
        head = path[0]
        tails = below.get(head)
        if tails is None:
            tails = below[head] = []
        if len(path) == 1:
            members.add(head)
        else:
            tails.append(path[1:])
    out: dict[str, Any] = {}
    for element in sorted(below):
        tails = below[element]
        if not tails:
            out[element_string(element)] = {}
            continue
        subtree = _subtree(frozenset(tails))
        out[element_string(element)] = {".": {}, **subtree} if element in members else subtree
    return out


def _subtree(fields: FieldSet) -> dict[str, Any]:
    """The encoded subtree of ``fields`` (paths relative to it), shared: never to be modified."""
    return _encoding(fields)


def from_fields_v1(fields_v1: Mapping[str, Any]) -> FieldSet:
    """The field set a ``fieldsV1`` object records; unknown path element types are dropped."""
    out: set[Path] = set()
    _read(fields_v1, (), out)
    return frozenset(out)


def _read(node: Mapping[str, Any], prefix: Path, out: set[Path]) -> bool:
    """Add what ``node`` holds below ``prefix``; True if ``prefix`` itself is a member (it says
    ``.``, or it holds nothing SMD understands: a leaf)."""
    member = has_children = False
    for text, child in node.items():
        if text == ".":
            member = True
            continue
        try:
            element = parse_element(text)
        except ValueError:
            continue
        path = (*prefix, element)
        known = _FIELDS_OF.get(id(child))
        if known is not None and known[0] is child and known[1]:
            out.update([path + tail for tail in known[1]])  # not a member itself: it has no "."
            has_children = True
            continue
        before = len(out)
        if _read(child if isinstance(child, dict) else {}, path, out):
            out.add(path)
        has_children = has_children or len(out) > before
    return member or not has_children


# --- managedFields -------------------------------------------------------------------------------------


def managed_fields_of(
    obj: Mapping[str, Any], manager: str, operation: str = "Apply", *, subresource: str = ""
) -> FieldSet | None:
    """The fields ``manager`` owns through ``operation`` (``Apply`` or ``Update``) on ``obj``,
    from its ``metadata.managedFields``; None when there is no such entry."""
    meta = obj.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, Mapping) else None
    for entry in entries or ():
        if (
            entry.get("manager") == manager
            and entry.get("operation") == operation
            and entry.get("subresource", "") == subresource
        ):
            return from_fields_v1(entry.get("fieldsV1") or {})
    return None
