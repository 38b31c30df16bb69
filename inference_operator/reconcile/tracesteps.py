"""What the reconciler tells the tracer in each phase, as plain values.

Each step of a pass returns (or the pass collects) a small record of what that phase saw and
decided: :class:`Observed`, :class:`Diffed` / :class:`Decided`, :class:`Acted` /
:class:`Finalized`, :class:`StatusDecided`. The reconciler tells the tracer from those records in
one place, and only while tracing is on do they become the fields of the trace's ``phase``
records (docs/trace-format.md), through the pure functions below: the object and children it
observed, the desired-vs-live difference of the fields it owns, the actions it took, the
status it computed. Values are redacted by the recorder, not here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from inference_operator.api.constants import DEPLOYMENT, SERVICE
from inference_operator.core.objects import Obj
from inference_operator.reconcile.announce import Action
from inference_operator.reconcile.stalls import Blocked

ABSENT = "<absent>"
"""Shown for a field the live object lacks (or a desired value the operator no longer sets)."""
_SEGMENT = re.compile(r"\.([^.\[]+)|\[([^\]]*)\]")
_SELECTOR = re.compile(r'([A-Za-z0-9_-]+)=("(?:[^"\\]|\\.)*"|[^,]*)')


def _summary(obj: Obj | None) -> Obj | None:
    if obj is None:
        return None
    meta = obj.get("metadata") or {}
    out: Obj = {"rv": str(meta.get("resourceVersion") or ""), "generation": meta.get("generation")}
    if meta.get("deletionTimestamp"):
        out["deleting"] = True
    return out


def observed(obj: Obj | None, children: dict[str, Obj | None]) -> Obj:
    """The observe phase: the InferenceService (spec and status) and its children, from the cache."""
    if obj is None:
        return {"found": False, "decision": "gone: nothing to do (owner references take the children)"}
    meta = obj.get("metadata") or {}
    out: Obj = {
        "found": True,
        "object": {
            **(_summary(obj) or {}),
            "finalizers": list(meta.get("finalizers") or []),
            "spec": obj.get("spec") or {},
            "status": obj.get("status") or {},
        },
        "children": {},
    }
    for kind, child in children.items():
        summary = _summary(child)
        if child is not None and summary is not None and kind == "Deployment":
            st = child.get("status") or {}
            summary["replicas"] = (child.get("spec") or {}).get("replicas")
            summary["readyReplicas"] = st.get("readyReplicas", 0)
            summary["observedGeneration"] = st.get("observedGeneration")
        out["children"][kind] = summary
    return out


def value_at(obj: Any, path: str) -> Any:
    """The value at a field path as ``drift`` prints it (``.spec.template.spec.containers[name="server"].env``),
    or :data:`ABSENT`."""
    current = obj
    for match in _SEGMENT.finditer(path):
        field, selector = match.group(1), match.group(2)
        if field is not None:
            if not isinstance(current, dict) or field not in current:
                return ABSENT
            current = current[field]
            continue
        if not isinstance(current, list):
            return ABSENT
        if selector.isdigit():
            index = int(selector)
            current = current[index] if index < len(current) else ABSENT
            continue
        wanted = {k: _literal(v) for k, v in _SELECTOR.findall(selector)}
        found = [item for item in current if isinstance(item, dict) and _matches(item, wanted)]
        if len(found) != 1:
            return ABSENT
        current = found[0]
    return current


def _literal(text: str) -> Any:
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1].replace('\\"', '"')
    if text.isdigit():
        return int(text)
    return text


def _matches(item: Obj, wanted: Obj) -> bool:
    return all(str(item.get(k)) == str(v) for k, v in wanted.items())


def diffed(kind: str, live: Obj | None, desired: Obj, changed: list[str] | None, *, conflict: bool = False) -> Obj:
    """The diff phase for one child: ``create`` (with the whole desired object), ``patch`` (each
    owned field that differs, desired and live), ``none`` or ``conflict`` (not ours)."""
    if conflict:
        return {"subject": kind, "decision": "conflict", "reason": "a same-named object is not controlled by us"}
    if live is None:
        return {"subject": kind, "decision": "create", "desired": desired}
    if not changed:
        return {"subject": kind, "decision": "none", "fields": []}
    return {
        "subject": kind,
        "decision": "patch",
        "fields": [
            {"path": path, "desired": value_at(desired, path), "live": value_at(live, path)} for path in changed
        ],
    }


def acted(children: dict[str, Action], *, finalizer_added: bool, lb_note: str, blocked: list[str]) -> Obj:
    """The act phase: what the pass did, as values (the writes themselves are ``write`` records)."""
    actions: list[Obj] = []
    for kind, action in children.items():
        if action is not None:
            entry: Obj = {"action": action.verb.lower(), "kind": kind}
            if action.fields:
                entry["fields"] = action.fields.split(", ")
            actions.append(entry)
    if finalizer_added:
        actions.append({"action": "add-finalizer"})
    if lb_note:
        actions.append({"action": "load-balancer", "note": lb_note})
    return {"actions": actions, "blocked": blocked}


def status_decided(previous: Obj, status: Obj, *, written: bool, deferred: bool = False) -> Obj:
    """The update-status phase: the status computed, whether it was written, and what moved."""
    changed = sorted(k for k in set(previous) | set(status) if previous.get(k) != status.get(k))
    out: Obj = {"written": written, "changedFields": changed, "status": status}
    if deferred:
        out["deferred"] = "the Deployment controller has not observed the new spec yet"
    return out


# --- what each phase saw and decided ------------------------------------------------------


class PhaseRecord(Protocol):
    """A phase's record: which phase, and its fields in the trace (computed only when asked)."""

    @property
    def phase(self) -> str: ...

    def fields(self) -> Obj: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """The observe phase: the InferenceService as read (None: gone); the children are read
    through ``read_child`` only for the trace (the pass itself reads each as it gets to it)."""

    obj: Obj | None
    read_child: Callable[[str], Obj | None]
    phase: ClassVar[str] = "observe"

    def fields(self) -> Obj:
        return observed(self.obj, {kind: self.read_child(kind) for kind in (DEPLOYMENT, SERVICE)})


