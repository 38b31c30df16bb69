"""One run of one check on one backend: a fresh namespace, the check, its trace; and the diff."""

from __future__ import annotations

import difflib
import hashlib
import uuid
from typing import Any

import yaml

from .recorder import Api
from .registry import CHECKS
from .transports import KINDS, Request, Transport

Trace = list[dict[str, Any]]


def new_namespace(check: str) -> str:
    """A namespace name unique to this run of ``check`` (real namespaces are deleted lazily)."""
    digest = hashlib.sha1(check.encode()).hexdigest()[:6]
    return f"conf-{digest}-{uuid.uuid4().hex[:5]}"


def run_check(name: str, transport: Transport, namespace: str) -> Trace:
    """Run the check ``name`` in a new ``namespace`` on ``transport``; its trace."""
    manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    made = transport.request(Request("create", "Namespace", body=manifest))
    if made.code != 201:
        raise RuntimeError(f"could not create namespace {namespace} on {transport.name}: {made.body}")
    api = Api(transport, namespace)
    try:
        CHECKS[name](api)
    finally:
        if transport.name == "real":
            release_finalizers(transport, namespace)
            transport.request(Request("delete", "Namespace", name=namespace))
    return api.trace


def release_finalizers(transport: Transport, namespace: str) -> None:
    """Take every finalizer off what a check left in ``namespace`` (InferenceServices carry the
    operator's, and no operator runs during the suite), so the namespace controller can delete
    it at once instead of retrying hundreds of stuck namespaces for the rest of the session."""
    for kind, info in KINDS.items():
        if not info.namespaced:
            continue
        listed = transport.request(Request("list", kind, namespace))
        for item in listed.body.get("items", []) if listed.code == 200 else []:
            if item["metadata"].get("finalizers"):
                patch = {"metadata": {"finalizers": None}}
                transport.request(Request("patch", kind, namespace, item["metadata"]["name"], body=patch))


def diff(fake: Trace, real: Trace) -> str:
    left = yaml.safe_dump(fake, sort_keys=True, width=200).splitlines()
    right = yaml.safe_dump(real, sort_keys=True, width=200).splitlines()
    return "\n".join(difflib.unified_diff(left, right, "fake", "real", lineterm="", n=6))
