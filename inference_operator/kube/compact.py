"""The cache's objects stored compactly: one copy of each name, and of each part of an ownership record.

Each watch event's object is parsed from JSON on its own, so a thousand cached Deployments hold a
thousand copies of every key (``metadata``, ``f:containers`` …) and of every short value
(``apps/v1``, an image, ``True``). Each also keeps our server-side apply entry, whose ``fieldsV1``
is a tree of small dicts, the same for all the operator's Deployments but for the owner's uid.
That was more than half of the cache (measured by bench/cache_memory.py):

- keys, and strings of at most ``SHORT`` characters, are interned (``sys.intern``): one object per
  distinct string, freed once no cached object holds it;
- the ``fieldsV1`` of every ``managedFields`` entry is hash-consed: equal subtrees are one object,
  found again through a table of the ``REMEMBERED`` most recently used subtrees.

Most watch events are a new version of an object the cache holds, with one part changed (a
Deployment's status, a pod's conditions). Given that earlier version (``like``, compacted before),
every part equal to the one it held is reused as it is, so only what changed is copied: equal
compares at C speed, and the reused parts are compact already. Python's ``==`` takes ``1`` for
``1.0`` and ``true``: each part reused must be of the same type, but within it ``==`` decides, so
a field that turned from ``1`` to ``true`` with nothing else changed beside it would keep the
earlier spelling. The kinds cached are typed (built-in kinds, the CRD's structural schema without
unknown fields): a field there keeps its JSON type from version to version.

The result equals the input and shares nothing mutable with it. The ``fieldsV1`` subtrees are
shared between cached objects, so the rule that the cache's objects are read-only (the informer
contract; nothing writes them) now also keeps one object's change out of the others.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, cast

from inference_operator.core.objects import Obj

__all__ = ["REMEMBERED", "SHORT", "compact"]

SHORT = 64
"""Strings up to this length are interned: names, kinds, images, statuses, label values; longer
ones (messages, annotations) are rarely equal between objects."""
REMEMBERED = 4096
"""How many ``fieldsV1`` subtrees the table keeps (the least recently used goes first); a subtree
it forgot is built again and shared from then on."""

# Interned strings are freed once unused, except on CPython 3.12.0 to 3.12.5, where sys.intern made
# them immortal (every uid and resourceVersion would stay for good): there, strings are kept as
# they come and only the ownership records are shared.
_intern = (lambda text: text) if (3, 12, 0) <= sys.version_info[:3] < (3, 12, 6) else sys.intern
_lock = threading.Lock()
_trees: dict[tuple[tuple[str, int], ...], dict[str, Any]] = {}
"""Each remembered subtree by its members: (key, id of the shared child). A child's id is stable
while any entry names it, since that entry's subtree holds the child."""


_ABSENT: Any = object()


def compact(obj: Obj, like: Obj | None = None) -> Obj:
    """An equal copy of ``obj`` with its strings interned and its ownership records shared;
    ``like``, an earlier compacted version of the same object, lends the parts still equal."""
    out: Obj = {}
    for key, value in obj.items():
        old = like.get(key, _ABSENT) if like is not None else _ABSENT
        if _unchanged(old, value):
            out[_intern(key)] = old
        elif key == "metadata" and type(value) is dict:
            out["metadata"] = _metadata(value, old if type(old) is dict else None)
        else:
            out[_intern(key)] = _copy_like(value, old)
    return out


def _metadata(meta: dict[str, Any], like: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in meta.items():
        old = like.get(key, _ABSENT) if like is not None else _ABSENT
        if _unchanged(old, value):
            out[_intern(key)] = old
        elif key == "managedFields" and type(value) is list:
            out["managedFields"] = [_entry(e) if type(e) is dict else _copy(e) for e in value]
        else:
            out[_intern(key)] = _copy(value)
    return out


def _unchanged(old: Any, new: Any) -> bool:
    """``old`` (a compacted part) can stand for ``new``: of the same type, and equal."""
    return type(old) is type(new) and old == new


def _copy_like(value: Any, like: Any) -> Any:
    """:func:`_copy` of ``value``, reusing the parts of ``like`` (its earlier version) still equal."""
    kind = type(value)
    if kind is dict and type(like) is dict:
        out = {}
        for key, item in value.items():
            old = like.get(key, _ABSENT)
            out[_intern(key)] = old if _unchanged(old, item) else _copy_like(item, old)
        return out
    if kind is list and type(like) is list and len(like) == len(value):
        pairs = zip(value, like, strict=True)
        return [old if _unchanged(old, item) else _copy_like(item, old) for item, old in pairs]
    return _copy(value)


def _entry(entry: dict[str, Any]) -> dict[str, Any]:
    return {_intern(k): (_shared(v) if k == "fieldsV1" else _copy(v)) for k, v in entry.items()}


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {_intern(k): _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    if kind is str and len(value) <= SHORT:
        return _intern(value)
    return value


def _shared(tree: Any) -> Any:
    """``tree`` (a ``fieldsV1`` object) as the remembered equal one, subtree by subtree."""
    with _lock:  # once per tree: the walk is short, and other threads' trees wait a few µs
        return _remembered(tree)


def _remembered(tree: Any) -> Any:
    if type(tree) is not dict:
        return _copy(tree)
    members = [(_intern(k), _remembered(v)) for k, v in cast(dict[str, Any], tree).items()]
    key = tuple([(k, id(v)) for k, v in members])
    found = _trees.pop(key, None)  # found or not, it becomes the most recently used
    if found is None:
        found = dict(members)
    _trees[key] = found
    if len(_trees) > REMEMBERED:
        del _trees[next(iter(_trees))]  # the least recently used
    return found
