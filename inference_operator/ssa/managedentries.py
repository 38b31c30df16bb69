"""The entries of ``metadata.managedFields``: who they name, how they are encoded, how conflicts read.

The API server identifies an entry by manager, operation, apiVersion (Update entries only) and
subresource, sorts entries by operation, time and manager, and prints a manager in a conflict as
``"kubectl-edit" using apps/v1``. Clients read those entries and messages (the operator's compare,
users reading ``kubectl get --show-managed-fields``), so the simulator writes them byte for byte
the same. The bookkeeping itself is :mod:`.managedfields`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inference_operator.ssa.fieldpaths import FieldSet, Path, path_string
from inference_operator.ssa.fieldsv1 import element_string, from_fields_v1, known_field_set, shared_fields_v1

__all__ = [
    "Entry",
    "Managed",
    "ManagerId",
    "conflict_message",
    "decode",
    "encode",
    "is_reset",
    "iteration_order",
    "set_managed_fields",
]


@dataclass(frozen=True)
class ManagerId:
    """What identifies a managedFields entry (Apply entries are not per apiVersion)."""

    manager: str
    operation: str
    api_version: str = ""
    subresource: str = ""

    def identifier(self) -> str:
        """The server's identifier (a JSON object): the sort key of conflicts and capping."""
        fields = {"manager": self.manager, "operation": self.operation}
        if self.api_version:
            fields["apiVersion"] = self.api_version
        if self.subresource:
            fields["subresource"] = self.subresource
        return json.dumps(fields, separators=(",", ":"))

    def printed(self) -> str:
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource, ensure_ascii=False)}"
        return f"{text} using {self.api_version}" if self.operation == "Update" else text


class Entry:
    """One manager's fields. An entry read from a stored object keeps its encoded form and parses
    its field set only when asked: most writes leave most entries alone, and those are stored
    again as they were, without a parse or an encoding. A restamped entry (new time, same
    fields) keeps its encoded ``fieldsV1``. An entry whose ``fieldsV1`` this process encoded
    lately knows its set without a parse (:func:`~.fieldsv1.known_field_set`)."""

    __slots__ = ("_fields", "api_version", "encoded", "fields_v1", "time")

    def __init__(
        self,
        fields: FieldSet | None,
        api_version: str,
        time: str | None = None,
        *,
        encoded: dict[str, Any] | None = None,
        fields_v1: dict[str, Any] | None = None,
    ):
        self.api_version = api_version
        self.time = time
        self.encoded = encoded
        """The whole stored entry, when this one is stored again unchanged."""
        self.fields_v1 = fields_v1 if fields_v1 is not None else (encoded or {}).get("fieldsV1")
        """The encoded field set, when known."""
        if fields is None and self.fields_v1 is not None:
            fields = known_field_set(self.fields_v1)  # encoded here lately: no parse needed
        self._fields = fields

    @property
    def fields(self) -> FieldSet:
        if self._fields is None:
            self._fields = from_fields_v1(self.fields_v1 or {})
        return self._fields

    def owns_any(self, paths: Iterable[Path]) -> bool:
        """Whether some of ``paths`` are this entry's (without parsing a stored entry)."""
        if self._fields is not None or self.fields_v1 is None:
            return not self.fields.isdisjoint(paths)
        encoded = self.fields_v1
        paths = paths if isinstance(paths, frozenset | set) else frozenset(paths)
        if () in paths and _recorded(encoded, ()):
            return True
        heads = {element_string(head) for head in {path[0] for path in paths if path}}
        if heads.isdisjoint(encoded):  # what one manager changes is mostly under fields others do not own
            return False
        return any(_recorded(encoded, path) for path in paths)

    def owns_all(self, paths: Iterable[Path]) -> bool:
        if self._fields is not None or self.fields_v1 is None:
            return self.fields.issuperset(paths)
        return all(_recorded(self.fields_v1, path) for path in paths)

    def without(self, paths: FieldSet) -> Entry | None:
        """This entry less ``paths`` (itself when it owns none of them; None when nothing is left)."""
        if not self.owns_any(paths):
            return self
        left = self.fields - paths
        return Entry(left, self.api_version, self.time) if left else None

    def restamped(self, time: str | None, api_version: str) -> Entry:
        """The same fields, written again at ``time``."""
        if time == self.time and api_version == self.api_version:
            return self
        return Entry(self._fields, api_version, time, fields_v1=self.fields_v1)


