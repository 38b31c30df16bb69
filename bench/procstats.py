"""What a benchmark reads of processes from /proc: CPU seconds used, and resident memory."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol


class Plane(Protocol):
    def pids(self) -> dict[str, int]: ...


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks


def process_cpu(plane: Plane, **others: int) -> dict[str, float]:
    """CPU seconds used so far by each control-plane process, and by ``others`` (name=pid)."""
    pids = {**plane.pids(), **others}
    out = {name: cpu_seconds(pid) for name, pid in pids.items()}
    out["benchmark"] = time.process_time()
    return out


def cpu_line(before: dict[str, float], after: dict[str, float]) -> str:
    used = {k: after[k] - before.get(k, 0.0) for k in after}
    return f"{sum(used.values()):.1f}s: " + ", ".join(f"{k} {v:.1f}s" for k, v in used.items())


def rss_mib(pid: int, field: str = "VmHWM") -> float:
    """VmHWM: peak resident set; VmRSS: resident now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")
