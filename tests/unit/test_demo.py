"""The demo command, the CLI and the sample manifests.

Covers: all four seed scenarios pass their own checks; the scale + upgrade scenario prints
the seed's timeline with the one step more that the real RollingUpdate arithmetic takes; the
delete scenario notes the garbage collection at the time it happened, not after the pods'
grace period; ``demo --help`` states the default nodes; ``--scenario`` runs one; every sample
manifest in deploy/samples converges to Ready on the simulator (``demo -f``); a bad option, an
unreadable, malformed or invalid manifest each give one line on stderr and exit code 2;
``crd`` prints the CRD.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from inference_operator.api.crd import crd
from inference_operator.cli import main
from inference_operator.demo import SCENARIOS, Report, Scenario, run_scenarios
from inference_operator.sim.cluster.nodes import default_layout

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "deploy" / "samples").glob("*.yaml"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_all_four_scenarios_pass(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "demo")
    assert code == 0, err
    assert "FAIL" not in out
    assert sum(line.startswith("== ") for line in out.splitlines()) == 4 and out.count("  ok ") == 14


def test_scale_upgrade_prints_the_seed_timeline_with_the_real_rolling_update_step(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "demo", "--scenario", "scale-upgrade")
    timeline = [line for line in out.splitlines() if line.startswith("[")]
    assert code == 0
    # The seed goes 2/4 -> 4/4; the Deployment controller's 25% maxSurge and maxUnavailable of 4
    # (one pod each) allow five pods at most and three available at least, so one step more.
    assert timeline == [
        "[   5.0s] patched Deployment llama (image=vllm:0.7.0, replicas=4)",
        "[   5.0s] status gen=2 ready=2/4 observedGen=2",
        "[  10.0s] status gen=2 ready=3/4 observedGen=2",
        "[  15.0s] status gen=2 ready=4/4 observedGen=2",
    ]


def test_the_delete_scenario_notes_the_garbage_collection_when_it_happened(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, "demo", "--scenario", "delete")
    timeline = [line for line in out.splitlines() if line.startswith("[")]
    assert code == 0
    assert timeline[0].startswith("[   5.0s] (kubectl delete")
    assert timeline[-1] == "[   5.0s] (garbage collector deleted Deployment and Service llama)"


def test_demo_help_states_the_default_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    layout = default_layout()
    assert ", ".join(node.name for node in layout) in text
    assert f"with {layout[0].gpus} nvidia.com/gpu each" in text and len({n.gpus for n in layout}) == 1


def test_a_scenario_whose_checks_fail_is_counted_and_shown(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(report: Report) -> None:
        report.check(False, "the impossible happened")

    failed = run_scenarios(None, sys.stdout, scenarios=(*SCENARIOS[:1], Scenario("broken", "broken", broken)))
    out = capsys.readouterr().out
    assert failed == 1 and "FAIL the impossible happened" in out and "ok   Ready=True" in out


def test_one_scenario_can_be_chosen(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "demo", "--scenario", "delete")
    assert code == 0 and sum(line.startswith("== ") for line in out.splitlines()) == 1
    assert "released load balancer default/llama" in out


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_every_sample_manifest_converges_on_the_simulator(sample: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "demo", "-f", str(sample))
    assert code == 0, out + err
    assert "phase=Ready" in out


def test_samples_exist() -> None:
    assert len(SAMPLES) >= 3


def test_a_bad_option_is_one_line_and_exit_code_two(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "demo", "--scenario", "nope")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "invalid choice: 'nope'" in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        ("spec: [unclosed", "not valid YAML"),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "Pod x: demo -f simulates InferenceService"),
        (
            "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\nmetadata: {name: x}\n"
            "spec: {image: vllm, model: m, replicas: -1}\n",
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (
            "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\nmetadata: {}\n"
            "spec: {image: vllm, model: m}\n",
            "metadata.name is required",
        ),
        (  # a key with characters Python's splitlines splits on (found by the CLI fuzz test)
            "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\nmetadata: {name: x}\n"
            'spec: {image: vllm, model: m, nodeSelector: {"a\\x1eb\\u2028c": false}}\n',
            "spec.nodeSelector.a\\x1eb\\u2028c: Invalid value",
        ),
    ],
)
def test_a_bad_manifest_is_one_line_and_exit_code_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, expected: str
) -> None:
    path = tmp_path / "isvc.yaml"
    if content is not None:
        path.write_text(content)
    code, _, err = run(capsys, "demo", "-f", str(path))
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and expected in err and "Traceback" not in err


def test_crd_command_prints_the_generated_crd(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "crd")
    assert code == 0 and yaml.safe_load(out) == crd()
