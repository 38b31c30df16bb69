"""The custom resources a FakeApiServer serves: the schemas its CustomResourceDefinitions declare.

Creating a CustomResourceDefinition in kube-apiserver changes how every write of its kind is
treated, and so it does in the fake: the server hands each CRD it stores to
:meth:`CustomResources.register` (and each one it removes to :meth:`~CustomResources.forget`);
from then on each write of that kind goes through the real server's pipeline, in its order:

1. decoding (:meth:`~CustomResources.decode`): unknown fields pruned, ``metadata`` coerced to
   ObjectMeta, then structural defaults filled in (:mod:`.crdschema`). This happens to the
   request's whole object: the body of a create or an update, a merge patch applied to the
   stored object, the result of a server-side apply, the body sent to ``/status``. Reads are
   defaulted too (:meth:`~CustomResources.defaulted`): objects stored before a CRD gained a
   default are read with it;
2. for a server-side apply, before anything else (:meth:`~CustomResources.check_applied`): the
   applied configuration must fit the schema (no undeclared field, no value of the wrong
   type), or the real server fails to build its typed patch and answers 500;
3. validation (:meth:`~CustomResources.validate`), after the write strategy has built the
   object to store: the OpenAPI schema, the scale subresource's replicas path, list-type
   uniqueness, then, unless an error of a blocking type came up, the CEL rules (:mod:`.cel`)
   with the stored object as ``oldSelf`` on update. All errors go out in one :class:`Invalid`,
   worded like the real server's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from inference_operator.core.errors import ApiError, Invalid
from inference_operator.core.jsoncopy import copy_without_nulls
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver import cel, crdschema, crdvalidation
from inference_operator.sim.apiserver.crdschema import BLOCKING, OBJECT_META_FIELDS, FieldError
from inference_operator.sim.apiserver.managedfields import BadRequest

__all__ = ["CustomResource", "CustomResources", "TypedPatchFailed"]

Schema = Mapping[str, Any]


class TypedPatchFailed(ApiError):
    """A server-side apply whose configuration does not fit the schema: the real server's 500,
    which carries no reason."""

    code = 500
    reason = ""


@dataclass(frozen=True)
class CustomResource:
    """What one CRD declares about its kind, as far as writes are concerned."""

    kind: str
    group: str
    storage_version: str
    schemas: Mapping[str, Schema] = field(default_factory=dict)
    """``openAPIV3Schema`` by served version name."""
    scale: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The scale subresource by served version name (versions without one are absent)."""

    @classmethod
    def from_crd(cls, crd: Mapping[str, Any]) -> CustomResource | None:
        """The custom resource ``crd`` declares (None when it declares no kind)."""
        spec = crd.get("spec")
        if not isinstance(spec, Mapping):
            return None
        kind = (spec.get("names") or {}).get("kind")
        if not isinstance(kind, str) or not kind:
            return None
        schemas: dict[str, Schema] = {}
        scale: dict[str, Mapping[str, Any]] = {}
        storage = ""
        for version in spec.get("versions") or ():
            if not isinstance(version, Mapping) or not version.get("served", True):
                continue
            name = str(version.get("name", ""))
            if version.get("storage"):
                storage = name
            schema = (version.get("schema") or {}).get("openAPIV3Schema")
            if isinstance(schema, Mapping):
                schemas[name] = schema
            found = (version.get("subresources") or {}).get("scale")
            if isinstance(found, Mapping):
                scale[name] = found
        return cls(kind, str(spec.get("group", "")), storage, schemas, scale)

    def version_of(self, obj: Mapping[str, Any]) -> str:
        """The version an object is written in: its apiVersion's, else the storage version."""
        api_version = obj.get("apiVersion")
        version = api_version.rpartition("/")[2] if isinstance(api_version, str) else ""
        return version if version in self.schemas else self.storage_version


