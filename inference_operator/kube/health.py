"""The operator's own long-running threads, and which of them died: for the liveness answers.

Kopf's liveness endpoint proves that Kopf's event loop answers; the work happens elsewhere,
on our threads (reconcile workers, housekeeping, the Event poster). A thread that died on an
unexpected exception leaves an operator that watches, caches and answers probes but never
reconciles again, silently. Each of these threads therefore runs through ``logged`` (its
death is logged once, with the traceback, in words for the person on call) and is kept in a
``ThreadGroup``, which names the dead ones; both liveness answers (Kopf's probe and our
``/healthz``) fail while any is dead, so the kubelet restarts the pod.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def logged(name: str, target: Callable[[], None]) -> Callable[[], None]:
    """``target`` with its death logged: a thread's last words go to our log, not stderr."""

    def run() -> None:
        try:
            target()
        except BaseException as err:  # the thread ends here either way; say so, loudly
            log.critical(
                "Thread died, the operator is unhealthy until restarted thread=%s error=%s: %s",
                name,
                type(err).__name__,
                err,
                exc_info=True,
            )

    return run


class ThreadGroup:
    """Threads expected to run until ``stop``; any that ended before is dead."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._lock = threading.Lock()

    def start(self, name: str, target: Callable[[], None]) -> threading.Thread:
        thread = threading.Thread(target=logged(name, target), name=name, daemon=True)
        with self._lock:
            self._stopping = False
            self._threads.append(thread)
        thread.start()
        return thread

    def dead(self) -> list[str]:
        """Names of the threads that ended although nobody stopped them."""
        with self._lock:
            if self._stopping:
                return []
            return [t.name for t in self._threads if not t.is_alive()]

    def stopping(self) -> None:
        """From now on threads are expected to end: none of them counts as dead."""
        with self._lock:
            self._stopping = True

    def join(self, timeout: float) -> list[str]:
        """Wait for the threads to end (up to ``timeout`` each, as they were all told to stop
        at once); return the names of those still running."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        alive = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
        return alive

    def __len__(self) -> int:
        with self._lock:
            return len(self._threads)
