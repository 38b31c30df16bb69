"""A deadline for a whole exchange on a socket, not for each of its reads.

A socket's timeout bounds one operation, so a peer that sends one byte just before each timeout
keeps an exchange going as long as it likes. Both ends of the operator's HTTP traffic need the
whole exchange bounded: its client of the load balancer registry (``lb.deadline``) and its
metrics server (``kube.metricsserver``). :class:`DeadlineReader` gives every read only the time
left until one :class:`Deadline`; a read that starts after it fails at once with ``TimeoutError``.
"""

from __future__ import annotations

import io
import socket
import time
from typing import Any

__all__ = ["Deadline", "DeadlineReader", "bounded_reader"]


class Deadline:
    """A point on the monotonic clock, ``seconds`` from now."""

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left; ``TimeoutError`` once none are."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the deadline passed")
        return left


class DeadlineReader(io.RawIOBase):
    """A socket's file, each read given only the time left until the deadline. It reads the
    file's raw stream (the socket's) directly and closes the file when closed itself, so the
    file's hold on the socket (``makefile``'s reference) lasts exactly as long as before."""

    def __init__(self, file: io.BufferedReader, sock: socket.socket, deadline: Deadline) -> None:
        self._file = file
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(self._deadline.remaining())
        return self._file.raw.readinto(buffer)

    def close(self) -> None:
        self._file.close()
        super().close()


def bounded_reader(file: io.BufferedReader, sock: socket.socket, deadline: Deadline) -> io.BufferedReader:
    """``file`` (a socket's ``makefile("rb")``), every read of it bounded by ``deadline``."""
    return io.BufferedReader(DeadlineReader(file, sock, deadline))
