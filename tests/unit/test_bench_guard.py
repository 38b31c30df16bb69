"""The simulator's cost per object at 1,000 InferenceServices stays within a bound.

Covers: bench/sim.py at N=1000 (its own process, the operator's GC settings) costs at most
``BOUND`` times the CPU of bench/reference.py's fixed workload per object, both measured as
CPU time in the same process. A ratio, not seconds: CI machines and this project's shared
machine vary in speed by more than the regressions worth catching, and a busier or slower
machine slows both sides alike.

How the bound was chosen: after the profile-driven fixes of issue 23 the ratio measured
0.0163-0.0205 at N=1000 (seven runs, median 0.0176) on the project's shared 2-core machine
while other builds ran; the reference itself then took 0.41-0.61 s of CPU (0.36 s on a
quieter moment), so absolute CPU moved by 1.7x while the ratio moved by 1.2x. Before those
fixes the ratio was 0.0275 (one run), and the regression issue 23 was about had
been tenfold. 0.04 is twice the highest figure seen: room for a noisier CI machine and a CPU
whose caches favour the small reference more, while anything that doubles the simulator's
cost per object fails. It would not catch a regression of 1.5x (undoing all of issue 23's
fixes lands at 0.0275): that is the price of not failing on a busy machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
N = 1000
BOUND = 0.04


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
