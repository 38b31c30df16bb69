"""No input breaks any command: each answers bad input with one line and exit code 2.

Covers, command by command: ``demo -f`` of a FIFO, ``/dev/zero``, a directory, a file over
1 MiB, text that is not UTF-8, an alias bomb, deep nesting, NaN, a key given twice, a
``replicas: "3"``; ``demo --ready-after`` inf, nan, negative; ``demo --trace`` into a missing
directory (before anything runs); ``crd -o`` into a missing directory or a FIFO (before the CRD
is generated); ``trace view`` of a trace with NaN, deep nesting, a FIFO, an unwritable ``-o``,
``--port 99999``; ``run`` with NaN, infinite or astronomic settings from flags and from the
environment (the variable or flag named), a bad ``--liveness``, a bad namespace, and a
kubeconfig that is missing, a FIFO or an alias bomb (no connection is tried); ``lb-registry``
with an infinite ``--timeout``, a FIFO or ``/dev/zero`` token file, a port out of range in its
URL, and its own entry point (``python -m inference_operator.lb.registry``) likewise; ``kopf run -m
inference_operator.operator`` with no cluster configured. The line names the input and the
problem; nothing else is printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from inference_operator.cli import RUN_FLAGS, main
from inference_operator.kube.config import ENV_PREFIX
from tests.shared.yamlbombs import alias_bomb

HEAD = "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\nmetadata: {name: a}\n"


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big.yaml").write_text(HEAD + "spec: {image: v, model: m}\n" + "#" * (1 << 20))
    (tmp_path / "latin.yaml").write_bytes((HEAD + "spec: {image: caf\xe9, model: m}\n").encode("latin-1"))
    (tmp_path / "bomb.yaml").write_text(HEAD + "spec: {image: v, model: m}\nx-unknown:\n" + _indent(alias_bomb()))
    (tmp_path / "deep.yaml").write_text(HEAD + "spec: " + "[" * 50000 + "]" * 50000 + "\n")
    (tmp_path / "nan.yaml").write_text(HEAD + "spec: {image: v, model: m, replicas: .nan}\n")
    (tmp_path / "twice.yaml").write_text(HEAD + "spec: {image: v, model: m, replicas: 1, replicas: 2}\n")
    (tmp_path / "string.yaml").write_text(HEAD + 'spec: {image: v, model: m, replicas: "3"}\n')
    header = '{"type":"header","format":"inference-operator-trace","version":1}\n'
    (tmp_path / "nan.jsonl").write_text(header + '{"type":"note","x":NaN}\n')
    (tmp_path / "deep.jsonl").write_text(header + "[" * 100000 + "]" * 100000 + "\n")
    (tmp_path / "ok.jsonl").write_text(header)
    (tmp_path / "kubeconfig-bomb").write_text(alias_bomb())
    return tmp_path


def _indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


@pytest.fixture()
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """``run`` writes its flags into the environment: put it back afterwards."""
    for env in [*RUN_FLAGS.values(), "NAMESPACES"]:
        monkeypatch.setenv(ENV_PREFIX + env, "")
        monkeypatch.delenv(ENV_PREFIX + env)
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    yield monkeypatch


CASES = [
    (["demo", "-f", "{d}/fifo"], "{d}/fifo: is a FIFO (named pipe), not a regular file"),
    (["demo", "-f", "/dev/zero"], "/dev/zero: is a character device, not a regular file"),
    (["demo", "-f", "{d}"], "is a directory, not a regular file"),
    (["demo", "-f", "{d}/big.yaml"], "big.yaml: is 1048692 bytes, more than the 1 MiB allowed"),
    (["demo", "-f", "{d}/latin.yaml"], "latin.yaml: line 4: not UTF-8 text (byte 0xe9"),
    (["demo", "-f", "{d}/bomb.yaml"], "bomb.yaml: line 11: more than 200000 values once aliases are expanded"),
    (["demo", "-f", "{d}/deep.yaml"], "deep.yaml:"),
    (["demo", "-f", "{d}/nan.yaml"], "nan.yaml: spec.replicas: nan is not a JSON number"),
    (["demo", "-f", "{d}/twice.yaml"], "twice.yaml: line 4: key 'replicas' is already set in this map"),
    (["demo", "-f", "{d}/string.yaml"], 'spec.replicas: Invalid value: "string": spec.replicas in body must be'),
    (["demo", "--ready-after", "inf"], "--ready-after: 'inf': must be a number of seconds from 0 to 86400"),
    (["demo", "--ready-after", "nan"], "--ready-after: 'nan': must be a number"),
    (["demo", "--ready-after", "-1"], "--ready-after: '-1': must be a number"),
    (["demo", "--trace", "{d}/no/t.jsonl", "--scenario", "create"], "--trace {d}/no/t.jsonl: directory"),
    (["crd", "-o", "{d}/missing/dir/x.yaml"], "-o {d}/missing/dir/x.yaml: directory {d}/missing/dir does not exist"),
    (["crd", "-o", "{d}/fifo"], "-o {d}/fifo: is a FIFO or socket"),
    (["crd", "-o", "{d}"], "is a directory, give a file name"),
    (["trace", "view", "{d}/nan.jsonl"], "nan.jsonl: line 2: not a trace (not JSON lines: NaN is not a JSON number)"),
    (["trace", "view", "{d}/deep.jsonl"], "deep.jsonl: line 2: nested too deeply to be a trace record"),
    (["trace", "view", "{d}/fifo"], "fifo: is a FIFO (named pipe), not a regular file"),
    (["trace", "view", "{d}/ok.jsonl", "-o", "{d}/no/x.html"], "-o {d}/no/x.html: directory"),
    (["trace", "view", "--serve", "--port", "99999", "{d}/ok.jsonl"], "--port: '99999': must be a whole number"),
    (["run", "--lb-timeout", "nan"], "--lb-timeout: INFERENCE_OPERATOR_LB_TIMEOUT='nan': must be a number"),
    (["run", "--resync-period", "inf"], "--resync-period: INFERENCE_OPERATOR_RESYNC_SECONDS='inf'"),
    (["run", "--workers", "100000000"], "--workers: INFERENCE_OPERATOR_WORKERS='100000000': must be a whole number"),
    (["run", "--connect-timeout", "-5"], "--connect-timeout: INFERENCE_OPERATOR_CONNECT_TIMEOUT='-5'"),
    (["run", "--liveness", "http://0.0.0.0:99999/healthz"], "--liveness: 'http://0.0.0.0:99999/healthz': Port out"),
    (["run", "--liveness", "healthz"], "--liveness: 'healthz': must be an http URL"),
    (["run", "-n", "Team_A"], "'Team_A' is not a namespace name"),
    (["run"], "no cluster to run against"),
    (["lb-registry", "list", "--timeout", "inf"], "--timeout: 'inf': must be a number of seconds above 0 up to 600"),
    (["lb-registry", "list", "--token-file", "{d}/fifo"], "--token-file: {d}/fifo: is a FIFO"),
    (["lb-registry", "serve", "--token-file", "/dev/zero"], "--token-file: /dev/zero: is a character device"),
    (["lb-registry", "list", "--url", "http://127.0.0.1:99999"], "--url: 'http://127.0.0.1:99999': Port out"),
    (["lb-registry", "serve", "--port", "-1"], "--port: '-1' is not a port number"),
    (["lb-registry", "serve", "--host", "a b"], "--host: 'a b' is neither an IP address nor a host name"),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_input_is_one_line_naming_it_and_exit_code_two(
    files: Path,
    clean_environment: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    expected: str,
) -> None:
    code = main([arg.format(d=files) for arg in argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err
    assert expected.format(d=files) in err


@pytest.mark.parametrize(
    ("variable", "value"),
    [("LB_TIMEOUT", "nan"), ("RESYNC_SECONDS", "inf"), ("WORKERS", "100000000"), ("REQUEUE_SECONDS", "-1")],
)
def test_a_bad_setting_in_the_environment_names_the_variable(
    clean_environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str, value: str
) -> None:
    clean_environment.setenv(ENV_PREFIX + variable, value)
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {ENV_PREFIX}{variable}={value!r}: must be") and len(err.splitlines()) == 1


@pytest.mark.parametrize("kubeconfig", ["{d}/fifo", "{d}/kubeconfig-bomb", "{d}/latin.yaml"])
def test_a_kubeconfig_that_cannot_be_read_safely_is_refused_before_connecting(
    files: Path, clean_environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kubeconfig: str
) -> None:
    clean_environment.setenv("KUBECONFIG", kubeconfig.format(d=files))
    assert main(["run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: kubeconfig {kubeconfig.format(d=files)}: ") and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv", [["serve", "--port", "99999"], [], ["list", "--timeout", "nan"]])
def test_the_registrys_own_entry_point_answers_in_one_line_too(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    from inference_operator.lb.registry import main as registry_main

    with pytest.raises(SystemExit) as info:
        registry_main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2 and len(err.splitlines()) == 1 and err.startswith("error: python -m ")


def test_kopf_run_without_a_cluster_stops_in_one_line(tmp_path: Path) -> None:
    """``kopf run -m inference_operator.operator`` (the image's command) outside a pod with no
    kubeconfig: one line naming what to set and exit code 2, not Kopf's retries and tracebacks."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)  # no ~/.kube/config
    done = subprocess.run(
        [sys.executable, "-m", "kopf", "run", "-m", "inference_operator.operator", "--standalone", "-A"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Stopped: no cluster to run against" in done.stderr and "(set KUBECONFIG)" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_the_command_line_names_the_demo_scenarios_the_demo_has() -> None:
    from inference_operator.cliargs import DEMO_SCENARIOS
    from inference_operator.demo import SCENARIO_NAMES

    assert DEMO_SCENARIOS == SCENARIO_NAMES


def test_starting_the_operator_imports_no_simulator() -> None:
    # `inference-operator run` parses its command line first: the simulator (some 60 modules,
    # 2.4 MiB of the operator's memory) must not come with it.
    code = (
        "import sys; from inference_operator import cli; cli.build_parser().parse_args(['run']);"
        "import inference_operator.operator;"
        "print(sorted(m for m in sys.modules if m.startswith(('inference_operator.sim', 'inference_operator.demo'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"
