"""Which keys a watch event wakes: controller-runtime's event handlers, knowing no kind of ours.

A controller reconciles keys, not events. Between the watch and the workqueue sits one small
rule per watched kind, the same on every backend, that turns an event into the keys it
concerns:

- :class:`EnqueueForObject` (controller-runtime's ``EnqueueRequestForObject``): the object's
  own key, for the kind a controller is *for*. An update that changed nothing but status (and
  the resourceVersion) is filtered by a predicate, since the controller's own status writes
  would otherwise wake it again at once;
- :class:`EnqueueForOwner` (``EnqueueRequestForOwner`` with ``OnlyControllerOwner``): the key of
  the object's controlling owner of a given group and kind, for the kinds a controller *owns*.
  On an update the owners of the old *and* the new object are both woken, so an owner whose
  child was re-pointed at another owner learns it at once, not at the next resync;
- :class:`EnqueueForLabel` (``EnqueueRequestsFromMapFunc`` with a predicate): the key a
  label of the object names, in its namespace, for a kind a controller only reads, and only for
  the changes its predicate picks: a pod whose scheduler's words changed (given, new, or gone
  with the pod) wakes the service its owner label names; every other change of it wakes nothing.

A backend hands every event over as a :class:`WatchEvent` (what the cache held before, what it
holds now) and enqueues what :meth:`EventHandler.keys` returns, in that order.

It lives in core, below both the reconciler's ``reconcile/watches.py``, which names a handler for
each watched kind, and the backends and control loop that run them: the reconciler and the
control loop know nothing of each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from inference_operator.core.objects import Obj, controller_owner_key, key_of, obj_key

EventType = Literal["create", "update", "delete"]


@dataclass(frozen=True)
class WatchEvent:
    """One change the watch reported: ``old`` is None on create, ``new`` is None on delete."""

    type: EventType
    old: Obj | None
    new: Obj | None

    @property
    def obj(self) -> Obj:
        """The object as last seen: the new one, or the deleted one."""
        obj = self.new if self.new is not None else self.old
        if obj is None:
            raise ValueError("a watch event carries an object")
        return obj


class EventHandler(Protocol):
    def keys(self, event: WatchEvent) -> tuple[str, ...]:
        """The keys ``event`` wakes, in the order they are to be queued (none: ignore it)."""
        ...


@dataclass(frozen=True)
class EnqueueForObject:
    """The object's own key; updates only when ``changed(old, new)`` says they matter."""

    changed: Callable[[Obj, Obj], bool]

    def keys(self, event: WatchEvent) -> tuple[str, ...]:
        if (
            event.type == "update"
            and event.old is not None
            and event.new is not None
            and not self.changed(event.old, event.new)
        ):
            return ()
        return (obj_key(event.obj),)


@dataclass(frozen=True)
class EnqueueForOwner:
    """The key of the controlling owner of kind ``owner_kind`` in ``owner_group``: of the old
    object and of the new one, each once."""

    owner_group: str
    owner_kind: str

    def keys(self, event: WatchEvent) -> tuple[str, ...]:
        found: list[str] = []
        for obj in (event.old, event.new):
            if obj is None:
                continue
            key = controller_owner_key(obj, group=self.owner_group, kind=self.owner_kind)
            if key is not None and key not in found:
                found.append(key)
        return tuple(found)


@dataclass(frozen=True)
class EnqueueForLabel:
    """The key ``namespace/<value of label>`` of an object whose change ``changed(old, new)``
    says matters (``old`` None on create, ``new`` None on delete); an object without the label
    wakes nothing."""

    label: str
    changed: Callable[[Obj | None, Obj | None], bool]

    def keys(self, event: WatchEvent) -> tuple[str, ...]:
        meta = event.obj.get("metadata") or {}
        value = (meta.get("labels") or {}).get(self.label)
        if not value or not self.changed(event.old, event.new):
            return ()
        return (key_of(str(meta.get("namespace") or ""), str(value)),)
