"""Process-level settings for a Python process that holds thousands of Kubernetes objects.

The operator's caches are large trees of dicts and lists with no reference cycles. CPython's
default cyclic-GC threshold (a collection every 700 net allocations) keeps re-scanning them,
and full collections grow with the heap: on the simulator benchmark that cost about 45% of
the time at 10,000 objects and made the run superlinear. Collections every 50,000
allocations keep garbage collection (still on, for the cycles libraries do create) off the
hot path.
"""

from __future__ import annotations

import gc

GC_THRESHOLDS = (50_000, 20, 10)


def tune_gc() -> tuple[int, int, int]:
    """Apply the operator's GC thresholds; returns the previous ones."""
    previous = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    return previous
