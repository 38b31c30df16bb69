"""A CRD's CEL rules (``x-kubernetes-validations``), evaluated the way kube-apiserver does.

The InferenceService CRD states its cross-field rules in CEL (env names unique, value xor
valueFrom, no ``--model`` in ``args``, the name rule on create …), and the real API server
refuses an object that breaks one. The fake must refuse it too, with the same field path and
message, or the simulator would accept what a cluster rejects. Expressions are evaluated by
``cel-python`` (``celpy``, imported on first use: it is slow to import); this module adds what
Kubernetes puts around CEL:

- a rule runs with ``self`` bound to the value of the schema node that carries it, for every
  such value present in the object (each item of a list, each value of a map);
- ``oldSelf`` is the correlated old value on update (through object fields, and list items of
  ``x-kubernetes-list-type`` ``map`` by key or ``set`` by value; items of atomic lists have
  none). A rule using ``oldSelf`` (a transition rule) runs only when there is an old value,
  unless ``optionalOldSelf: true``: then it always runs and ``oldSelf`` is an optional
  (``oldSelf.hasValue()``, ``oldSelf.value()``, ``oldSelf.orValue(x)``);
- ratcheting: on update, a rule without ``oldSelf`` on a value that did not change does not
  count (the real server evaluates it and demotes the error to a warning; skipping it is the
  same outcome, and keeps status writes cheap);
- the root's ``self.metadata`` holds only ``name`` and ``generateName``;
- the error: ``<path>: Invalid value: <message>`` at ``fieldPath`` below the node if given
  (``<nil>`` for the root), or another type when the rule names a ``reason``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.celfast import Fallback, compile_rule
from inference_operator.sim.apiserver.celnames import unescape
from inference_operator.sim.apiserver.celquantity import Quantity, is_quantity, quantity
from inference_operator.sim.apiserver.crdschema import (
    ABSENT,
    FieldError,
    PerSchemaNode,
    child_path,
    correlated_item,
    item_path,
)

__all__ = ["check_rules", "compile_problem", "evaluate"]

Schema = Mapping[str, Any]

_OLD_SELF: Final = re.compile(r"\boldSelf\b")
_REASONS: Final = {
    "FieldValueInvalid": "Invalid value",
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required value",
    "FieldValueDuplicate": "Duplicate value",
}
_ABSENT: Final = ABSENT


class _Optional:
    """CEL's ``optional_type`` for ``oldSelf`` under ``optionalOldSelf``."""

    def __init__(self, value: Any = _ABSENT) -> None:
        self.value = value


def check_rules(obj: Obj, schema: Schema, old: Obj | None) -> list[FieldError]:
    """The CEL rule failures of a whole object (``old``: the stored object on update)."""
    errors: list[FieldError] = []
    _walk(_root_view(obj), schema, _root_view(old) if old is not None else _ABSENT, "", errors)
    return errors


def evaluate(
    rule: str, value: Any, *, old: Any = _ABSENT, optional_old_self: bool = False, reference: bool = False
) -> bool | str:
    """One rule's verdict on ``value`` (True, False, or the evaluation error's text).

    ``reference``: celpy alone, without the compiled fast path (the referee of its tests)."""
    reads, reads_old = _reads(rule)
    if reads is not None and isinstance(value, dict):
        value = {k: v for k, v in value.items() if k in reads}
    if old is not _ABSENT and not reads_old:
        old = {}
    return _cached(rule, _dump(value), optional_old_self, _dump(old) if old is not _ABSENT else None, reference)


_SELF: Final = re.compile(r"\bself\b(?:\.(\w+)(\s*\()?)?")
_OLD_SELF_USE: Final = re.compile(r"\boldSelf\b(\.hasValue\(\))?")


