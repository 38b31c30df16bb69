"""The entries of ``metadata.managedFields``: who they name, how they are encoded, how conflicts read.

The API server identifies an entry by manager, operation, apiVersion (Update entries only) and
subresource, sorts entries by operation, time and manager, and prints a manager in a conflict as
``"kubectl-edit" using apps/v1``. Clients read those entries and messages (the operator's compare,
users reading ``kubectl get --show-managed-fields``), so the simulator writes them byte for byte
the same. The bookkeeping itself is :mod:`.managedfields`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..fieldpaths import FieldSet, Path, from_fields_v1, path_string, to_fields_v1

__all__ = [
    "Entry",
    "Managed",
    "ManagerId",
    "conflict_message",
    "decode",
    "encode",
    "is_reset",
    "iteration_order",
]

Obj = dict[str, Any]


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


@dataclass(frozen=True)
class Entry:
    fields: FieldSet
    api_version: str
    time: str | None = None


Managed = dict[ManagerId, Entry]


# --- encoding -----------------------------------------------------------------------------------------


def decode(entries: Any) -> Managed:
    """The entries of ``metadata.managedFields``; :class:`ValueError` when one is malformed."""
    managed: Managed = {}
    for entry in entries or ():
        if not isinstance(entry, Mapping) or entry.get("operation") not in ("Apply", "Update"):
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
        managed[key] = Entry(from_fields_v1(entry.get("fieldsV1") or {}), entry["apiVersion"], entry.get("time"))
    return managed


def encode(managed: Managed) -> list[Obj] | None:
    """``metadata.managedFields`` as the server writes it: sorted, ``time`` only when known."""
    entries = []
    for key, entry in managed.items():
        out: Obj = {"manager": key.manager, "operation": key.operation, "apiVersion": entry.api_version}
        if entry.time is not None:
            out["time"] = entry.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = to_fields_v1(entry.fields)
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
