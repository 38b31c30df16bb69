"""Numbers a user typed (a flag, an environment variable), checked finite and in range.

Why this exists: ``float("nan")`` and ``float("inf")`` parse, and NaN passes every ``<``
check, so a ``--ready-after inf`` or ``LB_TIMEOUT=nan`` used to get through and break far
from where it was typed (a wait that never ends, ``OverflowError: timeout value is too
large``, a port number the socket refuses with a traceback). Every number from outside goes
through :func:`parse_number` with explicit bounds, and the message says what is allowed.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

__all__ = ["argument", "describe", "parse_number"]


def describe(*, low: float, high: float, integer: bool = False, above: bool = False, unit: str = "") -> str:
    """``a whole number from 1 to 256``, ``a number of seconds above 0 up to 600``."""
    what = ("a whole number" if integer else "a number") + (f" of {unit}" if unit else "")
    if above:
        return f"{what} above {low:g} up to {high:g}"
    return f"{what} from {low:g} to {high:g}"


def parse_number(
    text: str, *, low: float, high: float, integer: bool = False, above: bool = False, unit: str = ""
) -> float:
    """``text`` as a number in ``[low, high]`` (``above``: in ``(low, high]``), finite, whole if
    ``integer``; ``ValueError`` saying what is allowed otherwise."""
    allowed = f"must be {describe(low=low, high=high, integer=integer, above=above, unit=unit)}"
    raw = text.strip()
    if not raw.isascii():  # int() and float() take other scripts' digits too
        raise ValueError(allowed)
    try:
        value: float = int(raw, 10) if integer else float(raw)
    except ValueError:
        raise ValueError(allowed) from None
    if not math.isfinite(value) or value < low or value > high or (above and value <= low):
        raise ValueError(allowed)
    return value


def argument(
    *, low: float, high: float, integer: bool = False, above: bool = False, unit: str = ""
) -> Callable[[str], float]:
    """An argparse ``type=`` for :func:`parse_number` (its error: ``'inf': must be …``)."""

    def parse(text: str) -> float:
        try:
            value = parse_number(text, low=low, high=high, integer=integer, above=above, unit=unit)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None
        return int(value) if integer else value

    parse.__name__ = "whole number" if integer else "number"
    return parse
