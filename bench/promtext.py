"""Quantiles of a Prometheus histogram read from ``/metrics`` text, as ``histogram_quantile`` does.

The benchmarks scrape the operator they run; this turns a histogram's cumulative buckets into
p50/p99 by linear interpolation inside the bucket that holds the rank (Prometheus' own method).
"""

from __future__ import annotations

import math
import re

_BUCKET = re.compile(r"^(?P<name>[a-z_:]+)_bucket\{(?P<labels>[^}]*)\} (?P<value>\S+)$")
_LE = re.compile(r'le="([^"]+)"')


def buckets(text: str, metric: str) -> list[tuple[float, float]]:
    """(upper bound, cumulative count) of ``metric``'s buckets, summed over other labels."""
    counts: dict[float, float] = {}
    for line in text.splitlines():
        match = _BUCKET.match(line)
        if match is None or match["name"] != metric:
            continue
        le = _LE.search(match["labels"])
        if le is None:
            continue
        bound = math.inf if le[1] == "+Inf" else float(le[1])
        counts[bound] = counts.get(bound, 0.0) + float(match["value"])
    return sorted(counts.items())


def quantile(q: float, cumulative: list[tuple[float, float]]) -> float:
    """The ``q`` quantile (0 < q < 1); NaN when there are no observations."""
    if not cumulative or cumulative[-1][1] == 0:
        return math.nan
    rank = q * cumulative[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in cumulative:
        if count >= rank:
            if math.isinf(bound):
                return lower_bound  # above the highest finite bucket: its bound, as Prometheus
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound
