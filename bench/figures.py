"""The README's current performance figures, written by the benchmarks that measured them.

Each benchmark owns one block of README.md, between ``<!-- figures:NAME -->`` and
``<!-- /figures:NAME -->``. The block's first line is a comment holding the record the table
was rendered from (JSON); the rest is :func:`render` of that record: the medians and ranges,
and each goal with the figure it is judged on and whether it is met. ``bench/sim.py --readme``
and ``bench/cluster.py --readme`` rewrite their block; tests/unit/test_readme_figures.py renders
every block again from its record, so a table edited by hand, or left behind by a change of
this module, fails the tests; ``python bench/figures.py [README]`` renders every block again
from its record, with no benchmark run. The prose around the blocks (why a goal is not met)
stays the authors' to keep true.

Blocks:
- ``sim``: ``bench/sim.py`` per N and GC setting (its rows are merged: a run at 1,000 with
  CPython's GC replaces only that row);
- ``cluster``: ``bench/cluster.py`` per N, every run of the last ``--repeat``.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["read_block", "record_cluster", "record_sim", "render", "write_block"]

Record = dict[str, Any]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

SIM_GOALS = {1000: 3.0, 10000: 20.0}
"""CPU seconds for N InferenceServices with nodes, pods and ReplicaSets modelled (twice the
goals of the model without them: 1.5 s and 10 s)."""
SIM_MEMORY_GOAL = {10000: 600.0}
"""Peak RSS in MiB (twice 300 MiB)."""
SIM_LINEAR = 1.2
"""CPU per object at the largest N over the same at the smallest, same GC setting."""

CLUSTER_FIGURES = (
    "n",
    "floor_s",
    "converge_s",
    "operator_cpu_ms_per_object",
    "writes_per_object",
    "restart_writes_per_object",
    "burst_p99_ms",
    "steady_p50_ms",
    "steady_p99_ms",
    "peak_rss_mib",
    "restart_rss_mib",
)
"""What each run of ``bench/cluster.py`` reports (its ``measure()``), all finite numbers."""

CLUSTER_RATIO_GOAL = 1.15
CLUSTER_WRITES_GOAL = 3.0
CLUSTER_CPU_GOAL = 5.0
CLUSTER_RSS_GOAL = {1000: 80.0}
CLUSTER_P99_GOAL = 100.0


def _split(text: str, name: str) -> tuple[str, str, str] | None:
    """``text`` around block ``name``: before its begin marker (included), its body, from its
    end marker on (None: no begin marker)."""
    begin, end = f"<!-- figures:{name} -->", f"<!-- /figures:{name} -->"
    if begin not in text:
        return None
    before, rest = text.split(begin, 1)
    if end not in rest:
        raise ValueError(f"README.md's block {name!r} has no end marker: {end} must come after {begin}")
    body, after = rest.split(end, 1)
    return before + begin, body, end + after


def read_block(text: str, name: str) -> tuple[Record, str] | None:
    """The record and the rendered text of block ``name`` in ``text`` (None: no such block, or
    an empty one)."""
    parts = _split(text, name)
    body = parts[1].strip("\n") if parts else ""
    if not body:
        return None  # no block, or not measured yet
    first, _, rendered = body.partition("\n")
    if not (first.startswith("<!-- record ") and first.endswith(" -->")):
        raise ValueError(f"README block {name!r} does not start with its record comment")
    return json.loads(first[len("<!-- record ") : -len(" -->")]), rendered


def write_block(text: str, name: str, record: Record) -> str:
    """``text`` with block ``name`` rendered from ``record`` (the block must be there)."""
    parts = _split(text, name)
    if parts is None:
        raise ValueError(f"README.md has no block {name!r}: add <!-- figures:{name} --> and its end marker")
    # An HTML comment cannot hold "--": the second dash of each pair is written as a JSON escape
    # (a pair can only be inside a JSON string).
    comment = "<!-- record " + json.dumps(record, sort_keys=True, allow_nan=False).replace("--", "-\\u002d") + " -->"
    return f"{parts[0]}\n{comment}\n{render(name, record)}\n{parts[2]}"


def render(name: str, record: Record) -> str:
    return _RENDERERS[name](record)


# --- provenance -------------------------------------------------------------------------------------


def provenance() -> Record:
    """When, on what and at which commit the figures were taken."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(  # README.md aside: the benchmarks write it themselves
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!README.md"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "unknown", ""
    return {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "commit": commit + (" with uncommitted changes" if dirty else ""),
        "python": sys.version.split()[0],
        "cores": os.cpu_count() or 0,
        "load": round(os.getloadavg()[0], 2),
    }


def _update(readme: Path, name: str, change: Callable[[Record], Record]) -> None:
    text = readme.read_text()
    found = read_block(text, name)
    readme.write_text(write_block(text, name, change(found[0] if found else {})))


