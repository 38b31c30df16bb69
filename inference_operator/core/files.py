"""Reading a file a user named, without letting the name hang or exhaust the process.

Why this exists: ``Path(p).read_text()`` trusts the name. A FIFO blocks it until someone writes
(forever, in a script), ``/dev/zero`` or ``/dev/urandom`` never end and fill the memory, a
directory raises an error that reads like a bug, and a multi-gigabyte log passed by mistake
takes minutes before anything is said. Every command that reads a user's file goes through
:func:`read_regular_file`: it opens without blocking, insists on a regular file (by ``fstat`` of
the opened descriptor, so a file swapped in between cannot slip past), refuses one larger than
the caller's cap before reading it, and reads at most the cap. ``-`` is standard input, read up
to the cap too (a pipe that never ends is refused once the cap is passed).
"""

from __future__ import annotations

import os
import stat
import sys
from typing import BinaryIO

__all__ = ["InputFileError", "check_regular_file", "read_regular_file", "read_text_file", "sized"]


class InputFileError(ValueError):
    """A file that cannot be read as input; the message names it and says why."""


def sized(limit: int) -> str:
    """``1 MiB``, ``64 KiB``, ``512 bytes``: a cap as a person writes it."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _open(path: str) -> int:
    try:
        # O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer.
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise InputFileError(f"{path}: cannot read: {err.strerror or err}") from None


def check_regular_file(path: str, *, limit: int) -> int:
    """The size of ``path`` if it is a regular file of at most ``limit`` bytes; else
    :class:`InputFileError` saying what it is instead."""
    fd = _open(path)
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    _check(path, info, limit)
    return info.st_size


def _check(path: str, info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(f"{path}: is {_kind(info.st_mode)}, not a regular file")
    if info.st_size > limit:
        raise InputFileError(f"{path}: is {info.st_size} bytes, more than the {sized(limit)} allowed")


def read_regular_file(path: str, *, limit: int, stdin: BinaryIO | None = None) -> bytes:
    """The bytes of ``path`` (``-``: standard input), at most ``limit`` of them.

    :class:`InputFileError` for anything but a regular file (``-`` excepted), or more than
    ``limit`` bytes."""
    if path == "-":
        try:
            data = _read_at_most(stdin if stdin is not None else sys.stdin.buffer, limit + 1)
        except (OSError, ValueError) as err:  # closed, or not readable
            raise InputFileError(f"-: cannot read standard input: {getattr(err, 'strerror', None) or err}") from None
        if len(data) > limit:
            raise InputFileError(f"-: standard input is more than the {sized(limit)} allowed")
        return data
    fd = _open(path)
    try:
        info = os.fstat(fd)
        _check(path, info, limit)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = _read_at_most(f, limit + 1)
    except OSError as err:
        raise InputFileError(f"{path}: cannot read: {err.strerror or err}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while we read
        raise InputFileError(f"{path}: is more than the {sized(limit)} allowed")
    return data


def _read_at_most(stream: BinaryIO, count: int) -> bytes:
    chunks: list[bytes] = []
    left = count
    while left > 0:
        chunk = stream.read(min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_text_file(path: str, *, limit: int, stdin: BinaryIO | None = None) -> str:
    """:func:`read_regular_file`, decoded as UTF-8 (a leading byte order mark dropped); text in
    any other encoding is refused, naming the first byte that is not UTF-8, not guessed at."""
    data = read_regular_file(path, limit=limit, stdin=stdin)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        bad = data[err.start : err.start + 1].hex()
        line = data.count(b"\n", 0, err.start) + 1
        raise InputFileError(f"{path}: line {line}: not UTF-8 text (byte 0x{bad} at offset {err.start})") from None
