"""The offline benchmarks still run to the end on a few objects.

Covers: bench/sim.py (pods always modelled; its old ``--cluster`` flag still accepted),
bench/degraded.py (every mode), bench/rollout.py (every strategy on every pool) and
bench/cache_memory.py (every kind the operator caches) and bench/cache_events.py finish with
exit 0 and print their figures; bench/rollout_cluster.py, which needs a control plane, is
checked by its ``--dry-run``: each case's pool has exactly the GPUs of the simulator's, is kept
for that case alone (labelled and tainted), and its InferenceService selects and tolerates it.
They are not run by anything else, so a change to the simulator's semantics (objects in a
missing namespace refused, as NamespaceLifecycle does) once left two of them failing at their
first apply, unnoticed. Figures are not asserted: benchmarks
measure, tests do not time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.shared.benchscripts import load_bench

ROOT = Path(__file__).resolve().parents[2]


def run_bench(*args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_simulator_benchmark_converges_a_few_objects_in_several_namespaces() -> None:
    out = run_bench("bench/sim.py", "12")
    assert "12" in out


def test_the_simulator_benchmark_still_takes_its_old_cluster_flag() -> None:
    out = run_bench("bench/sim.py", "--cluster", "12")
    assert "12" in out


@pytest.mark.parametrize("mode", ["degraded", "lb-outage"])
def test_the_degraded_benchmark_runs_each_kind_of_trouble_to_its_report(mode: str) -> None:
    out = run_bench("bench/degraded.py", "12", "--window", "61", "--mode", mode)
    assert "API req/s" in out


def test_the_rollout_benchmark_reports_every_strategy_on_every_pool() -> None:
    out = run_bench("bench/rollout.py", "--replicas", "4", "--horizon", "300")
    rows = [line.split() for line in out.splitlines()[2:]]
    assert [(r[0], r[1]) for r in rows] == [(s, t) for s in ("0", "2", "8") for t in ("Surge", "Replace", "Auto")]
    assert all("never" not in " ".join(r) for r in rows if r[1] != "Surge")  # Replace and Auto always finish


def test_the_cache_memory_benchmark_measures_every_kind_the_operator_caches() -> None:
    out = run_bench("bench/cache_memory.py", "6", "--raw")
    kinds = [line.split(":")[0].strip() for line in out.splitlines()[1:-1]]
    assert kinds == ["InferenceService", "Deployment", "Service", "Pod", "Node"]
    assert out.splitlines()[-1].startswith("cache: ")


def test_the_cache_events_benchmark_replays_every_watched_kinds_events_and_a_list() -> None:
    out = run_bench("bench/cache_events.py", "6", "--repeat", "1").splitlines()
    assert out[0].startswith("N=6: ") and "InferenceService " in out[0] and "Pod " in out[0]
    assert out[1].startswith("stored: ") and " µs per event" in out[1]
    assert out[2].startswith("a LIST of all ") and out[2].endswith(" µs per object")


def test_the_cluster_rollout_benchmark_gives_each_case_a_pool_of_its_own_with_the_simulators_gpus() -> None:
    docs = list(yaml.safe_load_all(run_bench("bench/rollout_cluster.py", "--dry-run")))
    services = [d for d in docs if d["kind"] == "InferenceService"]
    cases = [(s["metadata"]["namespace"], (s["spec"].get("rollout") or {}).get("strategy", "Surge")) for s in services]
    assert [strategy for _, strategy in cases] == ["Surge", "Replace", "Auto"] * 3
    assert len({namespace for namespace, _ in cases}) == 9
    nodes = [d for d in docs if d["kind"] == "Node"]
    assert len({n["status"]["addresses"][0]["address"] for n in nodes}) == len(nodes)  # no two fake nodes share an IP
    for service, spare in zip(services, [0] * 3 + [2] * 3 + [8] * 3, strict=True):
        namespace, spec = service["metadata"]["namespace"], service["spec"]
        assert (spec["replicas"], spec["gpu"]) == (16, 1)
        pool = [n for n in nodes if n["metadata"]["labels"].items() >= spec["nodeSelector"].items()]
        assert sorted(int(n["status"]["allocatable"]["nvidia.com/gpu"]) for n in pool) == sorted(
            [8, 8] + [spare] * bool(spare)
        )
        for node in pool:
            assert node["metadata"]["name"].startswith(f"{namespace}-")
            assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
            for taint in node["spec"]["taints"]:
                assert any(
                    t["key"] == taint["key"] and t["value"] == taint["value"] and t["effect"] == taint["effect"]
                    for t in spec["tolerations"]
                )


def test_the_simulator_benchmarks_peak_memory_is_the_runs_not_its_ready_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check once listed every InferenceService at once after the run and took the peak RSS
    after it: at 10,000 a quarter of the reported peak was the check's copies."""
    bench: Any = load_bench("sim")
    seen: list[str] = []
    phase = bench._phase
    monkeypatch.setattr(bench, "peak_rss_mib", lambda: seen.append("peak") or 1.0)
    monkeypatch.setattr(bench, "_phase", lambda sim, ns, name: seen.append("check") or phase(sim, ns, name))

    figures = bench.run(4)

    assert figures["peak_rss_mib"] == 1.0
    assert seen == ["peak", "check", "check", "check", "check"]  # one object at a time, after the peak


