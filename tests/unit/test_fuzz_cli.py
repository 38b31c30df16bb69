"""Fuzz: no input breaks any command, checked on the real command line in a limited subprocess.

Covers: hypothesis generates YAML documents (valid InferenceServices with fields replaced by
values of any JSON type, token soups of anchors, aliases, flow brackets, tags and document
markers, raw bytes that are not UTF-8), JSON-lines traces (NaN, deep nesting, wrong shapes),
and argument lists over every subcommand (``demo``, ``crd``, ``run``, ``trace view``,
``lb-registry serve|list``) with numbers that are NaN, infinite, negative, huge or not numbers,
and paths that are missing, directories, FIFOs or devices. Each runs as
``python -m inference_operator …`` with an address-space limit (1 GiB), a CPU limit and a
wall-clock timeout, and must end with exit code 0 or 2, no ``Traceback`` and at most a few
lines on stderr. Exit code 1 is accepted only for the two outcomes that are not input errors,
with their own line: ``demo -f`` whose InferenceService did not become Ready (stdout has its
``phase=``), and ``run`` finding no API server (never reached here: KUBECONFIG names no file).

No child opens a socket: KUBECONFIG names a missing file (``run`` stops before connecting),
and the invocations that would listen or connect (``trace view --serve``, ``lb-registry serve``
and ``list``) always carry one argument that is refused while parsing.

Size: ``INFERENCE_OPERATOR_FUZZ_EXAMPLES`` examples per test (default 8, about half a minute
for the three tests on a loaded 2-core machine); ``make fuzz`` runs 200 each.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("INFERENCE_OPERATOR_FUZZ_EXAMPLES", "8"))
MEMORY_LIMIT = 1 << 30
TIMEOUT_SECONDS = 90
MAX_STDERR_LINES = 5

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

VALID: dict[str, Any] = {
    "apiVersion": "serving.inference-operator.dev/v1",
    "kind": "InferenceService",
    "metadata": {"name": "fuzz", "namespace": "team-a"},
    "spec": {
        "image": "vllm/vllm-openai:v0.7.0",
        "model": "m",
        "replicas": 1,
        "port": 8000,
        "gpu": 0,
        "resources": {"requests": {"cpu": 1, "memory": "1Gi"}},
        "env": [{"name": "A", "value": "1"}],
        "nodeSelector": {"pool": "gpu"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "loadBalancer": {"enabled": True},
    },
}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (TIMEOUT_SECONDS, TIMEOUT_SECONDS))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))


def run_cli(args: list[str], cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(cwd),
        "KUBECONFIG": str(cwd / "no-such-kubeconfig"),
        "INFERENCE_OPERATOR_CONNECT_TIMEOUT": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
    }
    return subprocess.run(
        [sys.executable, "-m", "inference_operator", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT_SECONDS,
        preexec_fn=_limits,
        check=False,
    )


def check(result: subprocess.CompletedProcess[bytes], args: list[str]) -> None:
    err = result.stderr.decode("utf-8", "replace")
    out = result.stdout.decode("utf-8", "replace")
    shown = f"{args!r} -> {result.returncode}\nstderr: {err[-2000:]}"
    assert "Traceback" not in err, shown
    assert len(err.splitlines()) <= MAX_STDERR_LINES, shown
    not_ready = result.returncode == 1 and args[:1] == ["demo"] and "phase=" in out
    assert result.returncode in (0, 2) or not_ready, shown
    if result.returncode == 2:
        assert err.startswith("error: ") and len(err.splitlines()) == 1, shown


# --- YAML documents ------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["3", "yes", "true", "1.0", "-1", "500m", "16Gi", "", "Exists", "NoSchedule", "nvidia.com/gpu"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*prefix, index))
    return out


def _replaced(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[head] = _replaced(node[head], rest, value)
    return copy


@st.composite
def mutated_manifests(draw: st.DrawFn) -> str:
    """A valid manifest with a few values replaced by anything; maybe more documents, a List."""
    documents = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        doc: Any = VALID
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            path = draw(st.sampled_from(_paths(doc)))
            doc = _replaced(doc, path, draw(json_values))
        documents.append(doc)
    if draw(st.booleans()):
        documents = [{"apiVersion": "v1", "kind": "List", "metadata": {}, "items": documents}]
    return "---\n".join(yaml.safe_dump(d, allow_unicode=True) for d in documents)


TOKENS = [
    "a: ", "b: ", "- ", "\n", "  ", " ", "&x ", "*x", "&y ", "*y", "[", "]", "{", "}", ", ", ": ", "---\n",
    "...\n", "!!binary ", "!!set ", "!!timestamp ", "!!python/object ", ".nan", ".inf", "'", '"', "<<: *x\n", "? ",
    "|\n", ">\n", "#", "%YAML 1.1\n", "\t", "\x00", "\ufeff", "9" * 60, "1e999", "0x1f", "0o7", "2026-05-01",
    "apiVersion: serving.inference-operator.dev/v1\n", "kind: InferenceService\n", "kind: List\n", "items:\n",
    "metadata: {name: a}\n", "metadata:\n  name: a\n  namespace: team-a\n", "spec: {image: v, model: m}\n",
    "spec:\n  image: v\n  model: m\n  replicas: ", '"3"', "3", "yes", "null", "~",
]  # fmt: skip

token_soups = st.lists(st.sampled_from(TOKENS), max_size=60).map("".join)
raw_bytes = st.binary(max_size=200)
documents = st.one_of(mutated_manifests(), token_soups, raw_bytes)


@FUZZ
@given(document=documents, via_stdin=st.booleans(), extra=st.sampled_from([[], ["--ready-after", "0"]]))
def test_no_yaml_document_breaks_demo(tmp_path_factory: pytest.TempPathFactory, document: str | bytes,
                                      via_stdin: bool, extra: list[str]) -> None:  # fmt: skip
    cwd = tmp_path_factory.mktemp("fuzz")
    data = document.encode("utf-8", "surrogatepass") if isinstance(document, str) else document
    (cwd / "doc.yaml").write_bytes(data)
    args = ["demo", "-f", "-" if via_stdin else "doc.yaml", *extra]
    check(run_cli(args, cwd, stdin=data if via_stdin else b""), args)


# --- traces --------------------------------------------------------------------------------

HEADER = json.dumps({"type": "header", "format": "inference-operator-trace", "version": 1})
trace_lines = st.one_of(
    json_values.map(lambda v: json.dumps(v, allow_nan=True)),
    st.integers(min_value=1, max_value=50000).map(lambda n: "[" * n + "]" * n),
    st.sampled_from(['{"type":"note","x":NaN}', '{"type":"note","x":Infinity}', "not json", "", "{"]),
)


@FUZZ
@given(lines=st.lists(trace_lines, max_size=4), with_header=st.booleans())
def test_no_trace_breaks_trace_view(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], with_header: bool
) -> None:
    cwd = tmp_path_factory.mktemp("fuzz")
    (cwd / "t.jsonl").write_text("\n".join([HEADER] * with_header + lines) + "\n", encoding="utf-8")
    args = ["trace", "view", "t.jsonl"]
    check(run_cli(args, cwd), args)


# --- argument lists ------------------------------------------------------------------------

NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1", "5", "0.5", "1e308", "99999", "65536", "10000000000", "x", "", "٣"]
PATHS = ["doc.yaml", "missing/dir/x", "fifo", "/dev/zero", "/dev/null", ".", "-", "out.yaml", "t.jsonl"]
FLAGS = {
    "demo": ["-f", "--file", "--scenario", "--ready-after", "--trace", "--cluster", "--horizon", "--stop-after"],
    "crd": ["-o", "--output"],
    "run": ["-n", "--workers", "--resync-period", "--requeue-period", "--lb-provider", "--lb-url", "--lb-timeout",
            "--leader-election", "--lease-namespace", "--identity", "--lb-ca-file", "--log-format",
            "--metrics-address", "--trace", "--trace-max-bytes", "--trace-files", "--liveness", "--connect-timeout",
            "-v"],
    "trace view": ["-o", "--port"],
    "lb-registry serve": ["--host", "--port", "--state", "--fail-registers", "--fail-releases", "--address-template",
                          "--token-file", "--tls-cert", "--tls-key"],
    "lb-registry list": ["--url", "--timeout", "--token-file", "--ca-file"],
}  # fmt: skip
OTHER = ["create", "delete", "drift", "scale-upgrade", "http", "memory", "json", "true", "false", "team-a",
         "Bad_NS", "http://127.0.0.1:99999", "http://x:1/healthz", "a b", "--help", "--nope", "-", "--", "{key}",
         "lb-{name}"]  # fmt: skip
REFUSED_WHILE_PARSING = {  # appended where a valid line would listen or connect
    "trace view": ["--port", "99999"],
    "lb-registry serve": ["--port", "99999"],
    "lb-registry list": ["--timeout", "nan"],
}


@st.composite
def argument_lists(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(list(FLAGS)))
    vocabulary = FLAGS[command] + NUMBERS + PATHS + OTHER
    args = [*command.split(), *draw(st.lists(st.sampled_from(vocabulary), max_size=8))]
    if command == "trace view":
        args.insert(2, draw(st.sampled_from(["t.jsonl", *PATHS])))
        if draw(st.booleans()):
            args.append("--serve")
    return args + REFUSED_WHILE_PARSING.get(command, [])


@FUZZ
@given(args=argument_lists())
def test_no_argument_list_breaks_any_command(tmp_path_factory: pytest.TempPathFactory, args: list[str]) -> None:
    cwd = tmp_path_factory.mktemp("fuzz")
    os.mkfifo(cwd / "fifo")
    (cwd / "doc.yaml").write_text(yaml.safe_dump(VALID))
    (cwd / "t.jsonl").write_text(HEADER + "\n")
    check(run_cli(args, cwd), args)
