"""The functions and methods of the compiled CEL subset (``celfast.py``), as closures.

Each takes the closures of its arguments and returns the closure of the call; anything but the
plain, well-typed case raises :class:`~.celfast.Fallback`'s instance so that celpy decides.
Global functions: ``size``, ``string`` of a string or an integer, and Kubernetes' quantity
library (``isQuantity``, ``quantity``, :mod:`.celquantity`); methods: the string methods, and a
Quantity's ``isGreaterThan``, ``isLessThan`` and ``compareTo``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, Final

from inference_operator.sim.apiserver.celquantity import Quantity, is_quantity, quantity

Env = Mapping[str, Any]
Fn = Callable[[Env], Any]

STRING_METHODS: Final = ("matches", "startsWith", "endsWith", "contains")
QUANTITY_METHODS: Final = ("isGreaterThan", "isLessThan", "compareTo")
FUNCTIONS: Final = ("size", "string", "isQuantity", "quantity")


class Fallback(Exception):
    """This evaluation left the plain case: let celpy decide."""


FALLBACK: Final = Fallback()


@functools.lru_cache(maxsize=64)
def _regex(pattern: str) -> Any:
    import re2  # type: ignore[import-untyped]  # the engine celpy uses for ``matches`` (RE2 syntax and semantics)

    return re2.compile(pattern)


def function(name: str, of: Fn) -> Fn:
    """The closure of the one-argument global function ``name`` (one of :data:`FUNCTIONS`)."""

    def size(env: Env) -> int:
        value = of(env)
        if type(value) not in (str, list, dict):
            raise FALLBACK
        return len(value)

    def string(env: Env) -> str:
        value = of(env)
        if type(value) is str:
            return value
        if type(value) is int:
            return str(value)
        raise FALLBACK

    def text(env: Env) -> str:
        value = of(env)
        if type(value) is not str:
            raise FALLBACK
        return value

    def is_quantity_of(env: Env) -> bool:
        return is_quantity(text(env))

    def quantity_of(env: Env) -> Quantity:
        value = text(env)
        if not is_quantity(value):
            raise FALLBACK  # an error: celpy words it
        return quantity(value)

    return {"size": size, "string": string, "isQuantity": is_quantity_of, "quantity": quantity_of}[name]


def string_method(method: str, target: Fn, argument: Fn) -> Fn:
    def call(env: Env) -> bool:
        text, arg = target(env), argument(env)
        if type(text) is not str or type(arg) is not str:
            raise FALLBACK
        if method == "matches":
            try:
                return _regex(arg).search(text) is not None
            except Exception as err:  # a bad pattern: celpy words the error
                raise FALLBACK from err
        if method == "startsWith":
            return text.startswith(arg)
        if method == "endsWith":
            return text.endswith(arg)
        return arg in text

    return call


def quantity_method(method: str, target: Fn, argument: Fn) -> Fn:
    def call(env: Env) -> Any:
        left, right = target(env), argument(env)
        if type(left) is not Quantity or type(right) is not Quantity:
            raise FALLBACK
        order = left.compare_to(right)
        if method == "compareTo":
            return order
        return order > 0 if method == "isGreaterThan" else order < 0

    return call