def _recorded(fields_v1: Mapping[str, Any], path: Path) -> bool:
    node: Any = fields_v1
    for element in path:
        node = node.get(element_string(element)) if isinstance(node, dict) else None
        if node is None:
            return False
    return not node or "." in node


Managed = dict[ManagerId, Entry]


# --- encoding -----------------------------------------------------------------------------------------


def decode(entries: Any, *, stored: bool = False) -> Managed:
    """The entries of ``metadata.managedFields``; :class:`ValueError` when one is malformed.

    ``stored`` entries (the server's own encoding, never modified) are kept as they are until
    needed; a client's are parsed now and encoded afresh, so the store never holds its dicts.
    """
    managed: Managed = {}
    for entry in entries or ():
        if not isinstance(entry, dict) or entry.get("operation") not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        if not entry.get("apiVersion"):
            raise ValueError("apiVersion must not be empty")
        if entry.get("fieldsType") != "FieldsV1":
            raise ValueError(f"invalid fieldsType {entry.get('fieldsType')!r}")
        operation = entry["operation"]
        key = ManagerId(
            entry.get("manager", ""),
            operation,
            "" if operation == "Apply" else entry["apiVersion"],
            entry.get("subresource", ""),
        )
        if stored:
            managed[key] = Entry(None, entry["apiVersion"], entry.get("time"), encoded=entry)
        else:
            fields = from_fields_v1(entry.get("fieldsV1") or {})
            managed[key] = Entry(fields, entry["apiVersion"], entry.get("time"))
    return managed


def encode(managed: Managed) -> list[dict[str, Any]] | None:
    """``metadata.managedFields`` as the server writes it: sorted, ``time`` only when known."""
    entries = []
    for key, entry in managed.items():
        if entry.encoded is not None:
            entries.append(entry.encoded)
            continue
        out: dict[str, Any] = {"manager": key.manager, "operation": key.operation, "apiVersion": entry.api_version}
        if entry.time is not None:
            out["time"] = entry.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = entry.fields_v1 if entry.fields_v1 is not None else shared_fields_v1(entry.fields)
        if key.subresource:
            out["subresource"] = key.subresource
        entries.append(out)
    entries.sort(
        key=lambda e: (e["operation"], e.get("time") or "", e["manager"], e["apiVersion"], e.get("subresource", ""))
    )
    return entries or None


def is_reset(entries: Any) -> bool:
    """``managedFields: []`` or ``[{}]`` in a request clears them."""
    return isinstance(entries, list) and (entries == [] or entries == [{}])


def conflict_message(conflicts: Mapping[ManagerId, FieldSet]) -> str:
    ordered = sorted(conflicts, key=ManagerId.identifier)
    total = sum(len(fields) for fields in conflicts.values())
    if total == 1:
        (key,) = ordered
        (path,) = conflicts[key]
        return f"Apply failed with 1 conflict: conflict with {key.printed()}: {path_string(path)}"
    lines = []
    for key in ordered:
        lines.append(f"conflicts with {key.printed()}:")
        lines.extend(f"- {path_string(path)}" for path in iteration_order(conflicts[key]))
    return f"Apply failed with {total} conflicts: " + "\n".join(lines)


def iteration_order(fields: FieldSet) -> list[Path]:
    """SMD's ``Set.Iterate`` order: at each level the members, then the children, each sorted."""
    out: list[Path] = []
    level = sorted({p[:1] for p in fields})
    out.extend(p for p in level if p in fields)
    for head in level:
        below = frozenset(p[1:] for p in fields if p[:1] == head and len(p) > 1)
        out.extend((*head, *rest) for rest in iteration_order(below))
    return out


def set_managed_fields(obj: dict[str, Any], entries: list[dict[str, Any]] | None) -> None:
    """Put ``entries`` in ``obj``'s metadata (a fresh dict: the old one may be a stored object's)."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    if entries:
        meta["managedFields"] = entries
    obj["metadata"] = meta
