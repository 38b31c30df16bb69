"""Keeps the registry's records on disk, so they outlive the registry process and the operator.

The registry's whole point is to be checked against after restarts; this module is the only one
that knows the state file's format and how it is written without ever losing an acknowledged
change. The file is a journal of JSON lines, so a change costs one short append (flushed and
fsynced before the registry answers), not a rewrite of every record:

    {"version": 2, "next_id": 41}                                  header: the id counter
    {"put": "team-a/llama", "id": "lb-42", "address": "…", "target": "…"}
    {"delete": "team-a/mixtral"}

``StateFile.load`` replays it and, when it holds more lines than records, rewrites it compacted
(atomically: temporary file, fsync, rename); appends compact it again once dead lines
outnumber live ones. A last line without its newline is a write that crashed before it was
acknowledged and is dropped. Version 1 files (one JSON document) are read and rewritten as
version 2.
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

from inference_operator.core.ports import Registration

STATE_VERSION = 2
COMPACT_MIN_LINES = 1000  # never compact a journal shorter than this


class RegistryStateError(Exception):
    """The state file cannot be read or does not hold registry state; the server does not start."""


class StateFile:
    """The registry's journal on disk. Not thread-safe: the registry calls it under its lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines = 0  # lines in the journal, header included

    def load(self) -> tuple[dict[str, Registration], int]:
        """``(registrations, last issued id number)``; empty when the file does not exist."""
        if not self.path.parent.is_dir():
            raise RegistryStateError(f"{self.path}: the directory {self.path.parent} does not exist")
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}, 0
        except OSError as err:
            raise RegistryStateError(f"{self.path}: cannot read: {err.strerror}") from None
        registrations, next_id, lines = self._parse(text)
        issued = [int(r.id[3:]) for r in registrations.values() if re.fullmatch(r"lb-\d+", r.id)]
        next_id = max([next_id, *issued])
        if lines != len(registrations) + 1 or not text.endswith("\n"):
            try:
                self.compact(registrations, next_id)
            except OSError as err:
                raise RegistryStateError(f"{self.path}: cannot rewrite it compacted: {err.strerror}") from None
        else:
            self._lines = lines
        return registrations, next_id

    def put(self, key: str, registration: Registration, live: dict[str, Registration], next_id: int) -> None:
        self._append({"put": key, **dataclasses.asdict(registration)}, live, next_id)

    def delete(self, key: str, live: dict[str, Registration], next_id: int) -> None:
        self._append({"delete": key}, live, next_id)

    def compact(self, registrations: dict[str, Registration], next_id: int) -> None:
        """Rewrite the journal as a header and one line per record, atomically."""
        lines = [_line({"version": STATE_VERSION, "next_id": next_id})]
        lines += [_line({"put": key, **dataclasses.asdict(reg)}) for key, reg in sorted(registrations.items())]
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as file:
                file.writelines(lines)
                file.flush()
                os.fsync(file.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._lines = len(lines)

    def _append(self, record: dict[str, str], live: dict[str, Registration], next_id: int) -> None:
        """Append one change; ``live`` and ``next_id`` are the state after it (for compaction)."""
        if self._lines == 0 or self._lines > max(COMPACT_MIN_LINES, 2 * len(live) + 1) or not self.path.exists():
            # A first write, dead lines outnumbering live ones, or a file someone deleted
            # (appending would leave a journal without its header): write it whole.
            self.compact(live, next_id)
            return
        with self.path.open("a") as file:
            file.write(_line(record))
            file.flush()
            os.fsync(file.fileno())
        self._lines += 1

    def _parse(self, text: str) -> tuple[dict[str, Registration], int, int]:
        """``(registrations, next_id from the header, complete lines)``."""
        with contextlib.suppress(ValueError):
            doc = json.loads(text)
            if isinstance(doc, dict) and doc.get("version") == 1:
                old, old_next_id = self._parse_version_1(doc)
                return old, old_next_id, 0  # never "already compact": rewrite as version 2
        lines = [line for line in text.split("\n") if line.strip()]
        if len(lines) > 1 and not text.endswith("\n"):
            # Torn by a crash before the change was acknowledged (headers are never torn:
            # they are only written by an atomic rename).
            lines = lines[:-1]
        if not lines:
            raise RegistryStateError(f"{self.path}: not a registry state file (empty)")
        header = self._decode(lines[0], 1)
        if not isinstance(header, dict) or "version" not in header:
            raise RegistryStateError(f"{self.path}: not a registry state file (no version header on line 1)")
        if header["version"] != STATE_VERSION:
            raise RegistryStateError(f"{self.path}: state version {header['version']!r}, expected {STATE_VERSION}")
        try:
            next_id = int(header["next_id"])
        except (KeyError, TypeError, ValueError) as err:
            raise RegistryStateError(f"{self.path}: not a registry state file (header: {err!r})") from None
        registrations: dict[str, Registration] = {}
        for number, line in enumerate(lines[1:], start=2):
            added = self._apply(registrations, self._decode(line, number), number)
            if added is not None and re.fullmatch(r"lb-\d+", added.id):
                next_id = max(next_id, int(added.id[3:]))  # also ids released since: never reused
        return registrations, next_id, len(lines)

    def _decode(self, line: str, number: int) -> Any:
        try:
            return json.loads(line)
        except ValueError as err:
            raise RegistryStateError(f"{self.path}: line {number} is not valid JSON: {err}") from None

    def _apply(self, registrations: dict[str, Registration], record: Any, number: int) -> Registration | None:
        """Replay one change; returns the record a put wrote."""
        try:
            if "delete" in record:
                registrations.pop(str(record["delete"]), None)
                return None
            key = record.pop("put")
            registration = registrations[str(key)] = _registration_from(record)
            return registration
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise RegistryStateError(
                f"{self.path}: line {number} is not a registry change ({type(err).__name__}: {err})"
            ) from None

    def _parse_version_1(self, doc: dict[str, Any]) -> tuple[dict[str, Registration], int]:
        try:
            registrations = {key: _registration_from(record) for key, record in doc["registrations"].items()}
            return registrations, int(doc["next_id"])
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise RegistryStateError(f"{self.path}: not a registry state file ({type(err).__name__}: {err})") from None


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(", ", ": ")) + "\n"


def _registration_from(record: Any) -> Registration:
    registration = Registration(**record)
    if not all(isinstance(v, str) and v for v in dataclasses.astuple(registration)):
        raise ValueError(f"a registration needs non-empty strings id, address and target, got {record!r}")
    return registration
