"""Where checks register themselves: ``@check("area/what-it-shows")`` on a function of an Api.

A check is a short script of API operations. It must not branch on the backend: it does the same
calls on both, and the recorder turns every answer into the trace that is compared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .recorder import Api

CheckFunc = Callable[["Api"], None]
CHECKS: dict[str, CheckFunc] = {}


def check(name: str) -> Callable[[CheckFunc], CheckFunc]:
    """Register ``func`` as the check ``name`` (``area/what-it-shows``); names are unique."""

    def register(func: CheckFunc) -> CheckFunc:
        if name in CHECKS:
            raise ValueError(f"two conformance checks are named {name!r}")
        CHECKS[name] = func
        return func

    return register
