"""Field ownership left by operator versions before server-side apply, turned into ours.

Children written by those versions (a POST, merge patches) are owned through an ``Update``
entry of our field manager holding every field they had, defaults included; while it stays,
a field we stop applying is never removed (and a changed port would sit next to the old one).
Before the first apply, that entry becomes our apply entry, as kubectl's client-side to
server-side upgrade does: the apply then removes whatever it no longer sets.
"""

from __future__ import annotations

import logging

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.core.objects import Obj
from inference_operator.core.ports import Backend

log = logging.getLogger(__name__)

__all__ = ["upgrade_ownership"]


def upgrade_ownership(backend: Backend, kind: str, namespace: str, name: str) -> None:
    """One read and one write, once per such child; nothing when it has no legacy entry."""
    live = backend.read(kind, namespace, name)
    if live is None:
        return
    meta = live["metadata"]
    entries = meta.get("managedFields") or []
    if not any(_legacy_entry(e) for e in entries):
        return
    upgraded = [{**e, "operation": "Apply"} if _legacy_entry(e) else e for e in entries]
    backend.patch(
        kind, namespace, name, {"metadata": {"managedFields": upgraded, "resourceVersion": meta["resourceVersion"]}}
    )
    log.info("Upgraded field ownership to apply kind=%s name=%s namespace=%s", kind, name, namespace)


def _legacy_entry(entry: Obj) -> bool:
    return entry.get("manager") == FIELD_MANAGER and entry.get("operation") == "Update" and not entry.get("subresource")