@dataclass(frozen=True, slots=True, kw_only=True)
class Diffed:
    """The diff phase of one child: what is live (None: nothing, create it), what the operator
    applies, the owned fields that differ, and whether the live one is someone else's."""

    kind: str
    live: Obj | None
    desired: Obj
    changed: list[str] | None
    conflict: bool = False
    phase: ClassVar[str] = "diff"

    def fields(self) -> Obj:
        return diffed(self.kind, self.live, self.desired, self.changed, conflict=self.conflict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """A diff phase about the object as a whole: its deletion, or a spec that does not parse."""

    subject: str
    decision: str
    reason: str
    phase: ClassVar[str] = "diff"

    def fields(self) -> Obj:
        return {"subject": self.subject, "decision": self.decision, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Acted:
    """The act phase of a live object: what was done to each child, whether the finalizer was
    added, what the load balancer step said, and the writes refused."""

    children: dict[str, Action]
    finalizer_added: bool
    lb_note: str
    blocked: Sequence[Blocked]
    phase: ClassVar[str] = "act"

    def fields(self) -> Obj:
        stalls = [b.condition.message for b in self.blocked]
        return acted(self.children, finalizer_added=self.finalizer_added, lb_note=self.lb_note, blocked=stalls)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finalized:
    """The act phase of a deletion: the load balancer released (unless no record could exist)
    and the finalizer removed."""

    released: bool
    phase: ClassVar[str] = "act"

    def fields(self) -> Obj:
        released = [{"action": "release-load-balancer"}] if self.released else []
        return {"actions": [*released, {"action": "remove-finalizer"}]}


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusDecided:
    """The status phase: the status found and the one computed (the same when the write is
    ``deferred``); it is written when they differ."""

    previous: Obj
    status: Obj
    deferred: bool = False
    phase: ClassVar[str] = "status"

    @property
    def written(self) -> bool:
        return not self.deferred and self.status != self.previous

    def fields(self) -> Obj:
        return status_decided(self.previous, self.status, written=self.written, deferred=self.deferred)
