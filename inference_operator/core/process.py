"""Process-level settings for a Python process that holds thousands of Kubernetes objects.

The operator's caches are large trees of dicts and lists with no reference cycles. CPython's
default cyclic-GC threshold (a collection every 700 net allocations) keeps re-scanning them,
and full collections grow with the heap: on the simulator benchmark that cost about 45% of
the time at 10,000 objects and made the run superlinear. Collections every 50,000
allocations keep garbage collection (still on, for the cycles libraries do create) off the
hot path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

GC_THRESHOLDS = (50_000, 20, 10)


def tune_gc() -> tuple[int, int, int]:
    """Apply the operator's GC thresholds; returns the previous ones."""
    previous = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    return previous


M_ARENA_MAX = -8  # glibc mallopt parameter
MALLOC_ARENAS = 2


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas (like ``MALLOC_ARENA_MAX``), before worker threads start.

    glibc gives busy threads arenas of their own (up to 8 per core), and memory freed in one
    of them is rarely returned: a threaded Python process parsing many JSON responses grows
    its resident set well past what it holds. Two arenas are plenty for a few worker threads
    that mostly wait on the network. Returns False where there is no glibc (nothing done).
    """
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        logging.getLogger(__name__).debug("mallopt is not available; malloc arenas left as they are")
        return False
