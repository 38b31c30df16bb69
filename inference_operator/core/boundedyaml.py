"""YAML as ``kubectl`` reads it, with bounds: no input can hang the loader or exhaust memory.

Why this exists: ``yaml.safe_load`` is safe from code execution, not from size. Aliases are
shared nodes, so a few hundred bytes (``a: &a [x,x,x,x,x,x,x,x,x]``, ``b: &b [*a,*a,…]``, nine
levels deep) load instantly into a structure that is a billion values once anything walks it
(a deep copy, a JSON dump, validation): the process hangs, then dies of memory. A deeply
nested ``[[[[…`` exhausts the recursion limit, an alias inside its own anchor makes a cycle
that nothing downstream survives.

:class:`BoundedLoader` counts while it composes, before any Python object exists: every node
as it would be once aliases are expanded (an alias counts its whole target), the alias
resolutions, and the nesting depth, aliases included; a recursive alias is refused. Past a
bound it stops with :class:`YamlLimitError` naming the line.

It also reads values the way ``kubectl`` sends them to the API server (YAML converted to JSON):
timestamps stay strings (``creationTimestamp: 2024-05-01T10:00:00Z`` is no datetime), ``y`` and
``n`` are booleans as ``yes`` and ``no`` are (kubectl's YAML 1.1 has them so); a key
given twice is an error, not a silent "last one wins"; the result holds only JSON values
(:func:`load_documents`): no NaN or infinity, no binary, no sets, string keys (integer and
boolean keys become their JSON text, as ``kubectl`` does).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any, Final, cast

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

__all__ = ["MAX_ALIASES", "MAX_DEPTH", "MAX_VALUES", "BoundedLoader", "YamlLimitError", "load_documents"]

MAX_VALUES: Final = 200_000
"""Values (scalars, lists, maps) in all documents together, aliases expanded."""
MAX_ALIASES: Final = 1_000
MAX_DEPTH: Final = 100
"""Nesting of lists and maps, aliases expanded (a Deployment is about 10 deep)."""

_TIMESTAMP: Final = "tag:yaml.org,2002:timestamp"
_MERGE: Final = "tag:yaml.org,2002:merge"
_BOOL: Final = "tag:yaml.org,2002:bool"
_KUBECTL_BOOLS: Final = {
    **dict.fromkeys(("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
"""The booleans of kubectl's YAML (go-yaml v2, YAML 1.1): PyYAML's, plus ``y`` and ``n``."""
_KUBECTL_BOOL: Final = re.compile("^(?:" + "|".join(_KUBECTL_BOOLS) + ")$")


class YamlLimitError(ValueError):
    """The YAML is well-formed but past a bound, or holds what JSON cannot carry."""


def _line(mark: Any) -> str:
    return f"line {mark.line + 1}: " if mark is not None else ""


class _Bounds(Composer, SafeConstructor, Resolver):
    """The composer that counts values, aliases and depth (see the module), and the constructor
    that builds maps with JSON keys; the loaders below add a parser."""

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_TIMESTAMP, _BOOL)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    for first in "yYnNtTfFoO":
        yaml_implicit_resolvers.setdefault(first, []).insert(0, (_BOOL, _KUBECTL_BOOL))

    def _start_counting(self) -> None:
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.values = 0
        self.aliases = 0
        self._depth = 0
        self._open: set[str] = set()
        self._measure: dict[int, tuple[int, int]] = {}  # id(node) -> (values, height), expanded

    def compose_document(self) -> Node | None:
        try:
            return super().compose_document()
        finally:
            self._measure.clear()  # the document's anchors are gone with it

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = cast(Any, self).peek_event()
        if isinstance(event, AliasEvent):
            self._resolve_alias(event)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlLimitError(f"{_line(event.start_mark)}nested more than {MAX_DEPTH} levels deep")
        self._count(1, event)
        anchor = event.anchor
        if anchor is not None:
            self._open.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open.discard(anchor)
        return node

    def _resolve_alias(self, event: AliasEvent) -> None:
        target = self.anchors.get(event.anchor)
        if target is None:
            return  # the composer's own "found undefined alias" error follows
        if event.anchor in self._open:
            raise YamlLimitError(f"{_line(event.start_mark)}alias *{event.anchor} refers to a node that contains it")
        self.aliases += 1
        if self.aliases > MAX_ALIASES:
            raise YamlLimitError(f"{_line(event.start_mark)}more than {MAX_ALIASES} aliases")
        values, height = self._measure.get(id(target), (1, 1))
        if self._depth + height > MAX_DEPTH:
            raise YamlLimitError(
                f"{_line(event.start_mark)}alias *{event.anchor} nests more than {MAX_DEPTH} levels deep"
            )
        self._count(values, event)

    def _count(self, values: int, event: Any) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            raise YamlLimitError(f"{_line(event.start_mark)}more than {MAX_VALUES} values once aliases are expanded")

    def compose_scalar_node(self, anchor: Any) -> ScalarNode:
        node = super().compose_scalar_node(anchor)
        self._measure[id(node)] = (1, 1)
        return node

    def compose_sequence_node(self, anchor: Any) -> SequenceNode:
        node = super().compose_sequence_node(anchor)
        self._measure[id(node)] = self._sum(node.value)
        return node

    def compose_mapping_node(self, anchor: Any) -> MappingNode:
        node = super().compose_mapping_node(anchor)
        seen: dict[tuple[str, str], Any] = {}
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != _MERGE:
                if (key.tag, key.value) in seen:
                    raise YamlLimitError(f"{_line(key.start_mark)}key {key.value!r} is already set in this map")
                seen[(key.tag, key.value)] = key
        self._measure[id(node)] = self._sum([child for pair in node.value for child in pair])
        return node

    def _sum(self, children: list[Node]) -> tuple[int, int]:
        measures = [self._measure.get(id(child), (1, 1)) for child in children]
        return 1 + sum(m[0] for m in measures), 1 + max((m[1] for m in measures), default=0)

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[str, Any]:  # type: ignore[override]
        """A map with JSON (string) keys. Keys that become one in JSON (``1`` and ``true`` are
        one key in Python too) are refused, but a key set here beats one merged in (``<<``)."""
        own = sum(1 for key, _ in node.value if key.tag != _MERGE)
        self.flatten_mapping(node)
        merged = len(node.value) - own
        mapping: dict[str, Any] = {}
        own_keys: set[str] = set()
        for n, (key_node, value_node) in enumerate(node.value):
            where = _line(key_node.start_mark).removesuffix(": ")
            key = _json_key(self.construct_object(key_node, deep=deep), where)
            if n >= merged:
                if key in own_keys:
                    raise YamlLimitError(f"{where}: key {key!r} is already set in this map")
                own_keys.add(key)
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


def _timestamp_as_string(loader: _Bounds, node: ScalarNode) -> str:
    return str(loader.construct_scalar(node))


def _kubectl_bool(loader: _Bounds, node: ScalarNode) -> bool:
    value = str(loader.construct_scalar(node))
    if value not in _KUBECTL_BOOLS:  # an explicit !!bool tag on something else
        raise YamlLimitError(f"{_line(node.start_mark)}{value!r} is not a boolean")
    return _KUBECTL_BOOLS[value]


_Bounds.add_constructor(_TIMESTAMP, _timestamp_as_string)  # type: ignore[type-var]
_Bounds.add_constructor(_BOOL, _kubectl_bool)  # type: ignore[type-var]

CParser: Any
try:  # libyaml's parser, when PyYAML was built with it: a megabyte in a fraction of a second
    from yaml._yaml import CParser
except ImportError:  # pragma: no cover - the pure-Python parser, some twenty times slower
    CParser = None


class _PythonLoader(_Bounds, Reader, Scanner, Parser):
    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        self._start_counting()


if CParser is not None:

    class _FastLoader(_Bounds, CParser):  # type: ignore[misc]
        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            self._start_counting()

    BoundedLoader: Any = _FastLoader
else:  # pragma: no cover
    BoundedLoader = _PythonLoader


def _json_key(key: Any, where: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    raise YamlLimitError(f"{where or 'the document'}: a key is {type(key).__name__} {key!r}; keys must be strings")


def _as_json(value: Any, where: str) -> Any:
    """``value`` as a tree of JSON values (a fresh copy: aliases no longer share objects)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise YamlLimitError(f"{where or 'the document'}: {value} is not a JSON number (no NaN or infinity)")
        return value
    if isinstance(value, list):
        return [_as_json(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = _json_key(key, where)
            path = f"{where}.{name}" if where else name
            if name in out:
                raise YamlLimitError(f"{path}: key given twice")
            out[name] = _as_json(item, path)
        return out
    shown = "binary data (!!binary)" if isinstance(value, bytes) else f"a {type(value).__name__}"
    raise YamlLimitError(f"{where or 'the document'}: {shown} is no JSON value")


def load_documents(text: str, *, loader: Any = None) -> Iterator[Any]:
    """The documents of ``text`` as JSON values (empty documents skipped), read with
    :class:`BoundedLoader` (or ``loader``, a class like it); raises ``yaml.YAMLError`` or
    :class:`YamlLimitError`."""
    loader = (loader or BoundedLoader)(text)
    try:
        while loader.check_data():
            try:
                document = loader.get_data()
            except YamlLimitError:
                raise
            except ValueError as err:  # an integer of more digits than Python converts
                problem = "an integer has more than 4300 digits" if "digits" in str(err) else str(err)
                raise YamlLimitError(problem) from None
            if document is not None:
                yield _as_json(document, "")
    finally:
        loader.dispose()
