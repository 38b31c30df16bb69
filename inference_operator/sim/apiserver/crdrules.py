"""A CustomResourceDefinition's CEL rules, compiled when the CRD is written, as kube-apiserver does.

kube-apiserver compiles the ``x-kubernetes-validations`` rules of a CRD when the CRD is created
or updated: a rule that does not compile refuses the CRD (``…x-kubernetes-validations[0].rule:
Invalid value: …: compilation failed: …``), so no object of the kind ever meets a broken rule,
and the programs are ready before the first object is written. The fake does the same: the
compiled programs are :mod:`.cel`'s cache, so the first write of a custom resource does not pay
for building the CEL parser.

As kube-apiserver, it validates a schema node's children before the node, and compiles a node's
rules only when nothing at or below the node has a schema error (here: an empty rule, a missing
value); a rule that does not compile is no schema error, so it stops nothing. Where the versions
all have the same schema, kube-apiserver names it ``spec.validation`` (its internal form of the
CRD), otherwise ``spec.versions[i].schema``.

Not modelled: cel-go type-checks a rule against the schema (a field the schema does not declare
is a compile error there) and its parser is stricter than celpy's (``has(self)``, unknown string
escapes, deep nesting): such a rule is refused on the first object it meets, not on the CRD's
write. Nor are the checks of the rule's neighbours (a multi-line rule without a ``message``,
``messageExpression``, ``reason``, ``fieldPath``), or the cost estimate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from inference_operator.core.errors import Invalid
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.cel import compile_problem

__all__ = ["validate_crd_rules"]

Schema = Mapping[str, Any]


def validate_crd_rules(crd: Obj) -> None:
    """Compile the rules of every version's schema; :class:`Invalid` naming each problem."""
    versions = (crd.get("spec") or {}).get("versions")
    listed_versions = versions if isinstance(versions, list) else []
    schemas = [version.get("schema") if isinstance(version, dict) else None for version in listed_versions]
    if schemas and all(_same_json(schema, schemas[0]) for schema in schemas):
        named = [("spec.validation", schemas[0])]
    else:
        named = [(f"spec.versions[{index}].schema", schema) for index, schema in enumerate(schemas)]
    problems: list[str] = []
    for prefix, container in named:
        schema = container.get("openAPIV3Schema") if isinstance(container, dict) else None
        if isinstance(schema, Mapping):
            _node_problems(schema, f"{prefix}.openAPIV3Schema", problems)
    if problems:
        name = str((crd.get("metadata") or {}).get("name", ""))
        listed = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise Invalid(
            f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: {listed}',
            kind="CustomResourceDefinition",
            name=name,
        )


def _same_json(left: Any, right: Any) -> bool:
    """Equal as JSON (Python's ``==`` takes ``1`` for ``true``; Go's DeepEqual does not)."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def _node_problems(schema: Schema, path: str, problems: list[str]) -> bool:
    """Append the problems of the rules at and below ``schema`` (children first); True when one
    of them is a schema error, which keeps the rules above it from being compiled."""
    schema_error = False
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for key, child in properties.items():
            if isinstance(child, Mapping):
                schema_error |= _node_problems(child, f"{path}.properties[{key}]", problems)
    for key in ("items", "additionalProperties"):
        child = schema.get(key)
        if isinstance(child, Mapping):
            schema_error |= _node_problems(child, f"{path}.{key}", problems)
    rules = schema.get("x-kubernetes-validations")
    texts: list[tuple[str, str]] = []
    for index, rule in enumerate(rules if isinstance(rules, list) else ()):
        text = rule.get("rule") if isinstance(rule, Mapping) else None
        where = f"{path}.x-kubernetes-validations[{index}].rule"
        if not isinstance(text, str) or not text.strip():
            problems.append(f"{where}: Required value: rule is not specified")
            schema_error = True
        else:
            texts.append((where, text))
    if not schema_error:
        for where, text in texts:
            problem = compile_problem(text)
            if problem is not None:
                problems.append(f"{where}: {problem}")
    return schema_error
