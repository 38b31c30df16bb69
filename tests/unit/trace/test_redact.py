"""Secrets in container args and credentials in URLs never reach a trace (trace.redact).

Covers: a secret-looking flag's value is redacted in both forms (``--api-key=…`` and
``--api-key …`` as two args), for the flags vLLM and Hugging Face use (``--api-key``,
``--hf-token``, ``--token``, ``--password``, anything with ``secret`` or ``key`` in its name);
flags that only look alike (``--tokenizer``, ``--max-num-batched-tokens``) and plain args are
kept; ``user:pass@`` in any URL, anywhere in a record (args, notes, error messages), loses its
credentials but keeps the host; a field path ending in ``.args`` in a diff is redacted as args;
end to end, ``demo -f FILE --trace T`` of an InferenceService with such args leaves neither the
key nor the URL's password anywhere in T (a model URL with credentials: spec.args may not
set ``--model``), while the simulated Deployment really gets them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from inference_operator.api.samples import make_inference_service
from inference_operator.cli import main
from inference_operator.sim import Simulation
from inference_operator.trace.recorder import Recorder
from inference_operator.trace.redact import REDACTED, redact, redact_args, redact_at, redact_text
from inference_operator.trace.sink import ListSink


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--api-key=sk-123"], [f"--api-key={REDACTED}"]),
        (["--api-key", "sk-123", "--port", "8000"], ["--api-key", REDACTED, "--port", "8000"]),
        (["--hf-token", "hf_abc"], ["--hf-token", REDACTED]),
        (["--token=t0k"], [f"--token={REDACTED}"]),
        (["--password", "pw", "--x"], ["--password", REDACTED, "--x"]),
        (["--client-secret=s"], [f"--client-secret={REDACTED}"]),
        (["--openai_api_key", "k"], ["--openai_api_key", REDACTED]),
        (["-apikey=k"], [f"-apikey={REDACTED}"]),
        (["--ssl-keyfile", "/etc/tls/key.pem"], ["--ssl-keyfile", REDACTED]),
    ],
)
def test_a_secret_looking_flags_value_is_redacted_in_both_forms(args: list[str], expected: list[str]) -> None:
    assert redact_args(args) == expected


def test_a_secret_flag_followed_by_another_flag_redacts_nothing_else() -> None:
    assert redact_args(["--api-key", "--port", "8000"]) == ["--api-key", "--port", "8000"]


@pytest.mark.parametrize(
    "args",
    [
        ["--tokenizer", "meta-llama/Llama-3"],
        ["--max-num-batched-tokens", "8192"],
        ["--model", "meta-llama/Llama-3", "--port", "8000"],
        ["serve", "keyword"],
    ],
)
def test_flags_that_only_look_alike_and_plain_args_are_kept(args: list[str]) -> None:
    assert redact_args(args) == args


@pytest.mark.parametrize(
    "text, expected",
    [
        ("https://u:tok@host/m", f"https://{REDACTED}@host/m"),
        ("s3://AKIA:abc@bucket/x and http://t0k@h:80/", f"s3://{REDACTED}@bucket/x and http://{REDACTED}@h:80/"),
        ('Invalid value: "--api-key=sk-1"', f'Invalid value: "--api-key={REDACTED}"'),
        ("vllm serve m --api-key sk-1 --port 8000", f"vllm serve m --api-key {REDACTED} --port 8000"),
        ("mail me at a@b.c", "mail me at a@b.c"),
        ("https://host/path@v1", "https://host/path@v1"),
    ],
)
def test_credentials_in_any_url_and_flags_in_free_text_are_redacted(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_args_anywhere_in_an_object_are_redacted() -> None:
    pod = {"containers": [{"name": "server", "args": ["--api-key", "sk-1"], "command": ["sh", "-c", "x --token=t"]}]}
    container = redact(pod)["containers"][0]
    assert container["args"] == ["--api-key", REDACTED]
    assert container["command"] == ["sh", "-c", f"x --token={REDACTED}"]
    assert redact({"error": "Forbidden: https://u:p@h"}) == {"error": f"Forbidden: https://{REDACTED}@h"}


def test_a_diff_of_the_args_is_redacted_as_args() -> None:
    path = '.spec.template.spec.containers[name="server"].args'
    assert redact_at(path, ["--api-key", "sk-1"]) == ["--api-key", REDACTED]
    assert redact_at(path, "<absent>") == "<absent>"


def test_demo_with_a_trace_leaves_no_arg_secret_and_no_url_password_in_the_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # spec.args may not set --model (spec.model does): a model URL with credentials becomes the
    # Deployment's "--model URL" pair of args, which is the case to cover.
    manifest = make_inference_service("llama", image="vllm:0.6.3", model="https://u:tok@host/m", replicas=1)
    manifest["spec"]["args"] = ["--api-key=sk-123", "--password", "pw-456"]
    path = tmp_path / "llama.yaml"
    path.write_text(yaml.safe_dump(manifest))
    trace = tmp_path / "t.jsonl"
    code = main(["demo", "-f", str(path), "--trace", str(trace)])
    capsys.readouterr()
    assert code == 0
    text = trace.read_text()
    for secret in ("sk-123", "pw-456", "tok"):
        assert secret not in text
    assert f"https://{REDACTED}@host/m" in text and f"--api-key={REDACTED}" in text


def test_only_the_trace_is_redacted_the_deployment_gets_the_args() -> None:
    sink = ListSink()
    sim = Simulation(ready_after=5.0, tracer=lambda clock: Recorder(sink, clock, backend="simulator"))
    manifest = make_inference_service("llama", image="vllm:0.6.3", model="https://u:tok@host/m", replicas=1)
    manifest["spec"]["args"] = ["--api-key", "sk-123"]
    sim.apply(manifest)
    sim.run_until_quiescent()
    container = sim.get("Deployment", "default", "llama")["spec"]["template"]["spec"]["containers"][0]  # type: ignore[index]
    assert container["args"][-2:] == ["--api-key", "sk-123"] and "https://u:tok@host/m" in container["args"]
    assert "sk-123" not in json.dumps(sink.records) and ":tok@" not in json.dumps(sink.records)
