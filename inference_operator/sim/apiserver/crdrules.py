"""A CustomResourceDefinition's CEL rules, compiled when the CRD is written, as kube-apiserver does.

kube-apiserver compiles every ``x-kubernetes-validations`` rule of a CRD when the CRD is created
or updated: a rule that does not compile refuses the CRD (``…x-kubernetes-validations[0].rule:
Invalid value: …: compilation failed: …``), so no object of the kind ever meets a broken rule,
and the programs are ready before the first object is written. The fake does the same: the
compiled programs are :mod:`.cel`'s cache, so the first write of a custom resource does not pay
for building the CEL parser.

Not modelled: cel-go also type-checks a rule against the schema (a field the schema does not
declare is a compile error there); celpy only parses, so such a rule is refused on the first
object it meets instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from inference_operator.core.errors import Invalid
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.cel import compile_problem

__all__ = ["validate_crd_rules"]

Schema = Mapping[str, Any]


def validate_crd_rules(crd: Obj) -> None:
    """Compile every rule of every version's schema; :class:`Invalid` naming each that does not."""
    versions = (crd.get("spec") or {}).get("versions")
    listed_versions = versions if isinstance(versions, list) else []
    schemas = [version.get("schema") if isinstance(version, dict) else None for version in listed_versions]
    # kube-apiserver validates the internal form of a CRD, where the versions' schemas, when all
    # are the same, are one ``spec.validation``: its field paths say so.
    if schemas and all(schema == schemas[0] for schema in schemas):
        named = [("spec.validation", schemas[0])]
    else:
        named = [(f"spec.versions[{index}].schema", schema) for index, schema in enumerate(schemas)]
    problems: list[str] = []
    for prefix, container in named:
        schema = container.get("openAPIV3Schema") if isinstance(container, dict) else None
        if not isinstance(schema, Mapping):
            continue
        for path, rule in _rules(schema, f"{prefix}.openAPIV3Schema"):
            problem = compile_problem(rule)
            if problem is not None:
                problems.append(f"{path}: {problem}")
    if problems:
        name = str((crd.get("metadata") or {}).get("name", ""))
        listed = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        raise Invalid(
            f'CustomResourceDefinition.apiextensions.k8s.io "{name}" is invalid: {listed}',
            kind="CustomResourceDefinition",
            name=name,
        )


def _rules(schema: Schema, path: str) -> Iterator[tuple[str, str]]:
    """``(field path of the rule, rule text)`` for each rule at or below ``schema``, in the field
    paths kube-apiserver reports (``properties[spec]``, ``items``, ``additionalProperties``)."""
    rules = schema.get("x-kubernetes-validations")
    for index, rule in enumerate(rules if isinstance(rules, list) else ()):
        text = rule.get("rule") if isinstance(rule, Mapping) else None
        yield f"{path}.x-kubernetes-validations[{index}].rule", text if isinstance(text, str) else ""
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for key, child in properties.items():
            if isinstance(child, Mapping):
                yield from _rules(child, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        child = schema.get(key)
        if isinstance(child, Mapping):
            yield from _rules(child, f"{path}.{key}")