class CustomResources:
    """The schemas of the CRDs a server holds, by kind, and the decode/validate passes they drive."""

    def __init__(self) -> None:
        self._by_kind: dict[str, CustomResource] = {}
        self._kind_of_crd: dict[str, str] = {}

    def register(self, crd: Mapping[str, Any]) -> str:
        """Serve (or re-serve, after an update) the kind ``crd`` declares with its schemas; the kind."""
        name = str((crd.get("metadata") or {}).get("name", ""))
        self.forget(crd)
        resource = CustomResource.from_crd(crd)
        if resource is None:
            return ""
        self._by_kind[resource.kind] = resource
        self._kind_of_crd[name] = resource.kind
        return resource.kind

    def forget(self, crd: Mapping[str, Any]) -> None:
        """Stop applying the schemas of ``crd`` (it was deleted)."""
        kind = self._kind_of_crd.pop(str((crd.get("metadata") or {}).get("name", "")), None)
        if kind is not None:
            self._by_kind.pop(kind, None)

    def get(self, kind: str) -> CustomResource | None:
        return self._by_kind.get(kind)

    def decode(self, kind: str, obj: Obj, *, copy: bool = True, status_only: bool = False) -> Obj:
        """A request's object as the server decodes it: a copy without nulls, pruned and
        defaulted (``obj`` itself when ``kind`` is no custom resource with a schema);
        :class:`BadRequest` when its metadata cannot be ObjectMeta. ``copy=False`` when ``obj``
        is already the server's own null-free copy (:func:`.defaults.ingest`): decoded in place.

        ``status_only``: for a write through ``/status``, whose strategy keeps nothing of the
        request but its status. Only the status is decoded (a copy, pruned and defaulted as
        above) and the metadata checked; the rest is passed on as sent, to be dropped."""
        resource = self._by_kind.get(kind)
        version = resource.version_of(obj) if resource is not None else ""
        schema = resource.schemas.get(version) if resource is not None else None
        if schema is None:
            return obj
        if status_only:
            return self._decoded_status(kind, version, schema, obj)
        return self._decoded(kind, version, schema, crdschema.request_copy(obj) if copy else obj)

    def _decoded(self, kind: str, version: str, schema: Schema, out: Obj) -> Obj:
        """Decode ``out``, the server's own copy of a request's object, in place."""
        crdschema.whole_numbers_in_request(out)
        problem = crdschema.object_meta_problem(out.get("metadata"))
        if problem:
            raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: {problem}', kind=kind)
        crdschema.prune(out, schema)
        crdschema.apply_defaults(out, schema)
        return out

    def _decoded_status(self, kind: str, version: str, schema: Schema, obj: Obj) -> Obj:
        """The request with its status decoded: its metadata and status go through :meth:`_decoded`."""
        sent = {key: value for key, value in obj.items() if key in ("metadata", "status")}
        decoded = self._decoded(kind, version, schema, crdschema.request_copy(sent))
        out = {key: value for key, value in obj.items() if key != "status"}
        if "status" in decoded:
            out["status"] = decoded["status"]
        return out

    def defaulted(self, kind: str, stored: Obj) -> Obj | None:
        """``stored`` as the server reads it (with the defaults of the schema now served), or
        None when that changes nothing: kube-apiserver defaults what it reads from etcd too."""
        resource = self._by_kind.get(kind)
        schema = resource.schemas.get(resource.storage_version) if resource is not None else None
        if schema is None:
            return None
        read = copy_without_nulls(stored)
        crdschema.apply_defaults(read, schema)
        return read if read != stored else None

    def check_applied(self, kind: str, applied: Obj) -> None:
        """:class:`TypedPatchFailed` if a server-side apply configuration has fields the schema
        does not declare or values of the wrong type (nothing is pruned from an apply)."""
        resource = self._by_kind.get(kind)
        schema = resource.schemas.get(resource.version_of(applied)) if resource is not None else None
        if resource is None or schema is None:
            return
        problems: list[str] = []
        for key, value in applied.items():
            if key == "metadata" and isinstance(value, dict):
                problems += [
                    f".metadata.{k}: field not declared in schema" for k in value if k not in OBJECT_META_FIELDS
                ]
            elif key not in ("apiVersion", "kind", "metadata"):
                sub = (schema.get("properties") or {}).get(key)
                open_root = sub is None and schema.get("x-kubernetes-preserve-unknown-fields")
                _typed(value, {} if open_root else sub, f".{key}", problems)
        if problems:
            meta = applied.get("metadata") or {}
            where = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
            what = f"{resource.group}/{resource.version_of(applied)}, Kind={kind}"
            listed = problems[0] if len(problems) == 1 else "errors:\n  " + "\n  ".join(problems)
            message = f"failed to create typed patch object ({where}; {what}): {listed}"
            raise TypedPatchFailed(
                message, kind=kind, namespace=str(meta.get("namespace", "")), name=str(meta.get("name", ""))
            )

    @contextlib.contextmanager
    def reporting_with(self, kind: str, obj: Obj) -> Iterator[None]:
        """Turn an :class:`Invalid` raised inside (the strategy's metadata checks) into one that
        also lists ``obj``'s schema errors: the real server reports them all in one answer."""
        try:
            yield
        except Invalid as err:
            first = FieldError("", "", err.message.partition(" is invalid: ")[2] or err.message)
            self.validate(kind, {k: v for k, v in obj.items() if k != "status"}, None, first=[first])
            raise

    def validate(
        self, kind: str, obj: Obj, old: Obj | None, *, status: bool = False, first: list[FieldError] | None = None
    ) -> None:
        """:class:`Invalid` with every error if ``obj`` (to be stored; ``old`` on update) breaks
        the schema; ``status`` for a write through ``/status`` (the scale check then looks at
        the status replicas instead of the spec's); ``first``: errors found before."""
        resource = self._by_kind.get(kind)
        if resource is None:
            return
        version = resource.version_of(obj)
        schema = resource.schemas.get(version)
        if schema is None:
            return
        errors = [*(first or ()), *crdvalidation.validate(obj, schema, old)]
        scale = resource.scale.get(version)
        if scale is not None:
            errors += _scale_errors(obj, str(scale.get("statusReplicasPath" if status else "specReplicasPath", "")))
        errors += crdvalidation.validate_list_types(obj, schema, old)
        if any(error.type in BLOCKING for error in errors):
            errors.append(
                FieldError.of(
                    "",
                    "Invalid value",
                    "null: some validation rules were not checked because the object was invalid; "
                    "correct the existing errors to complete validation",
                )
            )
        else:
            errors += cel.check_rules(obj, schema, old)
        if errors:
            raise _invalid(resource, obj, errors)


