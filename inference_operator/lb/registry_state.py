"""Keeps the registry's records on disk, so they outlive the registry process and the operator.

The registry's whole point is to be checked against after restarts; this module is the only one
that knows the state file's format (a versioned JSON document) and how it is written without ever
leaving a half-written file behind. ``RegistryServer`` loads it once at start and saves after
every change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from ..backend import Registration

STATE_VERSION = 1


class RegistryStateError(Exception):
    """The state file cannot be read or does not hold registry state; the server does not start."""


def load_state(path: Path) -> tuple[dict[str, Registration], int]:
    """``(registrations, last issued id number)`` from ``path``; empty when the file does not exist."""
    if not path.parent.is_dir():
        raise RegistryStateError(f"{path}: the directory {path.parent} does not exist")
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}, 0
    except OSError as err:
        raise RegistryStateError(f"{path}: cannot read: {err.strerror}") from None
    except ValueError as err:
        raise RegistryStateError(f"{path}: not valid JSON: {err}") from None
    try:
        if doc["version"] != STATE_VERSION:
            raise RegistryStateError(f"{path}: state version {doc['version']!r}, expected {STATE_VERSION}")
        registrations = {key: _registration_from(record) for key, record in doc["registrations"].items()}
        next_id = int(doc["next_id"])
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise RegistryStateError(f"{path}: not a registry state file ({type(err).__name__}: {err})") from None
    issued = [int(r.id[3:]) for r in registrations.values() if re.fullmatch(r"lb-\d+", r.id)]
    return registrations, max([next_id, *issued])


def _registration_from(record: Any) -> Registration:
    registration = Registration(**record)
    if not all(isinstance(v, str) and v for v in dataclasses.astuple(registration)):
        raise ValueError(f"a registration needs non-empty strings id, address and target, got {record!r}")
    return registration


def save_state(path: Path, registrations: dict[str, Registration], next_id: int) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename over it (atomic on POSIX)."""
    doc = {
        "version": STATE_VERSION,
        "next_id": next_id,
        "registrations": {key: dataclasses.asdict(reg) for key, reg in sorted(registrations.items())},
    }
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as file:
            json.dump(doc, file, indent=2, sort_keys=True)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
