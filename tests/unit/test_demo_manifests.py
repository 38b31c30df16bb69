"""``demo -f`` runs the manifests people have.

Covers: an InferenceService in a namespace the cluster lacks runs, with the ``kubectl create
namespace`` a user would type on the timeline; a ``kubectl get -o yaml`` export (a ``List``,
server-populated metadata, managedFields, selfLink, status) runs, and the timeline says what
was dropped; several documents (a Namespace, a Secret, InferenceServices) are applied in order
and each InferenceService's outcome is shown; nested Lists are flattened; a single plain
manifest prints exactly what it printed before (no new lines); what cannot be applied (a kind
the simulator does not model, a wrong apiVersion, metadata that is no object, a bad namespace,
an object the simulated API server refuses, a file with no InferenceService) is one line on
stderr and exit code 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_operator.cli import main
from inference_operator.manifests import SERVER_POPULATED, ManifestError, read_manifests

DATA = Path(__file__).parent / "data" / "manifests"
HEAD = "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    return str(path)


def test_a_namespace_the_manifest_names_is_created_as_a_user_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, HEAD + "metadata: {name: llama, namespace: team-a}\nspec: {image: vllm, model: m}\n")
    code, out, err = run(capsys, "demo", "-f", path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "[   0.0s] (kubectl create namespace team-a)"
    assert "phase=Ready" in out and "team-a/llama" in out


def test_an_exported_list_runs_with_server_populated_fields_dropped_and_said(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "demo", "-f", str(DATA / "exported-list.yaml"))
    assert code == 0, out + err
    notes = [line for line in out.splitlines() if "dropped what the API server sets itself" in line]
    assert len(notes) == 2
    assert "InferenceService llama: metadata.uid, metadata.resourceVersion" in notes[0]
    assert "metadata.managedFields" in notes[0] and notes[0].endswith("status)")
    assert "metadata.selfLink" in notes[1]
    assert "team-a/llama: phase=Ready ready=2/2" in out and "team-a/opt: phase=Ready ready=1/1" in out


def test_an_exported_object_keeps_what_the_user_set() -> None:
    manifest = read_manifests(str(DATA / "exported-list.yaml"))
    llama = manifest.objects[0]
    assert not set(SERVER_POPULATED) & set(llama["metadata"]) and "status" not in llama
    assert llama["metadata"]["finalizers"] == ["serving.inference-operator.dev/loadbalancer-cleanup"]
    assert "kubectl.kubernetes.io/last-applied-configuration" in llama["metadata"]["annotations"]
    assert llama["spec"]["replicas"] == 2


def test_several_documents_are_applied_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    manifest = read_manifests(str(DATA / "namespace-and-service.yaml"))
    assert [(o["kind"], o["metadata"]["name"]) for o in manifest.objects] == [
        ("Namespace", "team-b"),
        ("Secret", "huggingface"),
        ("InferenceService", "llama"),
        ("InferenceService", "opt"),
    ]
    code, out, err = run(capsys, "demo", "-f", str(DATA / "namespace-and-service.yaml"))
    assert code == 0, out + err
    assert "kubectl create namespace team-b" not in out  # the file creates it
    assert "[   0.0s] (kubectl create namespace team-c)" in out
    assert "team-b/llama: phase=Ready" in out and "team-c/opt: phase=Ready" in out


def test_nested_lists_are_flattened_in_order(tmp_path: Path) -> None:
    item = "{apiVersion: serving.inference-operator.dev/v1, kind: InferenceService, metadata: {name: %s}, "
    item += "spec: {image: v, model: m}}"
    text = f"kind: List\napiVersion: v1\nitems:\n- {item % 'a'}\n- kind: InferenceServiceList\n"
    text += f"  apiVersion: serving.inference-operator.dev/v1\n  items: [{item % 'b'}, {item % 'c'}]\n"
    manifest = read_manifests(write(tmp_path, text))
    assert [o["metadata"]["name"] for o in manifest.objects] == ["a", "b", "c"]


def test_one_plain_manifest_prints_no_new_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, HEAD + "metadata: {name: llama}\nspec: {image: vllm, model: m}\n")
    code, out, _ = run(capsys, "demo", "-f", path)
    assert code == 0
    assert out.splitlines()[0] == "[   0.0s] created Deployment llama (image=vllm, replicas=1)"
    assert out.splitlines()[6].startswith("phase=Ready ready=1/1 url=")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", "demo -f simulates InferenceService"),
        (
            "apiVersion: serving.inference-operator.dev/v1alpha9\nkind: InferenceService\nmetadata: {name: a}\n",
            "apiVersion serving.inference-operator.dev/v1alpha9 is not served",
        ),
        (HEAD + "metadata: [name, a]\nspec: {image: v, model: m}\n", "metadata is a list, not an object"),
        (HEAD + "metadata: {name: a, namespace: Team_A}\nspec: {image: v, model: m}\n", "'Team_A' is not a valid"),
        (HEAD + "spec: {image: v, model: m}\n", "metadata is null, not an object"),
        ("kind: InferenceService\nmetadata: {name: a}\n", "apiVersion not set"),
        ("apiVersion: v1\nmetadata: {name: a}\n", "kind not set"),
        ("- a\n- b\n", "document 1: is a list, not an object"),
        ("apiVersion: v1\nkind: List\nitems: 3\n", "List.items is a number, not a list"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: 1}\n", "data must map keys to strings"),
        ("apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n", "no InferenceService in it (found Namespace)"),
        ("", "no InferenceService in it (found nothing)"),
        (
            HEAD + "metadata: {name: a, labels: {x: 1}}\nspec: {image: v, model: m}\n",
            'Error from server (BadRequest): error when applying InferenceService "a": InferenceService in version '
            '"v1" cannot be handled as a InferenceService: json: cannot unmarshal number into Go struct field '
            "ObjectMeta.labels of type string",
        ),
        (
            HEAD + "metadata: {name: a, generateName: a-}\nspec: {image: v, model: m}\n",
            "metadata.generateName: kubectl apply cannot use it",
        ),
    ],
)
def test_what_cannot_be_applied_is_one_line_and_exit_code_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    code, out, err = run(capsys, "demo", "-f", write(tmp_path, text))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and expected in err and "Traceback" not in err


def test_a_manifest_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n")
    with pytest.raises(ManifestError, match=f"^{path}: Pod p: "):
        read_manifests(path)