_SCALARS = {
    "integer": "numeric (int or float)",
    "number": "numeric (int or float)",
    "string": "string",
    "boolean": "bool",
}


def _typed(value: Any, schema: Schema | None, path: str, problems: list[str]) -> None:
    """Why ``value`` cannot become a typed value of ``schema`` (structured-merge-diff's words)."""
    if schema is None:
        problems.append(f"{path}: field not declared in schema")
        return
    if value is None or schema.get("x-kubernetes-preserve-unknown-fields") or schema.get("x-kubernetes-int-or-string"):
        return
    wanted = schema.get("type")
    if wanted in _SCALARS:
        ok = {
            "integer": isinstance(value, int | float) and not isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
            "string": isinstance(value, str),
            "boolean": isinstance(value, bool),
        }[wanted]
        if not ok:
            problems.append(f"{path}: expected {_SCALARS[wanted]}, got {_go_kind(value)}")
    elif wanted == "array":
        if not isinstance(value, list):
            problems.append(f"{path}: expected list, got {_go_kind(value)}")
            return
        for index, item in enumerate(value):
            _typed(item, schema.get("items") or {}, f"{path}[{index}]", problems)
    elif wanted == "object":
        if not isinstance(value, dict):
            problems.append(f"{path}: expected map, got {_go_kind(value)}")
            return
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, child in value.items():
            sub = properties.get(key, extra if isinstance(extra, Mapping) else None)
            _typed(child, sub if sub is not None or extra is not True else {}, f"{path}.{key}", problems)


def _go_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "numeric"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, list) else "map" if isinstance(value, dict) else "null"


def _scale_errors(obj: Obj, path: str) -> list[FieldError]:
    """The scale subresource's check of its replicas path (``.spec.replicas``): an integer >= 0."""
    if not path:
        return []
    node: Any = obj
    for part in path.lstrip(".").split("."):
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return []
    if isinstance(node, bool) or not isinstance(node, int):
        return [FieldError.of(path, "Invalid value", "0: should be an integer")]
    if node < 0:
        return [FieldError.of(path, "Invalid value", f"{node}: should be a non-negative integer")]
    if node > 2**31 - 1:
        return [FieldError.of(path, "Invalid value", f"{node}: should be less than or equal to {2**31 - 1}")]
    return []


def _invalid(resource: CustomResource, obj: Obj, errors: list[FieldError]) -> Invalid:
    meta = obj.get("metadata")
    name = str(meta.get("name", "")) if isinstance(meta, dict) else ""
    namespace = str(meta.get("namespace", "")) if isinstance(meta, dict) else ""
    texts = [error.text for error in errors]
    listed = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    what = f"{resource.kind}.{resource.group}" if resource.group else resource.kind
    message = f'{what} "{name}" is invalid: {listed}'
    return Invalid(message, kind=resource.kind, namespace=namespace, name=name)
