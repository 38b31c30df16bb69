"""``run``'s pre-flight: the kubeconfig read as bounded input, the API server waited for, bounded.

Covers: the server is probed until it answers, one line per failed attempt, pauses growing
1, 2, 4, 5 s, and after ``connect_timeout`` one error naming the server and the cause; 0
means one attempt and no wait; an HTTP error answer counts as found; kubeconfig files that are
a FIFO, not UTF-8, an alias bomb, malformed YAML or no map are refused naming the file, missing
ones skipped (the loader then says there is no configuration); credentials that cannot be had
(a failing exec plugin) are raised, not retried as an unreachable server. Time is a fake clock: nothing
sleeps, no socket is opened.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from inference_operator.kube.kubeconfig import KubeconfigError, kubeconfig_paths, read_kubeconfigs
from inference_operator.kube.preflight import ClusterUnreachable, NoAnswer, wait_for_cluster
from tests.shared.yamlbombs import alias_bomb

HOST = "https://127.0.0.1:6443"


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.pauses: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def failing(times: int, answer: str = "v1.36.0") -> tuple[list[int], Callable[[], str]]:
    calls = [0]

    def probe() -> str:
        calls[0] += 1
        if calls[0] <= times:
            raise NoAnswer("connection refused")
        return answer

    return calls, probe


def test_the_server_is_probed_until_it_answers_one_line_per_failure() -> None:
    fake, said = FakeTime(), list[str]()
    calls, probe = failing(3)
    found = wait_for_cluster(HOST, probe, connect_timeout=30, say=said.append, clock=fake.clock, sleep=fake.sleep)
    assert (found.host, found.version, calls[0]) == (HOST, "v1.36.0", 4)
    assert fake.pauses == [1.0, 2.0, 4.0]
    assert said == [
        f"cannot reach the API server at {HOST}: connection refused; retrying for 30s more",
        f"cannot reach the API server at {HOST}: connection refused; retrying for 29s more",
        f"cannot reach the API server at {HOST}: connection refused; retrying for 27s more",
    ]


def test_after_the_timeout_one_error_names_the_server_and_the_cause() -> None:
    fake, said = FakeTime(), list[str]()
    _, probe = failing(10**6)
    with pytest.raises(ClusterUnreachable) as info:
        wait_for_cluster(HOST, probe, connect_timeout=20, say=said.append, clock=fake.clock, sleep=fake.sleep)
    assert str(info.value) == f"cannot reach the API server at {HOST} for 20s: connection refused"
    assert sum(fake.pauses) == 20 and max(fake.pauses) == 5.0 and len(said) == len(fake.pauses)


def test_zero_means_one_attempt_and_no_wait() -> None:
    fake, said = FakeTime(), list[str]()
    calls, probe = failing(1)
    with pytest.raises(ClusterUnreachable, match=r"at https://127\.0\.0\.1:6443: connection refused"):
        wait_for_cluster(HOST, probe, connect_timeout=0, say=said.append, clock=fake.clock, sleep=fake.sleep)
    assert calls[0] == 1 and fake.pauses == [] and said == []


def test_kubeconfig_paths_follow_kubeconfig_or_the_default() -> None:
    assert kubeconfig_paths({"KUBECONFIG": f"/a{os.pathsep}/b{os.pathsep}"}) == ["/a", "/b"]
    assert kubeconfig_paths({})[0].endswith(os.path.join(".kube", "config"))


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("fifo", "is a FIFO"),
        (b"\xff\xfe", "not UTF-8 text"),
        (alias_bomb(), "not valid YAML: line 6: more than 200000 values"),
        ("clusters: [1", "not valid YAML"),
        ("- a\n", "not a kubeconfig"),
    ],
)
def test_a_bad_kubeconfig_file_is_refused_naming_it(tmp_path: Path, content: str | bytes, problem: str) -> None:
    path = tmp_path / "kubeconfig"
    if content == "fifo":
        os.mkfifo(path)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(KubeconfigError, match=f"kubeconfig {path}: .*{problem}"):
        read_kubeconfigs([str(tmp_path / "missing"), str(path)])


def test_credentials_that_cannot_be_had_are_no_unreachable_server() -> None:
    """A failing exec plugin or a missing token file is the configuration's fault: the probe
    raises it (``run`` exits 2 naming it) instead of retrying as if the server were down."""
    from inference_operator.kube.preflight import version_probe

    class Transport:
        def request(self, *_: object, **__: object) -> None:
            raise KubeconfigError("kubeconfig /k: users[u].user: exec plugin 'aws' failed with exit code 1: expired")

    with pytest.raises(KubeconfigError, match="exec plugin 'aws' failed"):
        version_probe(Transport())()  # type: ignore[arg-type]
