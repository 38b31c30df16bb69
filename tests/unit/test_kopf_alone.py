"""bench/kopfalone.py, the floor of the operator's CPU and memory, streams what the operator streams.

Its figures mean something only if Kopf does for it the work it does for the operator: the same
streams (``operator.register_streams``, started and stopped by the same activities, following
the same config) and the same settings (selectors, page size, standalone, no scanning), and
neither has a Kopf resource handler; its sink drops every event; it logs in as the operator does.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import kopf
import pytest
from kopf._core.intents.causes import Activity

from inference_operator import operator
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.streams import sources_of
from tests.shared.benchscripts import load_bench

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH))  # its neighbour procstats, as when run
    return load_bench("kopfalone")


def configured() -> kopf.OperatorSettings:
    """The settings the operator's startup gives Kopf, in this environment."""
    settings = kopf.OperatorSettings()
    operator.configure(settings, OperatorConfig.from_env())
    return settings


def streams_activities(registry: kopf.OperatorRegistry) -> list[tuple[str, str]]:
    """The startup and cleanup handlers of the streams (``operator.register_streams``)."""
    return [(h.activity.value, h.id) for h in registry._activities.get_all_handlers() if h.id.startswith("streams-")]


def settings_of(settings: kopf.OperatorSettings) -> tuple[Any, ...]:
    return (
        settings.posting.enabled,
        settings.watching.chunk_size,
        sorted(map(str, settings.watching.label_selectors.items())),
        sorted(map(str, settings.watching.field_selectors.items())),
        settings.peering.standalone,
        settings.scanning.disabled,
    )


@pytest.mark.parametrize("env", [{}, {"INFERENCE_OPERATOR_NAMESPACES": "team-a"}], ids=["cluster", "namespaced"])
def test_kopf_alone_streams_what_the_operator_streams(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, alone: Any
) -> None:
    for name in [name for name in os.environ if name.startswith("INFERENCE_OPERATOR_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    theirs = alone.build()
    theirs_settings = kopf.OperatorSettings()
    (startup,) = [
        h.fn
        for h in theirs._activities.get_all_handlers()
        if h.activity == Activity.STARTUP and h.id != "streams-start"
    ]
    startup(settings=theirs_settings)  # what Kopf runs before it starts the streams
    assert settings_of(theirs_settings) == settings_of(configured())
    assert streams_activities(theirs) == streams_activities(kopf.get_default_registry())
    assert streams_activities(theirs) == [("startup", "streams-start"), ("cleanup", "streams-stop")]
    assert list(theirs._watching.get_all_handlers()) == list(kopf.get_default_registry()._watching.get_all_handlers())
    assert list(theirs._watching.get_all_handlers()) == []  # no Kopf resource handler: streams only
    sources, sink = alone.ready()
    here = OperatorConfig.from_env()
    assert sources == sources_of(namespaces=here.namespaces, reads_capacity=here.reads_capacity)  # what is streamed
    assert sink is alone.drop and sink("Pod", "ADDED", {}) is None
    assert bool(theirs_settings.watching.field_selectors.items()) is (not env)  # cluster mode streams Pods


def test_the_operator_sets_kopf_only_in_configure() -> None:
    """What the test above compares is what the operator runs: its startup leaves every Kopf
    setting to :func:`operator.configure`."""
    body = inspect.getsource(operator.start)
    assert [line.strip() for line in body.splitlines() if "settings." in line or "settings," in line] == [
        "configure(settings, config)"
    ]


def test_it_logs_in_as_the_operator_does(alone: Any) -> None:
    assert logins(alone.build()) == [operator.login]


def logins(registry: kopf.OperatorRegistry) -> list[Any]:
    return [h.fn for h in registry._activities.get_all_handlers() if h.activity == Activity.AUTHENTICATION]


def test_a_start_that_fails_names_the_exit_code_and_shows_the_log(alone: Any, tmp_path: Path) -> None:
    broken = alone.KopfAlone({"PYTHONHOME": str(tmp_path / "none")}, tmp_path / "a.log")
    (tmp_path / "a.log").write_text(f"{alone.STARTED} (an earlier run's line)\n")  # a restart must not trust it
    with pytest.raises(SystemExit, match=r"kopf alone exited with \d+:\n(?s:.*)(Python|encodings)"):
        broken.start(timeout=30)


def test_waiting_for_it_to_be_idle_returns_once_it_uses_no_cpu_and_names_it_when_busy(
    alone: Any, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from tests.e2e.harness import WaitTimeout

    process = alone.KopfAlone({}, tmp_path / "a.log")
    process.process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        process.wait_idle(timeout=30, quiet=0.3)
    finally:
        process.stop()
    process.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with pytest.raises(WaitTimeout, match="kopf alone to use no CPU"):
            process.wait_idle(timeout=2, quiet=0.3)
    finally:
        process.stop()
