#!/usr/bin/env python3
"""Benchmark (not a test): instructions per InferenceService in the simulator, under valgrind.

CPU seconds on a shared machine move by 15% from one run to the next; the instructions a run
executes do not. This runs bench/sim.py's workload (N InferenceServices created at once, run
until Ready, on the simulated cluster) at two sizes under valgrind's cachegrind (``I refs``,
no cache simulation) and prints the difference per InferenceService: start-up, imports and
the fixed part of a run cancel out. About a minute per size; valgrind must be installed.

Usage: python bench/instructions.py [--small 50] [--large 250]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUN = "import sys; sys.path.insert(0, {here!r}); import sim; sim.run({n})"
I_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
TIMEOUT_S = 1800


def instructions(n: int) -> int:
    """Instructions (cachegrind's I refs) of one process that imports the simulator and runs ``n``."""
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        "-c",
        RUN.format(here=str(HERE), n=n),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"valgrind did not finish the run of {n} within {TIMEOUT_S} s") from None
    found = I_REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run of {n} failed (exit {done.returncode}): {done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--large", type=int, default=250)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    if not 0 < args.small < args.large:
        raise SystemExit("--small must be positive and below --large")
    small, large = instructions(args.small), instructions(args.large)
    per_object = (large - small) / (args.large - args.small)
    print(f"N={args.small}: {small:,} instructions; N={args.large}: {large:,}")
    print(f"per InferenceService: {per_object / 1e6:.2f} M instructions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
