"""The manifests ``demo -f`` runs: the files people have, read as ``kubectl apply -f`` reads them.

Why this exists: a manifest in the wild is rarely one hand-written InferenceService. It holds a
``Namespace`` and the object in it, several documents, a ``kind: List`` (what ``kubectl get -o
yaml`` prints for more than one object), or an object exported from a cluster, with everything
the server set on it: ``uid``, ``resourceVersion``, ``creationTimestamp``, ``generation``,
``managedFields``, ``status``. :func:`read_manifests` reads such a file (bounded:
:mod:`.core.files`, :mod:`.boundedyaml`) into the objects to apply, in order, and checks each
as far as can be done without a server: envelope, metadata, and for an InferenceService its
name and spec (the operator's own parser, as strict as the CRD's schema).

Server-populated fields are dropped, not refused, and the simulation says so on its timeline.
That is what ``kubectl apply`` (client-side, its default) amounts to for an object the cluster
does not hold yet: kubectl clears ``resourceVersion`` before it creates, and the API server
replaces ``uid``, ``creationTimestamp`` and ``generation`` with its own and ignores ``status``
of a kind with a status subresource. (``kubectl apply --server-side`` would instead refuse the
file with ``metadata.managedFields must be nil``; someone re-creating an exported object
wants it to run, and nothing they meant is lost: these fields describe the old object.)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Final

import yaml

from inference_operator.api.constants import API_VERSION, KIND
from inference_operator.api.models import SpecError, check_name, parse_spec
from inference_operator.core.boundedyaml import YamlLimitError, load_documents
from inference_operator.core.files import InputFileError, read_text_file
from inference_operator.core.objects import Obj

__all__ = ["MAX_MANIFEST_BYTES", "SERVER_POPULATED", "Manifest", "ManifestError", "read_manifests", "read_objects"]


MAX_MANIFEST_BYTES: Final = 1 << 20
"""A manifest larger than this is no manifest (an exported InferenceService is about 5 KiB)."""
SERVER_POPULATED: Final = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
"""``metadata`` fields the API server sets itself; an exported object carries them."""
SUPPORTED: Final = {KIND: API_VERSION, "Namespace": "v1", "ConfigMap": "v1", "Secret": "v1", "Node": "v1"}
"""What ``demo -f`` simulates, by kind, with its apiVersion."""
_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_MAX_LIST_DEPTH: Final = 8


class ManifestError(ValueError):
    """A manifest that cannot be applied; the message is one line naming the file and the problem."""


@dataclass
class Manifest:
    """What a manifest file asks for: objects to apply, in order, and what was dropped from them."""

    source: str
    objects: list[Obj] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    """One line per object that lost server-populated fields: ``InferenceService llama: metadata.uid, status``."""

    @property
    def inference_services(self) -> list[Obj]:
        return [obj for obj in self.objects if obj["kind"] == KIND]

    @property
    def nodes(self) -> list[Obj]:
        """Nodes to run the simulated cluster on (none: the simulator's default two)."""
        return [obj for obj in self.objects if obj["kind"] == "Node"]


def read_manifests(path: str, *, stdin: BinaryIO | None = None) -> Manifest:
    """Read and check the manifest file ``path`` (``-``: standard input); :class:`ManifestError`
    with one line naming the file, the document and the problem."""
    manifest = Manifest(source=path)
    for obj in read_objects(path, limit=MAX_MANIFEST_BYTES, stdin=stdin):
        manifest.objects.append(_checked(obj, manifest))
    if not manifest.inference_services:
        found = ", ".join(sorted({obj["kind"] for obj in manifest.objects})) or "nothing"
        raise ManifestError(f"{path}: no {KIND} in it (found {found}); demo -f simulates InferenceServices")
    return manifest


def read_objects(path: str, *, limit: int, stdin: BinaryIO | None = None) -> list[Any]:
    """The objects of the YAML file ``path`` (at most ``limit`` bytes), Lists flattened, in order,
    not yet checked; :class:`ManifestError` naming the file, and the line or document."""
    try:
        text = read_text_file(path, limit=limit, stdin=stdin)
    except InputFileError as err:
        raise ManifestError(str(err)) from None
    try:
        documents = list(load_documents(text))
    except YamlLimitError as err:
        raise ManifestError(f"{path}: {err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ManifestError(f"{path}:{where} not valid YAML: {problem}") from None
    objects: list[Any] = []
    for number, document in enumerate(documents, start=1):
        objects += _flatten(document, f"{path}: document {number}", 0)
    return objects


def _flatten(document: Any, where: str, depth: int) -> list[Obj]:
    """A document's objects: itself, or the items of a ``List`` (any ``…List`` kind with items), in order."""
    if not isinstance(document, dict):
        raise ManifestError(f"{where}: is {_a(document)}, not an object with apiVersion and kind")
    kind = document.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in document:
        items = document["items"]
        if not isinstance(items, list):
            raise ManifestError(f"{where}: {kind}.items is {_a(items)}, not a list")
        if depth >= _MAX_LIST_DEPTH:
            raise ManifestError(f"{where}: Lists nested more than {_MAX_LIST_DEPTH} deep")
        out: list[Obj] = []
        for index, item in enumerate(items):
            out += _flatten(item, f"{where} item {index}", depth + 1)
        return out
    return [document]


def _a(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), "null")


def _checked(obj: Obj, manifest: Manifest) -> Obj:
    """``obj`` without server-populated fields (noted in ``manifest.dropped``), if it is one ``demo -f`` can apply."""
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        raise ManifestError(f"{manifest.source}: an object has no kind (kubectl: error validating data: kind not set)")
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    what = f"{manifest.source}: {kind} {name if isinstance(name, str) and name else '(no name)'}"
    if not isinstance(api_version, str) or not api_version:
        raise ManifestError(f"{what}: apiVersion not set")
    if SUPPORTED.get(kind) != api_version:
        if kind in SUPPORTED:
            raise ManifestError(f"{what}: apiVersion {api_version} is not served; use {SUPPORTED[kind]}")
        known = ", ".join(SUPPORTED)
        raise ManifestError(f"{what}: demo -f simulates {known} objects, not {kind} ({api_version})")
    if not isinstance(meta, dict):
        raise ManifestError(f"{what}: metadata is {_a(meta)}, not an object with a name")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{what}: metadata.name is required")
    if "generateName" in meta:
        raise ManifestError(f"{what}: metadata.generateName: kubectl apply cannot use it (kubectl create can)")
    namespace = meta.get("namespace")
    if kind == "Namespace":
        namespace = name
    elif kind == "Node":
        namespace = None  # cluster-scoped: kubectl ignores a namespace given for it
    elif namespace is not None and (not isinstance(namespace, str) or not namespace):
        raise ManifestError(f"{what}: metadata.namespace must be a non-empty string")
    if namespace is not None and (len(namespace) > 63 or not _LABEL.match(namespace)):
        raise ManifestError(
            f"{what}: namespace {namespace!r} is not a valid name (at most 63 lowercase letters, digits and '-')"
        )
    if kind != KIND and (len(name) > 253 or not _SUBDOMAIN.match(name)):
        raise ManifestError(f"{what}: metadata.name {name!r} is not a valid name (lowercase letters, digits, '-', '.')")
    for key in ("data", "stringData", "binaryData") if kind in ("ConfigMap", "Secret") else ():
        values = obj.get(key)
        if values is not None and (
            not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values())
        ):
            raise ManifestError(f"{what}: {key} must map keys to strings (quote numbers and booleans)")
    cleaned, dropped = _without_server_fields(obj)
    if dropped:
        manifest.dropped.append(f"{kind} {name}: {', '.join(dropped)}")
    if kind == KIND:
        try:
            check_name(name)
            parse_spec(cleaned.get("spec"))
        except SpecError as err:
            raise ManifestError(f"{what}: invalid: {err.message}") from None
    return cleaned


def _without_server_fields(obj: Obj) -> tuple[Obj, list[str]]:
    meta = dict(obj["metadata"])
    dropped = [f"metadata.{key}" for key in SERVER_POPULATED if key in meta]
    for key in SERVER_POPULATED:
        meta.pop(key, None)
    cleaned = {**obj, "metadata": meta}
    if "status" in cleaned and obj["kind"] in (KIND, "Namespace"):  # kinds whose status the server writes
        del cleaned["status"]
        dropped.append("status")
    return cleaned, dropped
