"""Checks of the command line's arguments that must happen before any work.

Why this exists: a bad path or number found late costs the user the whole run (a simulation,
a cluster connection) and then surfaces as a traceback from deep inside: ``crd -o
missing/dir/x.yaml`` after generating, ``--port 99999`` as ``OverflowError`` from the socket,
``--liveness`` nonsense from Kopf's web server. These are argparse ``type=`` functions and
pre-flight checks, each answering in one line that names the flag and the value.
"""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path
from urllib.parse import urlsplit

from inference_operator.core.bounds import argument

__all__ = ["DEMO_SCENARIOS", "OutputPathError", "check_output", "horizon", "liveness_url", "port", "ready_after"]

DEMO_SCENARIOS = ("create", "scale-upgrade", "delete", "drift")
"""``demo --scenario``: the bundled scenarios by name (``demo.SCENARIOS``, in that order; a test
keeps the two the same). Named here so that parsing a command line, ``run``'s included, does
not import the simulator."""

port = argument(low=0, high=65535, integer=True)
"""A TCP port to listen on, 0 for any free one."""
ready_after = argument(low=0, high=86400, unit="seconds")
"""``demo --ready-after``: seconds pods take to become ready (at most the longest progress deadline)."""
horizon = argument(low=1, high=7 * 86400, unit="seconds")
"""``demo --horizon``: simulated seconds a what-if waits for its change to finish (at most a week)."""


class OutputPathError(ValueError):
    """An output path that cannot be written; the message names the flag and the path."""


def check_output(path: str, flag: str) -> None:
    """``path`` can be created or overwritten as a regular file: its directory exists and is
    writable, and it is no directory, FIFO or socket (writing to a FIFO waits for a reader)."""
    if not path or "\0" in path:
        raise OutputPathError(f"{flag} {path!r}: not a file name")
    target = Path(path)
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise OutputPathError(f"{flag} {path}: {err.strerror or err}") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise OutputPathError(f"{flag} {path}: is a directory, give a file name")
        if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode):
            raise OutputPathError(f"{flag} {path}: is a FIFO or socket, not a file")
        if not os.access(target, os.W_OK):
            raise OutputPathError(f"{flag} {path}: not writable")
        return
    where = target.absolute().parent
    if not where.is_dir():
        raise OutputPathError(f"{flag} {path}: directory {where} does not exist")
    if not os.access(where, os.W_OK | os.X_OK):
        raise OutputPathError(f"{flag} {path}: directory {where} is not writable")


def liveness_url(text: str) -> str:
    """``run --liveness``: an http(s) URL with a host, an optional port in range and a path."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError when out of range
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f"{text!r}: must be an http URL, e.g. http://0.0.0.0:8080/healthz")
    return text
