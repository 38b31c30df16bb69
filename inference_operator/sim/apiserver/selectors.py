"""Label and field selectors as kube-apiserver parses them: the ``labelSelector`` and
``fieldSelector`` of a list or a watch.

Operators and kubectl send selectors as strings (``app=a,tier!=db``, ``env in (prod, dev)``,
``!canary``); a fake that only takes a dict of equalities cannot tell whether those strings mean
what their author thinks, nor refuse the malformed ones the real server refuses (400 BadRequest).
This is a port of the parser in k8s.io/apimachinery ``labels/selector.go`` (its lexer, the
operators ``=``, ``==``, ``!=``, ``in``, ``notin``, ``gt``, ``lt``, existence and ``!key``, and the
validation of keys and values), and of the generic field selector (``metadata.name`` and
``metadata.namespace`` with ``=``, ``==``, ``!=``; other fields are refused, as for most kinds).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.managedfields import BadRequest

__all__ = ["Selector", "parse_field_selector", "parse_label_selector"]

Labels = Mapping[str, str]

_SPECIAL: Final = "=!(),<>"
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_INTEGER: Final = re.compile(r"^[-+]?\d+$")
_OPERATORS: Final = ("=", "==", "!=", "in", "notin", ">", "<")
_END: Final = ""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # =, ==, !=, in, notin, exists, !, >, <
    values: tuple[str, ...] = ()

    def matches(self, labels: Labels) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.operator in ("=", "==", "in"):
            return present and value in self.values
        if self.operator in ("!=", "notin"):
            return not present or value not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if not present or not _INTEGER.match(value):
            return False
        bound = int(self.values[0])
        return int(value) > bound if self.operator == ">" else int(value) < bound


@dataclass(frozen=True)
class Selector:
    """A parsed selector: every requirement must match (an empty selector matches everything)."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Labels) -> bool:
        return all(requirement.matches(labels) for requirement in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)


def _tokens(text: str) -> list[str]:
    """The lexer's tokens: identifiers, the operator symbols, ``(``, ``)`` and ``,``."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _SPECIAL:
            width = 2 if text[i : i + 2] in ("==", "!=") else 1
            out.append(text[i : i + width])
            i += width
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _identifier(token: str) -> bool:
    return token not in ("", "in", "notin") and token[0] not in _SPECIAL


def _bad(text: str, why: str) -> BadRequest:
    return BadRequest(f"unable to parse requirement: {why}" if why else f"couldn't parse the selector string {text!r}")


def _check_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    problems = []
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        problems.append("prefix part must be a lowercase RFC 1123 subdomain")
    if not name or len(name) > 63 or not _NAME.match(name):
        problems.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    if problems:
        raise BadRequest(f"unable to parse requirement: key: Invalid value: {key!r}: " + ", ".join(problems))


def _check_value(value: str) -> None:
    if value and (len(value) > 63 or not _NAME.match(value)):
        raise BadRequest(
            f"unable to parse requirement: values[0][{value}]: Invalid value: {value!r}: a valid label must be an "
            "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
            "an alphanumeric character"
        )


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else _END

    def take(self) -> str:
        token = self.peek()
        self.at += 1
        return token

    def selector(self) -> Selector:
        requirements: list[Requirement] = []
        while True:
            token = self.peek()
            if token == _END:
                return Selector(tuple(requirements))
            if not (_identifier(token) or token == "!"):
                raise _bad(self.text, f"found '{token}', expected: !, identifier, or 'end of string'")
            requirements.append(self.requirement())
            after = self.take()
            if after == _END:
                return Selector(tuple(requirements))
            if after != ",":
                raise _bad(self.text, f"found '{after}', expected: ',' or 'end of string'")
            if self.peek() == _END:
                raise _bad(self.text, "found '', expected: identifier after ','")

    def requirement(self) -> Requirement:
        negated = self.peek() == "!"
        if negated:
            self.take()
        key = self.take()
        if not _identifier(key):
            raise _bad(self.text, f"found '{key}', expected: identifier")
        _check_key(key)
        if self.peek() in (_END, ","):
            return Requirement(key, "!" if negated else "exists")
        if negated:
            raise _bad(self.text, f"exists operator with a value is not allowed: found '{self.peek()}'")
        operator = self.take()
        if operator not in _OPERATORS:
            raise _bad(self.text, f"found '{operator}', expected: in, notin, =, ==, !=, gt, lt")
        if operator in ("in", "notin"):
            values = self.value_set()
            if not values:
                raise _bad(self.text, "for 'in', 'notin' operators, values set can't be empty")
        else:
            following = self.peek()
            if following in (_END, ","):
                values = ("",)
            elif _identifier(following) or following in ("in", "notin"):
                values = (self.take(),)
            else:
                raise _bad(self.text, f"found '{following}', expected: identifier")
            if operator in (">", "<") and not _INTEGER.match(values[0]):
                raise _bad(self.text, f"for 'Gt', 'Lt' operators, the value must be an integer: {values[0]!r}")
        for value in values:
            _check_value(value)
        return Requirement(key, operator, tuple(sorted(set(values))))

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            raise _bad(self.text, "found '', expected: '('")
        values: list[str] = []
        expect_value = True
        while True:
            token = self.take()
            if token == ")":
                if expect_value:
                    values.append("")  # "()" and "(a,)" hold the empty value
                return tuple(values)
            if token == ",":
                if expect_value:
                    values.append("")
                expect_value = True
            elif expect_value and (_identifier(token) or token in ("in", "notin")):
                values.append(token)
                expect_value = False
            else:
                raise _bad(self.text, f"found '{token}', expected: ',', ')' or identifier")


def parse_label_selector(text: str) -> Selector:
    """The selector ``text`` says; :class:`BadRequest` (400) for one the real server refuses."""
    return _Parser(text).selector()


_FIELDS: Final[dict[str, Callable[[Obj], str]]] = {
    "metadata.name": lambda obj: str(obj["metadata"].get("name", "")),
    "metadata.namespace": lambda obj: str(obj["metadata"].get("namespace", "")),
}


def parse_field_selector(text: str) -> Callable[[Obj], bool]:
    """A predicate on objects for the field selector ``text`` (``metadata.name=x,metadata.namespace!=y``)."""
    terms: list[tuple[str, bool, str]] = []
    for term in filter(None, (part.strip() for part in text.split(","))):
        match = re.match(r"^([^=!]+?)\s*(==|=|!=)\s*(.*)$", term)
        if match is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{term}'")
        field, operator, value = match.groups()
        if field not in _FIELDS:
            raise BadRequest(f'"{field}" is not a known field selector: only "metadata.name", "metadata.namespace"')
        terms.append((field, operator != "!=", value))

    def matches(obj: Obj) -> bool:
        return all((_FIELDS[field](obj) == value) == equal for field, equal, value in terms)

    return matches