# --- the simulator ----------------------------------------------------------------------------------


def record_sim(readme: Path, results: Sequence[Mapping[str, Any]], *, gc: str, taken: Record) -> None:
    """Merge ``bench/sim.py``'s results (one per N, medians of its runs) under GC setting ``gc``
    ("operator" or "default") into the ``sim`` block of ``readme``; ``taken``: the
    :func:`provenance` at the start of the runs."""

    def change(record: Record) -> Record:
        rows = dict(record.get("rows", {}))
        for result in results:
            rows[f"{gc}:{int(result['n'])}"] = {**dict(result), "gc": gc, **taken}
        return {"rows": rows}

    _update(readme, "sim", change)


def _sim_rows(record: Record) -> list[Record]:
    return sorted(record.get("rows", {}).values(), key=lambda r: (r["gc"] != "operator", r["n"]))


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "not met"


def _render_sim(record: Record) -> str:
    rows = _sim_rows(record)
    lines = [
        "| N | GC | CPU s (median; runs) | CPU ms per object | per-object/ref | writes | peak RSS | goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        runs = ", ".join(f"{c:.2f}" for c in r.get("cpu_s_runs", [r["cpu_s"]]))
        ref = f"{r['per_object_over_reference']:.4f}" if "per_object_over_reference" in r else "—"
        goals = []
        if r["n"] in SIM_GOALS:
            goals.append(f"≤ {SIM_GOALS[r['n']]:g} s: {_verdict(r['cpu_s'] <= SIM_GOALS[r['n']])}")
        if r["n"] in SIM_MEMORY_GOAL:
            limit = SIM_MEMORY_GOAL[r["n"]]
            goals.append(f"≤ {limit:g} MiB: {_verdict(r['peak_rss_mib'] <= limit)}")
        gc_name = "operator's" if r["gc"] == "operator" else "CPython's"
        lines.append(
            f"| {r['n']:,} | {gc_name} | {r['cpu_s']:.2f} ({runs}) | {r['cpu_ms_per_object']:.2f} | {ref} "
            f"| {r['writes']:,} | {r['peak_rss_mib']:.0f} MiB | {'; '.join(goals) or '—'} |"
        )
    lines.append("")
    for gc in ("operator", "default"):
        mine = [r for r in rows if r["gc"] == gc]
        if len(mine) >= 2:
            small, large = mine[0], mine[-1]
            growth = large["cpu_ms_per_object"] / small["cpu_ms_per_object"]
            apart = f"load average {small['load']:.1f} and {large['load']:.1f} at their starts"
            if small["commit"] != large["commit"]:
                apart += f"; measured at different commits, {small['commit']} and {large['commit']}"
            lines.append(
                f"- Linear within {SIM_LINEAR:g}x ({'operator' if gc == 'operator' else 'CPython'}'s GC): "
                f"CPU per object at {large['n']:,} is {growth:.2f}x that at {small['n']:,} ({apart}): "
                f"{_verdict(growth <= SIM_LINEAR)}."
            )
    lines.extend(_provenance_lines(rows, "`bench/sim.py --repeat R --reference --readme N …`"))
    return "\n".join(lines)


def _provenance_lines(rows: Sequence[Record], command: str) -> list[str]:
    seen = sorted({(r["date"], r["commit"], r["python"], r["cores"]) for r in rows})
    loads = [r["load"] for r in rows]
    taken = "; ".join(f"{date} at {commit} (Python {python}, {cores} cores)" for date, commit, python, cores in seen)
    load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "—"
    return [f"- Measured by {command}: {taken}; load average at the start {load}."]


# --- the real operator ------------------------------------------------------------------------------


def record_cluster(readme: Path, runs: Sequence[Mapping[str, Any]], *, setup: str, taken: Record) -> None:
    """Put ``bench/cluster.py``'s runs (one N) into the ``cluster`` block of ``readme``; ``setup``
    says how they were made, ``taken`` is the :func:`provenance` at their start."""

    if not runs:
        raise ValueError("no runs to record")
    for run in runs:
        _check_figures(run)
    if len({run["n"] for run in runs}) != 1:
        raise ValueError(f"runs of several sizes at once: {sorted({run['n'] for run in runs})}")

    def change(record: Record) -> Record:
        by_n = dict(record.get("by_n", {}))
        n = int(runs[0]["n"])
        by_n[str(n)] = {"runs": [dict(r) for r in runs], "setup": setup, **taken}
        return {"by_n": by_n}

    _update(readme, "cluster", change)


def _check_figures(run: Mapping[str, Any]) -> None:
    """:class:`ValueError` naming what is missing or not a finite number in one run's figures."""
    missing = [key for key in CLUSTER_FIGURES if key not in run]
    if missing:
        raise ValueError(f"a run's figures lack {', '.join(missing)}")
    bad = [key for key in CLUSTER_FIGURES if not isinstance(run[key], int | float) or not math.isfinite(run[key])]
    if bad:
        raise ValueError(f"a run's figures are not finite numbers: {', '.join(f'{k}={run[k]!r}' for k in bad)}")


def _spread(values: Sequence[float], form: str) -> str:
    median, low, high = (format(v, form) for v in (statistics.median(values), min(values), max(values)))
    return median if low == high else f"{median} ({low}-{high})"


def _per_object_form(n: int) -> str:
    """How a count per object over ``n`` objects is shown: with the decimals one request more
    in all of them needs (3.001 at 1,000), so a figure past its goal never reads as on it."""
    return f".{max(2, math.ceil(math.log10(max(n, 2))))}f"


def _render_cluster(record: Record) -> str:
    groups = sorted(record.get("by_n", {}).values(), key=lambda g: g["runs"][0]["n"])
    lines = [
        "| N | runs | raw floor s | all Ready s | ratio to the floor | mutating requests / object | "
        "over a restart and 2 resyncs | operator CPU ms / object | steady-state p99 ms | peak RSS MiB | "
        "RSS after the restart MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for group in groups:
        runs = group["runs"]
        n = runs[0]["n"]

        def col(key: str, runs: list[Record] = runs) -> list[float]:
            return [r[key] for r in runs]

        ratios = [r["converge_s"] / r["floor_s"] for r in runs]
        count = _per_object_form(n)
        lines.append(
            f"| {n:,} | {len(runs)} | {_spread(col('floor_s'), '.1f')} | {_spread(col('converge_s'), '.1f')} "
            f"| {_spread(ratios, '.2f')}x | {_spread(col('writes_per_object'), count)} "
            f"| {_spread(col('restart_writes_per_object'), count)} "
            f"| {_spread(col('operator_cpu_ms_per_object'), '.1f')} | {_spread(col('steady_p99_ms'), '.1f')} "
            f"| {_spread(col('peak_rss_mib'), '.0f')} | {_spread(col('restart_rss_mib'), '.0f')} |"
        )
        median = statistics.median
        goals = [  # (the goal, the figure judged, its bound, how it is shown)
            (f"convergence ≤ {CLUSTER_RATIO_GOAL:g}x the floor", median(ratios), CLUSTER_RATIO_GOAL, "{:.2f}x"),
            (
                f"≤ {CLUSTER_WRITES_GOAL:g} mutating requests per object",
                max(col("writes_per_object")),
                CLUSTER_WRITES_GOAL,
                f"{{:{count}}} at most",
            ),
            ("0 over a restart and resyncs", max(col("restart_writes_per_object")), 0.0, f"{{:{count}}} at most"),
            (
                f"operator CPU ≤ {CLUSTER_CPU_GOAL:g} ms per object",
                median(col("operator_cpu_ms_per_object")),
                CLUSTER_CPU_GOAL,
                "{:.1f} ms",
            ),
            (
                f"steady-state p99 ≤ {CLUSTER_P99_GOAL:g} ms",
                median(col("steady_p99_ms")),
                CLUSTER_P99_GOAL,
                "{:.1f} ms",
            ),
        ]
        if n in CLUSTER_RSS_GOAL:
            limit = CLUSTER_RSS_GOAL[n]
            goals.append(
                (f"RSS ≤ {limit:g} MiB (peak while converging)", median(col("peak_rss_mib")), limit, "{:.1f} MiB")
            )
        verdicts.append(
            f"- At {n:,} ({group['setup']}; requests in the worst run, the rest the median of the runs): "
            + "; ".join(
                f"{goal}: {shown.format(value)}, {_verdict(value <= bound)}" for goal, value, bound, shown in goals
            )
            + "."
        )
    lines.append("")
    lines.extend(verdicts)
    lines.extend(_provenance_lines(groups, "`bench/cluster.py --count N --repeat R --readme`"))
    return "\n".join(lines)


_RENDERERS: dict[str, Callable[[Record], str]] = {"sim": _render_sim, "cluster": _render_cluster}


def rerender(readme: Path) -> list[str]:
    """Render every block of ``readme`` again from its own record (after a change of this
    module: no benchmark needs to run again); returns the names of the blocks rewritten."""
    text = readme.read_text()
    done = []
    for name in _RENDERERS:
        found = read_block(text, name)
        if found is not None:
            text = write_block(text, name, found[0])
            done.append(name)
    readme.write_text(text)
    return done


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else README
    print(f"{target}: re-rendered " + (", ".join(rerender(target)) or "nothing (no block has a record)"))
