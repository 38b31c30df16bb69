"""A fast path for the CEL rules of a CRD: the parse tree compiled to Python closures.

``celpy`` interprets a rule by walking its parse tree with a lark visitor and rebuilds
``typing`` aliases on every method call (``Callable[[BoolType, Result], …]`` in
``member_dot_arg``): about 0.5-1 ms per evaluation of the InferenceService name rule, which
runs once per object on create and once on the first update (the name differs per object, so
no verdict cache can help). Profiled at 1,000 objects that was 28% of the simulator's CPU.

This module compiles the subset of CEL the project's CRD uses (``||``, ``&&``, ``!``,
``? :``, comparisons of strings and integers, ``size``, ``has``, ``string`` of a string or an
integer, field selection, the string
methods ``matches``/``startsWith``/``endsWith``/``contains``, the ``exists``/``all``/
``exists_one`` macros on lists and the optional functions of ``optionalOldSelf``) into
closures over plain JSON values. It is a cache in front of celpy, never a second judge:

- a rule with any construct outside the subset does not compile (``compile_rule`` returns
  None) and always runs in celpy;
- at run time anything that is not the plain, well-typed case (a missing field, a value of
  another type, a float, a null, an error anywhere) raises :class:`Fallback`, and the caller
  asks celpy, which gives the verdict or the error message the real server's CEL gives.

So whenever this returns a verdict, it is the one celpy returns; the differential unit test
(tests/unit/sim/apiserver/test_celfast.py) checks that on every rule of the CRD.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from inference_operator.sim.apiserver import celfastcalls as calls
from inference_operator.sim.apiserver.celfastcalls import Fallback
from inference_operator.sim.apiserver.celnames import unescape

__all__ = ["Fallback", "Unsupported", "compile_rule"]

Env = Mapping[str, Any]
Fn = Callable[[Env], Any]


class Unsupported(Exception):
    """A construct outside the compiled subset: the rule runs in celpy only."""


_FALLBACK: Final = calls.FALLBACK


def compile_rule(tree: Any, *, optional_type: type[Any]) -> Fn | None:
    """Closures for celpy's parse tree of a rule, or None if it leaves the subset.

    ``optional_type`` is the class the caller binds ``oldSelf`` to under ``optionalOldSelf``
    (with a ``value`` attribute, absent as ``optional_type().value``).
    """
    try:
        return _Compiler(optional_type).node(tree)
    except Unsupported:
        return None


def _same_plain(left: Any, right: Any) -> bool:
    kind = type(left)
    return kind is type(right) and kind in (str, int, bool)


class _Compiler:
    def __init__(self, optional_type: type[Any]) -> None:
        self.optional_type = optional_type
        self.absent = optional_type().value

    def node(self, tree: Any) -> Fn:
        data = getattr(tree, "data", None)
        if data is None:
            raise Unsupported(repr(tree))
        method = getattr(self, f"_{data}", None)
        if method is None:
            raise Unsupported(str(data))
        fn: Fn = method(tree.children)
        return fn

    def _passthrough(self, children: list[Any]) -> Fn:
        if len(children) != 1:
            raise Unsupported("operator")
        return self.node(children[0])

    _addition = _multiplication = _member = _primary = _passthrough

    def _paren_expr(self, children: list[Any]) -> Fn:
        return self._passthrough(children)

    def _expr(self, children: list[Any]) -> Fn:
        if len(children) == 1:
            return self.node(children[0])
        if len(children) != 3:
            raise Unsupported("expr")
        cond, then, other = (self.node(c) for c in children)

        def ternary(env: Env) -> Any:
            chosen = cond(env)
            if type(chosen) is not bool:
                raise _FALLBACK
            return then(env) if chosen else other(env)

        return ternary

    def _conditionalor(self, children: list[Any]) -> Fn:
        if len(children) == 1:
            return self.node(children[0])
        left, right = (self.node(c) for c in children)

        def either(env: Env) -> bool:
            first = left(env)
            if first is True:
                return True  # true || anything is true in CEL, errors included
            if first is not False:
                raise _FALLBACK
            second = right(env)
            if type(second) is not bool:
                raise _FALLBACK
            return second

        return either

    def _conditionaland(self, children: list[Any]) -> Fn:
        if len(children) == 1:
            return self.node(children[0])
        left, right = (self.node(c) for c in children)

        def both(env: Env) -> bool:
            first = left(env)
            if first is False:
                return False  # false && anything is false in CEL, errors included
            if first is not True:
                raise _FALLBACK
            second = right(env)
            if type(second) is not bool:
                raise _FALLBACK
            return second

        return both

    def _relation(self, children: list[Any]) -> Fn:
        if len(children) == 1:
            return self.node(children[0])
        operator, right_tree = children
        op = getattr(operator, "data", None)
        compare = _COMPARISONS.get(str(op))
        if compare is None or len(operator.children) != 1:
            raise Unsupported(str(op))
        left, right = self.node(operator.children[0]), self.node(right_tree)
        ordered = op in ("relation_lt", "relation_le", "relation_gt", "relation_ge")

        def relation(env: Env) -> bool:
            a, b = left(env), right(env)
            if not _same_plain(a, b) or (ordered and type(a) is bool):
                raise _FALLBACK
            return compare(a, b)

        return relation

    def _unary(self, children: list[Any]) -> Fn:
        if len(children) == 1:
            return self.node(children[0])
        if len(children) != 2 or getattr(children[0], "data", None) != "unary_not":
            raise Unsupported("unary")
        inner = self.node(children[1])

        def negate(env: Env) -> bool:
            value = inner(env)
            if type(value) is not bool:
                raise _FALLBACK
            return not value

        return negate

    def _member_dot(self, children: list[Any]) -> Fn:
        target, name = self.node(children[0]), unescape(str(children[1]))

        def select(env: Env) -> Any:
            obj = target(env)
            if type(obj) is not dict:
                raise _FALLBACK
            value = obj.get(name)
            if value is None:
                raise _FALLBACK  # no such key (or a null): celpy's words for it
            return value

        return select

    def _ident(self, children: list[Any]) -> Fn:
        name = str(children[0])

        def variable(env: Env) -> Any:
            if name not in env:
                raise _FALLBACK
            return env[name]

        return variable

    def _literal(self, children: list[Any]) -> Fn:
        token = children[0]
        text = str(token)
        value: Any
        if token.type == "INT_LIT" and text.lstrip("-").isdigit():
            value = int(text)
        elif token.type == "BOOL_LIT":
            value = text == "true"
        elif (
            token.type == "STRING_LIT"
            and len(text) >= 2
            and text[0] == text[-1]
            and text[0] in "'\""
            and text[0] not in text[1:-1]
            and "\\" not in text[1:-1].replace("\\\\", "")
        ):
            value = text[1:-1].replace("\\\\", "\\")  # an escaped backslash, the only escape taken here
        else:
            raise Unsupported(f"literal {text}")
        return lambda env: value

    def _exprlist(self, children: list[Any]) -> list[Fn]:
        raise Unsupported("exprlist")  # only read through _arguments

    def _arguments(self, children: list[Any], start: int) -> list[Any]:
        if len(children) <= start:
            return []
        exprlist = children[start]
        if getattr(exprlist, "data", None) != "exprlist":
            raise Unsupported("arguments")
        return list(exprlist.children)

    def _ident_arg(self, children: list[Any]) -> Fn:
        name = str(children[0])
        args = self._arguments(children, 1)
        if name == "has" and len(args) == 1:
            return self._has(args[0])
        if name in calls.FUNCTIONS and len(args) == 1:
            return calls.function(name, self.node(args[0]))
        raise Unsupported(f"function {name}")

    def _has(self, arg: Any) -> Fn:
        selection = _unwrap(arg)
        if getattr(selection, "data", None) != "member_dot":
            raise Unsupported("has() of something other than a field")
        target, name = self.node(selection.children[0]), unescape(str(selection.children[1]))

        def has(env: Env) -> bool:
            obj = target(env)
            if type(obj) is not dict:
                raise _FALLBACK
            if name not in obj:
                return False
            if obj[name] is None:
                raise _FALLBACK
            return True

        return has

    def _member_dot_arg(self, children: list[Any]) -> Fn:
        method = str(children[1])
        args = self._arguments(children, 2)
        if method in _MACROS and len(args) == 2:
            return self._macro(method, children[0], args)
        target = self.node(children[0])
        if method in calls.STRING_METHODS and len(args) == 1:
            return calls.string_method(method, target, self.node(args[0]))
        if method in calls.QUANTITY_METHODS and len(args) == 1:
            return calls.quantity_method(method, target, self.node(args[0]))
        if method in ("hasValue", "value") and not args:
            return self._optional(method, target)
        if method == "orValue" and len(args) == 1:
            default = self.node(args[0])
            optional_type, absent = self.optional_type, self.absent

            def or_value(env: Env) -> Any:
                optional = target(env)
                if type(optional) is not optional_type:
                    raise _FALLBACK
                return default(env) if optional.value is absent else optional.value

            return or_value
        raise Unsupported(f"method {method}")

    def _optional(self, method: str, target: Fn) -> Fn:
        optional_type, absent = self.optional_type, self.absent

        def optional_call(env: Env) -> Any:
            optional = target(env)
            if type(optional) is not optional_type:
                raise _FALLBACK
            if method == "hasValue":
                return optional.value is not absent
            if optional.value is absent:
                raise _FALLBACK
            return optional.value

        return optional_call

    def _macro(self, method: str, target_tree: Any, args: list[Any]) -> Fn:
        variable = _unwrap(args[0])
        if getattr(variable, "data", None) != "ident":
            raise Unsupported("macro variable")
        name = str(variable.children[0])
        target, predicate = self.node(target_tree), self.node(args[1])

        def macro(env: Env) -> bool:
            items = target(env)
            if type(items) is dict:
                items = list(items)  # a macro over a map ranges over its keys
            elif type(items) is not list:
                raise _FALLBACK
            scope = dict(env)
            verdicts = []
            for item in items:
                scope[name] = item
                verdict = predicate(scope)
                if type(verdict) is not bool:
                    raise _FALLBACK
                verdicts.append(verdict)
            if method == "exists":
                return any(verdicts)
            if method == "all":
                return all(verdicts)
            return verdicts.count(True) == 1

        return macro


def _unwrap(tree: Any) -> Any:
    """The one meaningful node under a chain of single-child precedence levels."""
    while getattr(tree, "data", None) in _LEVELS and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


_LEVELS: Final = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member", "primary"}
)
_MACROS: Final = frozenset({"exists", "all", "exists_one"})
_COMPARISONS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "relation_eq": lambda a, b: bool(a == b),
    "relation_ne": lambda a, b: bool(a != b),
    "relation_lt": lambda a, b: bool(a < b),
    "relation_le": lambda a, b: bool(a <= b),
    "relation_gt": lambda a, b: bool(a > b),
    "relation_ge": lambda a, b: bool(a >= b),
}
