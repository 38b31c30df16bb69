"""The README's current performance figures are the benchmarks' own output.

Covers: bench/figures.py. Each block of README.md (the simulator's, the real operator's) holds
the record a benchmark wrote with ``--readme`` and the table rendered from it: a table edited
by hand, or a renderer changed without the blocks rewritten, fails here. The renderer's own
behaviour on small records: a goal says "met" exactly when its figure is within it, the
simulator's rows are merged per N and GC setting, the cluster's runs are replaced per N, and a
record survives what an HTML comment cannot hold.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.shared.benchscripts import load_bench

ROOT = Path(__file__).resolve().parents[2]
TAKEN = {"date": "2026-01-02", "commit": "abc1234", "python": "3.11.7", "cores": 2, "load": 0.5}
EMPTY = (
    "# x\n\n<!-- figures:sim -->\n<!-- /figures:sim -->\n\ntext\n\n"
    "<!-- figures:cluster -->\n<!-- /figures:cluster -->\n"
)


@pytest.fixture(scope="module")
def figures() -> ModuleType:
    return load_bench("figures")


def sim_result(n: int, cpu: float, rss: float = 100.0) -> dict[str, Any]:
    return {
        "n": n,
        "cpu_s": cpu,
        "cpu_s_runs": [cpu],
        "cpu_ms_per_object": 1000 * cpu / n,
        "writes": 23 * n,
        "peak_rss_mib": rss,
    }


def cluster_run(n: int, *, floor: float = 10.0, converge: float = 11.0, rss: float = 70.0) -> dict[str, Any]:
    return {
        "n": n,
        "floor_s": floor,
        "converge_s": converge,
        "operator_cpu_ms_per_object": 4.0,
        "writes_per_object": 3.0,
        "restart_writes_per_object": 0.0,
        "burst_p99_ms": 900.0,
        "steady_p50_ms": 1.0,
        "steady_p99_ms": 40.0,
        "peak_rss_mib": rss,
        "restart_rss_mib": rss + 10,
    }


@pytest.mark.parametrize("name", ["sim", "cluster"])
def test_each_readme_block_is_what_its_record_renders_to(figures: ModuleType, name: str) -> None:
    found = figures.read_block((ROOT / "README.md").read_text(), name)
    assert found is not None, f"README.md's {name!r} figures were never written: run the benchmark with --readme"
    record, text = found
    assert text == figures.render(name, record), (
        f"README.md's {name!r} table is not what its record renders to: rewrite it with the benchmark's --readme"
    )


def test_simulator_rows_merge_per_size_and_gc_setting(figures: ModuleType, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(EMPTY)
    figures.record_sim(readme, [sim_result(1000, 5.0), sim_result(10000, 60.0)], gc="operator", taken=TAKEN)
    figures.record_sim(readme, [sim_result(1000, 6.0)], gc="default", taken=TAKEN)
    figures.record_sim(readme, [sim_result(1000, 2.5)], gc="operator", taken=TAKEN)  # replaces only its row
    record, text = figures.read_block(readme.read_text(), "sim")
    assert {key: row["cpu_s"] for key, row in record["rows"].items()} == {
        "operator:1000": 2.5,
        "operator:10000": 60.0,
        "default:1000": 6.0,
    }
    rows = [line for line in text.splitlines() if line.startswith("| 1")]
    assert [row.split(" | ")[:3] for row in rows] == [
        ["| 1,000", "operator's", "2.50 (2.50)"],
        ["| 10,000", "operator's", "60.00 (60.00)"],
        ["| 1,000", "CPython's", "6.00 (6.00)"],
    ]
    assert readme.read_text().endswith("<!-- /figures:cluster -->\n") and "\ntext\n" in readme.read_text()


@pytest.mark.parametrize(("cpu", "verdict"), [(3.0, "**met**"), (3.01, "not met")])
def test_a_simulator_goal_is_met_exactly_when_its_figure_is_within_it(
    figures: ModuleType, cpu: float, verdict: str
) -> None:
    text = figures.render("sim", {"rows": {"operator:1000": {**sim_result(1000, cpu), "gc": "operator", **TAKEN}}})
    assert f"≤ 3 s: {verdict} |" in text


def test_linearity_compares_the_smallest_and_largest_size_of_one_gc_setting(figures: ModuleType) -> None:
    rows = {
        "operator:1000": {**sim_result(1000, 5.0), "gc": "operator", **TAKEN},
        "operator:10000": {**sim_result(10000, 61.0), "gc": "operator", **TAKEN},
        "default:1000": {**sim_result(1000, 9.0), "gc": "default", **TAKEN},
    }
    text = figures.render("sim", {"rows": rows})
    assert "(operator's GC): CPU per object at 10,000 is 1.22x that at 1,000: not met." in text
    assert "CPython's GC)" not in text  # one size only: nothing to compare


def test_cluster_runs_are_replaced_per_size_and_judged_by_their_medians(figures: ModuleType, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(EMPTY)
    slow = [cluster_run(1000, converge=20.0)] * 3
    figures.record_cluster(readme, slow, setup="4 workers", taken=TAKEN)
    runs = [cluster_run(1000, converge=c, rss=r) for c, r in ((11.0, 90.0), (11.5, 70.0), (30.0, 75.0))]
    figures.record_cluster(readme, runs, setup="4 workers", taken=TAKEN)
    figures.record_cluster(readme, [cluster_run(200)], setup="4 workers", taken=TAKEN)
    record, text = figures.read_block(readme.read_text(), "cluster")
    assert sorted(record["by_n"]) == ["1000", "200"] and len(record["by_n"]["1000"]["runs"]) == 3
    at_1000 = next(line for line in text.splitlines() if line.startswith("- At 1,000"))
    assert "convergence ≤ 1.15x the floor: 1.15x, **met**" in at_1000  # the median run, not the slow one
    assert "RSS ≤ 80 MiB: 75 MiB, **met**" in at_1000
    assert "RSS ≤" not in next(line for line in text.splitlines() if line.startswith("- At 200"))
    assert "| 1,000 | 3 | 10.0 | 11.5 (11.0-30.0) | 1.15 (1.10-3.00)x |" in text


def test_a_record_with_double_dashes_survives_the_html_comment(figures: ModuleType, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(EMPTY)
    taken = {**TAKEN, "commit": "abc1234 --> <!-- x"}
    figures.record_cluster(readme, [cluster_run(200)], setup="--workers 4", taken=taken)
    text = readme.read_text()
    comment = next(line for line in text.splitlines() if line.startswith("<!-- record "))
    assert "--" not in comment[len("<!-- record ") : -len(" -->")]
    record, _ = figures.read_block(text, "cluster")
    assert record["by_n"]["200"]["commit"] == "abc1234 --> <!-- x"
    assert record["by_n"]["200"]["setup"] == "--workers 4"


def test_a_missing_block_is_named(figures: ModuleType) -> None:
    with pytest.raises(ValueError, match="no block 'sim'"):
        figures.write_block("# nothing here\n", "sim", {"rows": {}})
    with pytest.raises(ValueError, match="no end marker"):
        figures.read_block("<!-- figures:sim -->\n<!-- record {} -->\n", "sim")
    assert figures.read_block("# nothing here\n", "sim") is None
