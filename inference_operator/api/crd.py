"""Generate the InferenceService CustomResourceDefinition from the pydantic models.

One source of truth: the models in ``api.py`` define fields, defaults, bounds and the CEL rules;
this module turns pydantic's JSON Schema into a *structural* OpenAPI v3 schema the API server
accepts (no ``$ref``, no ``null`` types, no ``propertyNames``, int-or-string quantities), then
wraps it in the CRD with the status and scale subresources, printer columns and short name.
``deploy/crds/`` holds the output; a unit test fails when it drifts from the models.
"""

from __future__ import annotations

from typing import Any

import yaml

from inference_operator.api.constants import CATEGORY, GROUP, KIND, PLURAL, SHORT_NAME, SINGULAR, VERSION
from inference_operator.api.models import NAME_RULE, InferenceServiceSpec, InferenceServiceStatus
from inference_operator.api.resources import QUANTITY_PATTERN

Schema = dict[str, Any]

_DROP = {"title", "additionalProperties", "propertyNames"}


def _structural(node: Any, defs: dict[str, Schema]) -> Any:
    if isinstance(node, list):
        return [_structural(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, defs)
    if "anyOf" in node:
        branches = [b for b in node["anyOf"] if b.get("type") != "null"]
        rest = {k: v for k, v in node.items() if k != "anyOf" and k not in _DROP}
        if rest.get("default", ...) is None:
            rest.pop("default")
        if node.get("x-kubernetes-int-or-string"):  # a quantity: never negative, as integer or as string
            return {
                **rest,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "pattern": node.get("pattern", QUANTITY_PATTERN),
                "minimum": 0,
            }
        if len(branches) == 1:
            return _structural({**branches[0], **rest}, defs)
        types = sorted({b.get("type") for b in branches})
        if types == ["integer", "string"]:
            return {
                **rest,
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
                "pattern": QUANTITY_PATTERN,
            }
        raise ValueError(f"cannot express anyOf {types} in a structural schema")
    out: Schema = {}
    for k, v in node.items():
        if k in _DROP or k == "$defs":
            continue
        if k == "properties":
            out[k] = {name: _structural(prop, defs) for name, prop in v.items()}
        elif k == "default" and v is None:
            continue
        else:
            out[k] = _structural(v, defs)
    if node.get("type") == "object" and "additionalProperties" in node and "properties" not in node:
        extra = node["additionalProperties"]
        keys = (node.get("propertyNames") or {}).get("enum")
        if keys:  # a map with a closed set of keys: spell the keys out
            out["properties"] = {key: _structural(extra, defs) for key in keys}
        elif isinstance(extra, dict):
            out["additionalProperties"] = _structural(extra, defs)
    if "const" in out:
        out["enum"] = [out.pop("const")]
    return out


def _schema_of(model: type[Any]) -> Schema:
    raw = model.model_json_schema(mode="validation")
    schema: Schema = _structural(raw, raw.get("$defs", {}))
    return schema


def spec_schema() -> Schema:
    schema = _schema_of(InferenceServiceSpec)
    # default_factory fields carry no default in JSON Schema; the API server should still fill
    # spec.loadBalancer.enabled, so give the object an empty default to default into.
    schema["properties"]["loadBalancer"]["default"] = {}
    for name in ("args", "env", "tolerations"):
        schema["properties"][name].setdefault("x-kubernetes-list-type", "atomic")
    return schema


def status_schema() -> Schema:
    return _schema_of(InferenceServiceStatus)


PRINTER_COLUMNS = [
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Available", "type": "integer", "jsonPath": ".status.readyReplicas"},
    {"name": "Model", "type": "string", "jsonPath": ".spec.model"},
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Rollout", "type": "string", "jsonPath": ".status.rollout.plan"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "URL", "type": "string", "jsonPath": ".status.url", "priority": 1},
    {"name": "Image", "type": "string", "jsonPath": ".spec.image", "priority": 1},
]


def version_entry() -> Schema:
    return {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "description": "InferenceService runs an inference server (vLLM and the like) on GPUs.",
                "required": ["spec"],
                # On create only (oldSelf is absent): an object named so before the rule existed
                # must still take status writes and lose its finalizer, or it could never go.
                "x-kubernetes-validations": [
                    {
                        "rule": f"oldSelf.hasValue() || ({NAME_RULE.cel})",
                        "optionalOldSelf": True,
                        "message": NAME_RULE.message,
                    }
                ],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "spec": spec_schema(),
                    "status": status_schema(),
                },
            }
        },
        "subresources": {
            "status": {},
            "scale": {
                "specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector",
            },
        },
        "additionalPrinterColumns": PRINTER_COLUMNS,
    }


def crd() -> Schema:
    """The CustomResourceDefinition manifest."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{PLURAL}.{GROUP}",
            "labels": {
                "app.kubernetes.io/name": "inference-operator",
                "app.kubernetes.io/part-of": "inference-operator",
            },
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": [SHORT_NAME],
                "categories": [CATEGORY],
            },
            "versions": [version_entry()],
        },
    }


HEADER = "# Generated by `inference-operator crd` from inference_operator/api/models.py. Do not edit.\n"


def crd_yaml() -> str:
    return HEADER + yaml.safe_dump(crd(), sort_keys=False, width=100)
