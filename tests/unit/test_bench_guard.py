"""The simulator's cost per object at 1,000 InferenceServices stays within a bound.

Covers: bench/sim.py at N=1000 (its own process, the operator's GC settings) costs at most
``BOUND`` times the CPU of bench/reference.py's fixed workload per object, both measured as
CPU time in the same process. A ratio, not seconds: CI machines and this project's shared
machine vary in speed by more than the regressions worth catching, and a busier or slower
machine slows both sides alike.

How the bound was chosen: bench/sim.py runs the simulated cluster (nodes, scheduler,
ReplicaSets, two pods per InferenceService, kubelets: about 25 writes per object where the
timer-based Deployment controller it replaced made 8). On the project's shared 2-core machine
(load average about 3) the ratio measured 0.0401, 0.0461, 0.0463, 0.0466 and 0.0601 at N=1000
(median 0.046); the timer model measured 0.0144 in the same window, and 0.0163-0.0205 (median 0.0176)
when the old bound of 0.04 was chosen, so pods cost about 2.6x per object. 0.10 is 2.2x the median
and 1.7x the highest figure seen: room for a noisier CI machine, while a regression that more
than doubles the simulator's cost per object fails. It would not catch one of 1.5x or even 2x:
that is the price of not failing on a busy machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
N = 1000
BOUND = 0.10


def test_the_simulators_cpu_per_object_at_1k_stays_within_its_bound_relative_to_the_reference() -> None:
    done = subprocess.run(
        [sys.executable, "bench/sim.py", "--json", "--reference", str(N)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    ratio = figures["per_object_over_reference"]
    assert ratio <= BOUND, (
        f"{N} InferenceServices cost {figures['cpu_ms_per_object']:.2f} ms of CPU per object, "
        f"{ratio:.4f}x the reference workload's {figures['reference_cpu_s']:.3f} s (bound {BOUND}): "
        "profile with `python bench/sim.py --repeat 3 --reference 1000` and py-spy or cProfile"
    )