@functools.lru_cache(maxsize=256)
def _reads(rule: str) -> tuple[frozenset[str] | None, bool]:
    """What a rule can see: the fields of ``self`` it reads (None: ``self`` itself), and whether
    it reads ``oldSelf``'s value (not only ``oldSelf.hasValue()``). Values are cut down to that
    before evaluating, so verdicts are cached per what matters (a status write does not make
    the name rule run again)."""
    fields: set[str] = set()
    for match in _SELF.finditer(rule):
        if match.group(1) is None or match.group(2) is not None:  # self itself, or a macro on it: self.all(k, …)
            return None, True
        fields.add(unescape(match.group(1)))
    reads_old = any(match.group(1) is None for match in _OLD_SELF_USE.finditer(rule))
    return frozenset(fields), reads_old


# --- walking the object --------------------------------------------------------------------


def _root_view(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    names = {k: v for k, v in meta.items() if k in ("name", "generateName")} if isinstance(meta, dict) else {}
    return {**obj, "metadata": names}


def _walk(value: Any, schema: Schema, old: Any, path: str, errors: list[FieldError]) -> None:
    any_rules, transition_rules = _rules_at_or_below(schema)
    if not any_rules:
        return
    unchanged = old is not _ABSENT and old == value
    for rule in schema.get("x-kubernetes-validations") or ():
        _run(rule, value, old, path, unchanged, errors)
    if unchanged and not transition_rules:
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        old_map = old if isinstance(old, dict) else {}
        for key, child in value.items():
            sub = properties.get(key, extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                _walk(child, sub, old_map.get(key, _ABSENT), child_path(path, key), errors)
    elif isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return
        for index, item in enumerate(value):
            _walk(item, items, correlated_item(item, old, schema), item_path(path, index), errors)


def _run(rule: Mapping[str, Any], value: Any, old: Any, path: str, unchanged: bool, errors: list[FieldError]) -> None:
    text = str(rule.get("rule", ""))
    optional = bool(rule.get("optionalOldSelf"))
    if _OLD_SELF.search(text):
        if old is _ABSENT and not optional:
            return  # a transition rule: nothing to compare with on create
    elif unchanged:
        return  # ratcheting
    verdict = evaluate(text, value, old=old, optional_old_self=optional)
    if verdict is True:
        return
    where = path
    field_path = str(rule.get("fieldPath") or "")
    if field_path:
        where = path + field_path if path else field_path.lstrip(".")
    if isinstance(verdict, str):
        errors.append(FieldError.of(where, "Invalid value", f'"object": {text}: {verdict}'))
        return
    message = str(rule.get("message") or "") or f"failed rule: {text}"
    errors.append(FieldError.of(where, _REASONS.get(str(rule.get("reason") or ""), "Invalid value"), message))


def _rules_found(schema: Schema) -> tuple[bool, bool]:
    """Whether ``schema`` has rules at or below it, and rules using ``oldSelf``."""
    text = _dump(schema)
    return "x-kubernetes-validations" in text, bool(_OLD_SELF.search(text))


_rules_at_or_below: Final = PerSchemaNode(_rules_found)


# --- celpy -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Program:
    runner: Any
    json_to_cel: Any
    fast: Callable[[Mapping[str, Any]], Any] | None
    """The rule compiled to closures (celfast), None when it leaves that subset."""


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@functools.lru_cache(maxsize=2048)
def _cached(
    rule: str, self_json: str, optional_old_self: bool, old_json: str | None, reference: bool = False
) -> bool | str:
    """Rule verdicts are pure functions of the rule and the values: evaluate each once.

    The compiled fast path answers first; whatever it cannot answer exactly (an error, an
    unusual type) celpy evaluates, so verdicts and messages are celpy's either way."""
    program = _program(rule)
    if program.fast is not None and not reference:
        verdict = _fast_verdict(program.fast, self_json, optional_old_self, old_json)
        if verdict is not None:
            return verdict
    activation: dict[str, Any] = {"self": program.json_to_cel(json.loads(self_json))}
    if optional_old_self:
        activation["oldSelf"] = (
            _Optional() if old_json is None else _Optional(program.json_to_cel(json.loads(old_json)))
        )
    elif old_json is not None:
        activation["oldSelf"] = program.json_to_cel(json.loads(old_json))
    try:
        result = program.runner.evaluate(activation)
    except Exception as err:  # noqa: BLE001 - celpy raises its own errors and Python's alike
        return str(err) or type(err).__name__
    if isinstance(result, Exception):
        return str(result)
    return bool(result) if _is_bool(result) else f"rule did not evaluate to a bool: {result!r}"


def _fast_verdict(
    fast: Callable[[Mapping[str, Any]], Any], self_json: str, optional_old_self: bool, old_json: str | None
) -> bool | None:
    env: dict[str, Any] = {"self": json.loads(self_json)}
    if optional_old_self:
        env["oldSelf"] = _Optional() if old_json is None else _Optional(json.loads(old_json))
    elif old_json is not None:
        env["oldSelf"] = json.loads(old_json)
    try:
        result = fast(env)
    except Fallback:
        return None
    return result if type(result) is bool else None


def _is_bool(result: Any) -> bool:
    return isinstance(result, bool) or type(result).__name__ == "BoolType"


def compile_problem(rule: str) -> str | None:
    """Why a (non-empty) ``rule`` does not compile, as a field error of the type and path
    kube-apiserver gives on a CRD's write (``Invalid value: …: compilation failed: …``; the
    detail is celpy's); None if it compiles. The program is then in the evaluation cache (the
    256 rules used last)."""
    from celpy.celparser import CELParseError

    try:
        _program(rule)
    except CELParseError as err:
        where = f"<input>:{err.line}:{err.column}" if err.line is not None else "<input>"
        shown = " | ".join(line for line in str(err).splitlines() if line.strip())
        return f"Invalid value: {json.dumps(rule)}: compilation failed: ERROR: {where}: Syntax error: {shown}"
    except RecursionError:  # cel-go refuses nesting past its parser's recursion limit too
        return f"Invalid value: {json.dumps(rule)}: compilation failed: ERROR: expression recursion limit exceeded"
    return None


@functools.lru_cache(maxsize=256)
def _program(rule: str) -> _Program:
    from celpy.adapter import json_to_cel  # 0.2 s to import celpy: only when a rule is first compiled

    environment = _environment()
    functions = {"hasValue": _has_value, "value": _value, "orValue": _or_value, **QUANTITY_FUNCTIONS}
    tree = environment.compile(rule)
    fast = compile_rule(tree, optional_type=_Optional)
    return _Program(environment.program(tree, functions=functions), json_to_cel, fast)


@functools.cache
def _environment() -> Any:
    import celpy

    return celpy.Environment()


def _has_value(optional: _Optional) -> Any:
    from celpy import celtypes

    return celtypes.BoolType(optional.value is not _ABSENT)


def _value(optional: _Optional) -> Any:
    if optional.value is _ABSENT:
        raise ValueError("optional.none() dereference")
    return optional.value


def _or_value(optional: _Optional, default: Any) -> Any:
    return default if optional.value is _ABSENT else optional.value


def _is_quantity(text: Any) -> Any:
    from celpy import celtypes

    if not isinstance(text, str):
        raise TypeError(f"isQuantity of {type(text).__name__}")
    return celtypes.BoolType(is_quantity(str(text)))


def _quantity(text: Any) -> Quantity:
    if not isinstance(text, str):
        raise TypeError(f"quantity of {type(text).__name__}")
    return quantity(str(text))


def _compare(left: Any, right: Any) -> int:
    if not isinstance(left, Quantity) or not isinstance(right, Quantity):
        raise TypeError("compare a quantity with a quantity")
    return left.compare_to(right)


def _is_greater_than(left: Any, right: Any) -> Any:
    from celpy import celtypes

    return celtypes.BoolType(_compare(left, right) > 0)


def _is_less_than(left: Any, right: Any) -> Any:
    from celpy import celtypes

    return celtypes.BoolType(_compare(left, right) < 0)


def _compare_to(left: Any, right: Any) -> Any:
    from celpy import celtypes

    return celtypes.IntType(_compare(left, right))


QUANTITY_FUNCTIONS = {
    "isQuantity": _is_quantity,
    "quantity": _quantity,
    "isGreaterThan": _is_greater_than,
    "isLessThan": _is_less_than,
    "compareTo": _compare_to,
}
"""Kubernetes' quantity library (:mod:`.celquantity`) as celpy functions and methods."""
