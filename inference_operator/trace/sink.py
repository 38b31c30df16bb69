"""Where trace records go, and how a trace is read back.

- :class:`ListSink`: in memory (tests);
- :class:`FileSink`: one JSON-lines file, unbounded (``demo --trace``: a simulation ends);
- files are created 0600 and never written through a symlink (:func:`open_private`);
- :class:`RingSink`: a bounded ring of files for a long-running operator (``run --trace``):
  ``FILE`` is written until it holds ``max_bytes``, then it becomes ``FILE.1`` (``FILE.1``
  becomes ``FILE.2`` …, the oldest beyond ``files`` is deleted) and a new ``FILE`` starts
  with a copy of the header record. At most ``max_bytes * files`` bytes stay on disk, and the
  newest records are always kept.

:func:`read_trace` reads a trace (a ring's files oldest first) back into records.
"""

from __future__ import annotations

import errno
import io
import json
import os
import threading
from pathlib import Path
from typing import IO, Any

from inference_operator.core.objects import Obj
from inference_operator.trace.recorder import READABLE_VERSIONS

__all__ = ["FileSink", "ListSink", "RingSink", "TraceError", "dumps", "read_trace", "ring_files"]


class TraceError(ValueError):
    """A trace file that is not one, or of a version this reader does not know."""


def dumps(record: Obj) -> str:
    """One record as one line of compact JSON (no NaN: strict JSON for any reader)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str)


class ListSink:
    """Keeps the records in a list."""

    def __init__(self) -> None:
        self.records: list[Obj] = []
        self.closed = False

    def write(self, record: Obj) -> None:
        self.records.append(json.loads(dumps(record)))  # what a file would hold, not live references

    def close(self) -> None:
        self.closed = True


def open_private(path: Path) -> IO[bytes]:
    """``path`` created or truncated for writing, mode 0600, never through a symlink.

    A trace is operational data (names, images, errors): only its owner reads it. And a trace
    path may sit in a shared directory, so a symlink planted there must not redirect the write
    to another file: one at the path is refused (``ELOOP``), and ``O_NOFOLLOW`` closes the race.
    """
    if path.is_symlink():
        raise OSError(errno.ELOOP, "is a symbolic link: refusing to write a trace through it", str(path))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)  # a file that existed keeps its mode through O_CREAT
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise


class FileSink:
    """Appends records to one file (created or truncated, 0600), one JSON object per line."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[str] = io.TextIOWrapper(open_private(self.path), encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, record: Obj) -> None:
        line = dumps(record) + "\n"
        with self._lock:
            self._file.write(line)

    def close(self) -> None:
        with self._lock:
            self._file.close()


def ring_files(path: str | os.PathLike[str]) -> list[Path]:
    """The files of a ring, oldest first: ``FILE.N`` … ``FILE.1``, ``FILE`` (those that exist)."""
    base = Path(path)
    prefix = base.name + "."
    rotated: list[tuple[int, Path]] = []
    # Names compared, not globbed: the file name may hold *, ? or [, which a pattern would expand.
    for candidate in base.parent.iterdir() if base.parent.is_dir() else ():
        suffix = candidate.name[len(prefix) :] if candidate.name.startswith(prefix) else ""
        if suffix.isdigit():
            rotated.append((int(suffix), candidate))
    files = [p for _, p in sorted(rotated, reverse=True)]
    if base.exists():
        files.append(base)
    return files


class RingSink:
    """A bounded ring of JSON-lines files: ``FILE`` (newest), ``FILE.1`` … ``FILE.{files-1}``.

    Every file starts with the header (the first record written), so each one can be read on
    its own. A record larger than ``max_bytes`` is still written whole, alone in its file.
    """

    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int, files: int) -> None:
        if max_bytes < 1024:
            raise ValueError(f"max_bytes must be at least 1024, got {max_bytes}")
        if files < 1:
            raise ValueError(f"files must be at least 1, got {files}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.files = files
        self._lock = threading.Lock()
        if self.path.is_symlink():
            raise OSError(errno.ELOOP, "is a symbolic link: refusing to write a trace through it", str(self.path))
        for old in ring_files(self.path):  # a new recording: the previous one's files go
            old.unlink()
        self._file: IO[bytes] = open_private(self.path)
        self._size = 0
        self._header: bytes | None = None
        self.rotations = 0

    def write(self, record: Obj) -> None:
        line = (dumps(record) + "\n").encode("utf-8")
        with self._lock:
            if self._header is None:
                self._header = line
            elif self._size + len(line) > self.max_bytes and self._size > len(self._header):
                self._rotate()
            self._file.write(line)
            self._size += len(line)

    def _rotate(self) -> None:
        self._file.close()
        self.rotations += 1
        oldest = self.path.with_name(f"{self.path.name}.{self.files - 1}") if self.files > 1 else self.path
        if self.files == 1:
            self.path.unlink()
        elif oldest.exists():
            oldest.unlink()
        for n in range(self.files - 2, 0, -1):
            src = self.path.with_name(f"{self.path.name}.{n}")
            if src.exists():
                src.rename(self.path.with_name(f"{self.path.name}.{n + 1}"))
        if self.files > 1:
            self.path.rename(self.path.with_name(f"{self.path.name}.1"))
        self._file = open_private(self.path)
        header = self._header or b""
        self._file.write(header)
        self._size = len(header)

    def close(self) -> None:
        with self._lock:
            self._file.close()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _record(line: str, file: Path, number: int) -> Any:
    """One line's JSON value: strict JSON (a trace is written without NaN or infinities, so a
    line with one is not ours), and nested no deeper than the parser's recursion allows."""
    try:
        return json.loads(line, parse_constant=_no_constant)
    except RecursionError:
        raise TraceError(f"{file}: line {number}: nested too deeply to be a trace record") from None
    except ValueError as err:  # JSONDecodeError too
        raise TraceError(f"{file}: line {number}: not a trace (not JSON lines: {err})") from None


def read_trace(path: str | os.PathLike[str], *, ring: bool = False) -> list[Obj]:
    """The records of a trace file (``ring``: of all the ring's files, oldest first, with the
    repeated headers after the first dropped). Checks the header's format and version."""
    files = ring_files(path) if ring else [Path(path)]
    if not files:
        raise TraceError(f"{path}: no trace file there")
    records: list[Obj] = []
    for n, file in enumerate(files):
        with file.open(encoding="utf-8") as f:
            lines = [_record(line, file, number) for number, line in enumerate(f, start=1) if line.strip()]
        if not all(isinstance(line, dict) for line in lines):
            raise TraceError(f"{file}: a line is not a JSON object")
        if not lines or lines[0].get("type") != "header":
            raise TraceError(f"{file}: does not start with a header record")
        header = lines[0]
        if header.get("format") != "inference-operator-trace":
            raise TraceError(f"{file}: format is {header.get('format')!r}, not 'inference-operator-trace'")
        if header.get("version") not in READABLE_VERSIONS:
            known = ", ".join(str(v) for v in READABLE_VERSIONS)
            raise TraceError(f"{file}: trace format version {header.get('version')!r}; this reader knows {known}")
        records.extend(lines if n == 0 else lines[1:])
    return records
