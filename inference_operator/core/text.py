"""Text from elsewhere made safe to keep: cut to a length, on one line.

Error messages from the API server and the load balancer registry travel into status
conditions, Events, logs and traces. Their size is not ours to choose — a registry once
answered with 2 MiB — and a status past the API server's request limit stops updating. So
every such text is cut where it enters, saying how long it was; text that goes into a log line
also has its control characters escaped, so one message is one line and cannot forge another.
"""

from __future__ import annotations

import re

__all__ = ["bounded_text", "cut", "one_line"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def cut(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters; otherwise its start and
    ``… (cut, N characters in all)``, ``limit`` characters in all."""
    if len(text) <= limit:
        return text
    suffix = f"… (cut, {len(text)} characters in all)"
    return text[: max(limit - len(suffix), 0)] + suffix


def one_line(text: str) -> str:
    """``text`` with every control character (newlines, escapes, DEL, C1) written as ``\\xNN``,
    and the Unicode line and paragraph separators as ``\\u2028`` and ``\\u2029``."""
    return _CONTROL.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def bounded_text(text: str, limit: int) -> str:
    """``text`` on one line and at most ``limit`` characters long."""
    return cut(one_line(text), limit)
