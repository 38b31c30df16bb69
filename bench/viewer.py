#!/usr/bin/env python3
"""Benchmark (not a test): the trace viewer's page sizes, and how it responds at 1,000 objects.

For each of the four demo scenarios and for a 1,000-object simulator run (bench/sim.py's, with
the flight recorder on): the trace's size and the page's (``inference-operator trace view``,
everything inline). Then, in headless Chromium (tests/browser.py, DevTools over a pipe), the
1,000-object page:

- load: navigation start to the end of the first render (``performance.now()`` in the page, so
  parsing the embedded JSON and building the indexes and checkpoints are included);
- → key press: time inside the keydown handler (``performance.now()`` around it: the whole
  synchronous re-render), and key-down to the second animation frame after it (the frame
  showing the step has been produced), for N presses from the middle of the trace;
- a jump anywhere (the scrubber's path): random positions, replayed from the nearest checkpoint;
- the same → presses with the filter on one object.

Usage: python bench/viewer.py [--objects 1000] [--presses 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import sim  # noqa: E402 - bench/sim.py

from inference_operator.cli import main as cli  # noqa: E402
from inference_operator.trace.view import write_page  # noqa: E402
from tests.browser import Page, chromium  # noqa: E402

SCENARIOS = ("create", "scale-upgrade", "delete", "drift")
NEXT_FRAME = (
    "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame("
    "() => r(performance.now() - window.traceViewer.lastKeyAt))))"
)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def kib(n: int) -> str:
    return f"{n / 1024:,.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):,.1f} MiB"


def sizes(work: Path, objects: int) -> list[tuple[str, int, int, int, float]]:
    rows = []
    for scenario in SCENARIOS:
        trace = work / f"{scenario}.jsonl"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            cli(["demo", "--scenario", scenario, "--trace", str(trace)])
        start = time.perf_counter()
        page = write_page(trace, work / f"{scenario}.html")
        took = time.perf_counter() - start
        records = sum(1 for _ in trace.open())
        rows.append((scenario, records, trace.stat().st_size, page.stat().st_size, took))
    with contextlib.redirect_stdout(io.StringIO()):
        sim.run(objects, str(work / "objects"))
    trace = work / f"objects.{objects}.jsonl"
    start = time.perf_counter()
    page = write_page(trace, work / "objects.html")
    took = time.perf_counter() - start
    records = sum(1 for _ in trace.open())
    rows.append((f"{objects} objects", records, trace.stat().st_size, page.stat().st_size, took))
    return rows


def presses(page: Page, n: int) -> tuple[list[float], list[float]]:
    page.eval("window.traceViewer.keyTimes = []")
    frames = []
    for _ in range(n):
        page.press("ArrowRight")
        frames.append(float(page.eval(NEXT_FRAME)))
    handler = [float(x) for x in page.eval("window.traceViewer.keyTimes")]
    return handler, frames


def responsiveness(html: Path, n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with chromium() as browser:
        page = browser.new_page()
        start = time.perf_counter()
        page.open(html.resolve().as_uri(), timeout=120)
        page.wait_for("document.body.dataset.ready === 'true'", timeout=120)
        out["load_wall_ms"] = (time.perf_counter() - start) * 1000
        out["first_render_ms"] = float(page.eval("window.traceViewer.firstRenderMs"))
        out["steps"] = int(page.eval("window.traceViewer.steps()"))
        out["dom_nodes"] = int(page.eval("document.getElementsByTagName('*').length"))
        page.eval(f"window.traceViewer.go({out['steps'] // 2})")
        page.eval("document.body.focus()")
        out["handler"], out["frame"] = presses(page, n)
        rng = random.Random(1)
        jumps = []
        for _ in range(50):
            target = rng.randrange(out["steps"])
            jumps.append(
                float(
                    page.eval(
                        f"(() => {{ const t = performance.now(); window.traceViewer.go({target});"
                        " return performance.now() - t; })()"
                    )
                )
            )
        out["jump"] = jumps
        key = page.eval("document.querySelectorAll('#object-filter option')[500].value")
        page.eval(f"window.traceViewer.filter({key!r})")
        page.eval("window.traceViewer.go(0)")
        out["filtered_steps"] = int(page.eval("window.traceViewer.steps()"))
        out["filtered_handler"], _ = presses(page, min(n, out["filtered_steps"] - 1))
        out["errors"] = page.errors
        out["requests"] = page.requests
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--presses", type=int, default=200)
    parser.add_argument("--keep", metavar="DIR", help="write the traces and pages here (default: a temporary dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(f"{'trace':<16} {'records':>8} {'trace size':>12} {'page size':>12} {'trace view s':>13}")
        rows = sizes(work, args.objects)
        for name, records, trace_bytes, page_bytes, took in rows:
            print(f"{name:<16} {records:>8} {kib(trace_bytes):>12} {kib(page_bytes):>12} {took:>13.2f}")
        r = responsiveness(work / "objects.html", args.presses)
    print()
    print(f"headless Chromium, {args.objects} objects ({r['steps']} steps), {r['dom_nodes']} DOM elements after load")
    print(
        f"  load to first render (in page): {r['first_render_ms']:.0f} ms  (navigate to ready, wall: "
        f"{r['load_wall_ms']:.0f} ms)"
    )

    def line(label: str, values: list[float]) -> None:
        print(
            f"  {label:<44} p50 {statistics.median(values):6.2f} ms   p99 {pct(values, 99):6.2f} ms   "
            f"max {max(values):6.2f} ms  (n={len(values)})"
        )

    line("→ key: keydown handler (re-render)", r["handler"])
    line("→ key: keydown to the 2nd frame after it", r["frame"])
    line("jump to a random step (scrubber path)", r["jump"])
    line(f"→ key, filtered to one object ({r['filtered_steps']} steps)", r["filtered_handler"])
    print(f"  console errors: {len(r['errors'])}, requests: {r['requests']}")
    return 1 if r["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