def test_the_simulator_benchmark_names_an_object_that_is_not_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    bench: Any = load_bench("sim")
    phase = bench._phase
    monkeypatch.setattr(bench, "_phase", lambda sim, ns, name: "" if name == "svc-00001" else phase(sim, ns, name))

    with pytest.raises(SystemExit, match="only 3 of 4 InferenceServices became Ready"):
        bench.run(4)


class _FakePlane:
    bin_dir = None

    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


class _FakeRegistry:
    def __init__(self, *_: Any, **__: Any) -> None:
        self.terminated = False

    def terminate(self) -> None:
        self.terminated = True

    def wait(self, _timeout: float) -> int:
        return 0


@pytest.mark.parametrize("keep", [False, True])
def test_the_cluster_benchmark_stops_what_it_started_and_removes_its_work_directory_unless_kept(
    monkeypatch: pytest.MonkeyPatch, keep: bool
) -> None:
    """Its work directory (350 MB a run at 1,000: the audit log) was left in /tmp after every
    run, and a registry that did not start left the control plane running."""
    from argparse import Namespace

    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # its helpers (promtext, procstats), as when run
    bench = load_bench("cluster")
    plane, registries, works = _FakePlane(), [], []

    def start_control_plane(path: Path, *, nodes: int) -> _FakePlane:
        works.append(path.parent)
        return plane

    def never_up(*_: Any, **__: Any) -> None:
        raise TimeoutError("the load balancer registry to start: not within 30 s")

    monkeypatch.setattr(bench.local, "start_control_plane", start_control_plane)
    monkeypatch.setattr(bench, "free_port", lambda: 1)
    monkeypatch.setattr(bench.subprocess, "Popen", lambda *a, **k: registries.append(_FakeRegistry()) or registries[-1])
    monkeypatch.setattr(bench, "wait_until", never_up)
    with pytest.raises(TimeoutError):
        bench.run_once(Namespace(count=2, keep=keep))
    assert plane.stopped and [r.terminated for r in registries] == [True]
    assert works[0].exists() is keep
    if keep:
        import shutil

        shutil.rmtree(works[0])


@pytest.mark.parametrize("flag", ["--readme", "--record=/dev/null"])
def test_a_cluster_run_beside_kopf_alone_is_refused_as_a_figure(
    flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # its helpers, as when run
    bench = load_bench("cluster")
    assert bench.parse_args(["--kopf-alone"]).kopf_alone
    assert bench.parse_args([flag]).kopf_alone is False
    with pytest.raises(SystemExit) as refused:
        bench.parse_args(["--kopf-alone", flag])
    assert refused.value.code == 2
    assert "its two extra processes slow the operator's run; not with --readme or --record" in capsys.readouterr().err
