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
        "operator:3000": {**sim_result(3000, 30.0), "gc": "operator", **TAKEN},
        "operator:10000": {**sim_result(10000, 61.0), "gc": "operator", **TAKEN, "commit": "def5678", "load": 1.25},
        "default:1000": {**sim_result(1000, 9.0), "gc": "default", **TAKEN},
    }
    text = figures.render("sim", {"rows": rows})
    assert (
        "(operator's GC): CPU per object at 10,000 is 1.22x that at 1,000 (load average 0.5 and 1.2 at their "
        "starts; measured at different commits, abc1234 and def5678): not met." in text
    )
    assert "CPython's GC)" not in text  # one size only: nothing to compare
    at_bound = {
        "operator:1000": {**sim_result(1000, 5.0), "gc": "operator", **TAKEN},
        "operator:10000": {**sim_result(10000, 60.0, rss=600.0), "gc": "operator", **TAKEN},
    }
    text = figures.render("sim", {"rows": at_bound})
    assert "1.20x that at 1,000 (load average 0.5 and 0.5 at their starts): **met**." in text
    assert "≤ 600 MiB: **met**" in text


@pytest.mark.parametrize(
    ("change", "in_runs", "verdict"),
    [
        ({"writes_per_object": 3.01}, 1, "≤ 3 mutating requests per object: 3.010 at most, not met"),
        # One request more over 1,000 objects must not read as 3.00, "not met".
        ({"writes_per_object": 3.001}, 1, "≤ 3 mutating requests per object: 3.001 at most, not met"),
        ({"restart_writes_per_object": 0.001}, 1, "0 over a restart and resyncs: 0.001 at most, not met"),
        ({"operator_cpu_ms_per_object": 5.1}, 1, "operator CPU ≤ 5 ms per object: 4.0 ms, **met**"),
        ({"operator_cpu_ms_per_object": 5.1}, 2, "operator CPU ≤ 5 ms per object: 5.1 ms, not met"),
        ({"steady_p99_ms": 100.5}, 2, "steady-state p99 ≤ 100 ms: 100.5 ms, not met"),
        ({"burst_p99_ms": 10_000.0}, 3, "steady-state p99 ≤ 100 ms: 40.0 ms, **met**"),  # the burst is not the goal
        ({"peak_rss_mib": 80.0}, 3, "RSS ≤ 80 MiB (peak while converging): 80.0 MiB, **met**"),
        ({"peak_rss_mib": 80.4}, 2, "RSS ≤ 80 MiB (peak while converging): 80.4 MiB, not met"),
    ],
)
def test_each_operator_goal_is_judged_on_its_own_figure(
    figures: ModuleType, change: dict[str, float], in_runs: int, verdict: str
) -> None:
    """Counts must hold in every run; times, CPU and memory are judged on the median of the runs."""
    runs = [{**cluster_run(1000), **(change if i < in_runs else {})} for i in range(3)]
    record = {"by_n": {"1000": {"runs": runs, "setup": "4 workers", **TAKEN}}}
    assert verdict in figures.render("cluster", record)


def test_a_run_missing_a_figure_or_with_one_not_finite_is_not_recorded(figures: ModuleType, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(EMPTY)
    partial = {k: v for k, v in cluster_run(200).items() if k != "steady_p99_ms"}
    with pytest.raises(ValueError, match="lack steady_p99_ms"):
        figures.record_cluster(readme, [partial], setup="4 workers", taken=TAKEN)
    with pytest.raises(ValueError, match="operator_cpu_ms_per_object=nan"):
        figures.record_cluster(
            readme, [{**cluster_run(200), "operator_cpu_ms_per_object": float("nan")}], setup="", taken=TAKEN
        )
    with pytest.raises(ValueError, match="no runs"):
        figures.record_cluster(readme, [], setup="", taken=TAKEN)
    with pytest.raises(ValueError, match="several sizes"):
        figures.record_cluster(readme, [cluster_run(200), cluster_run(1000)], setup="", taken=TAKEN)
    assert readme.read_text() == EMPTY


def test_the_cluster_benchmark_reports_the_figures_the_renderer_reads(figures: ModuleType) -> None:
    """bench/cluster.py's measure() returns a dict literal: its keys are the renderer's."""
    import ast

    tree = ast.parse((ROOT / "bench" / "cluster.py").read_text())
    measure = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "measure")
    returned = [n.value for n in ast.walk(measure) if isinstance(n, ast.Return) and isinstance(n.value, ast.Dict)]
    assert len(returned) == 1
    keys = {key.value for key in returned[0].keys if isinstance(key, ast.Constant)}
    assert keys == set(figures.CLUSTER_FIGURES)


def test_a_change_of_the_renderer_needs_no_benchmark_run(figures: ModuleType, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(EMPTY)
    figures.record_cluster(readme, [cluster_run(200)], setup="4 workers", taken=TAKEN)
    written = readme.read_text()
    readme.write_text(written.replace("| 200 | 1 |", "| 200 | 7 |"))  # a table out of date
    assert figures.rerender(readme) == ["cluster"]
    assert readme.read_text() == written


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
    assert "RSS ≤ 80 MiB (peak while converging): 75.0 MiB, **met**" in at_1000
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
    with pytest.raises(ValueError, match="must come after"):
        figures.write_block("<!-- /figures:sim -->\n<!-- figures:sim -->\n", "sim", {"rows": {}})
    with pytest.raises(ValueError, match="no end marker"):
        figures.read_block("<!-- figures:sim -->\n<!-- record {} -->\n", "sim")
    assert figures.read_block("# nothing here\n", "sim") is None
