"""bench/kopfalone.py, the floor of the operator's CPU and memory, watches what the operator watches.

Its figures mean something only if Kopf does for it the work it does for the operator: the
same resources, handler ids and label filters, the same settings (selectors, page size, idle
timeout, no diff-base, standalone) and, in cluster mode, the same Node and Pod handlers; its
handlers return at once; it logs in by the kubeconfig when the ``kubernetes`` package is hidden.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from pathlib import Path
from typing import Any

import kopf
import pytest
from kopf._core.intents.causes import Activity

from inference_operator import operator
from inference_operator.kube.config import OperatorConfig
from tests.shared.benchscripts import load_bench

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH))  # its neighbour procstats, as when run
    return load_bench("kopfalone")


def watching(registry: kopf.OperatorRegistry) -> list[tuple[Any, ...]]:
    return sorted(
        (h.id, str(h.selector), repr(h.labels), repr(h.field), repr(h.when))
        for h in registry._watching.get_all_handlers()
    )


def configured() -> kopf.OperatorSettings:
    """The settings the operator's startup gives Kopf, in this environment."""
    settings = kopf.OperatorSettings()
    operator.configure(settings, OperatorConfig.from_env())
    return settings


def activities(registry: kopf.OperatorRegistry) -> list[tuple[str, str]]:
    """The startup and cleanup handlers of the capacity streams (``operator.register_reads``)."""
    return [(h.activity.value, h.id) for h in registry._activities.get_all_handlers() if "capacity-reads" in h.id]


def settings_of(settings: kopf.OperatorSettings) -> tuple[Any, ...]:
    return (
        settings.posting.enabled,
        type(settings.persistence.diffbase_storage).__name__,
        settings.queueing.idle_timeout,
        settings.watching.chunk_size,
        sorted(map(str, settings.watching.label_selectors.items())),
        sorted(map(str, settings.watching.field_selectors.items())),
        settings.peering.standalone,
        settings.scanning.disabled,
    )


@pytest.mark.parametrize("env", [{}, {"INFERENCE_OPERATOR_NAMESPACES": "team-a"}], ids=["cluster", "namespaced"])
def test_kopf_alone_watches_what_the_operator_watches(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, alone: Any
) -> None:
    for name in [name for name in os.environ if name.startswith("INFERENCE_OPERATOR_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    ours = kopf.OperatorRegistry()
    operator.register_watches(ours, operator._watch_handler)
    operator.register_reads(ours, lambda: None)
    ours_settings = configured()
    theirs = alone.build(hidden=False)
    theirs_settings = kopf.OperatorSettings()
    (startup,) = [
        h.fn
        for h in theirs._activities.get_all_handlers()
        if h.activity == Activity.STARTUP and h.id != "capacity-reads-start"
    ]
    startup(settings=theirs_settings)  # what Kopf runs before it starts watching
    assert watching(theirs) == watching(ours)
    assert settings_of(theirs_settings) == settings_of(ours_settings)
    ids = {row[0] for row in watching(ours)}
    assert ids == {"inferenceservices-event", "deployments-event", "services-event"}
    assert activities(theirs) == activities(ours) == [("startup", "capacity-reads-start"), ("cleanup", "capacity-reads-stop")]
    assert (alone.read_sink() is alone.drop) is (not env)  # cluster mode streams Nodes and Pods, else none
    assert alone.read_sink() is (None if env else alone.drop)
    assert theirs_settings.queueing.idle_timeout == 0.05 and theirs_settings.watching.label_selectors


def test_the_operator_registers_its_watches_at_import_and_sets_kopf_only_in_configure() -> None:
    """What the test above compares is what the operator runs: its import registers
    :func:`operator.register_watches`' handlers in Kopf's default registry, and its startup
    leaves every Kopf setting to :func:`operator.configure`."""
    fresh = kopf.OperatorRegistry()
    operator.register_watches(fresh, operator._watch_handler)
    imported = [row for row in watching(kopf.get_default_registry()) if row[0].endswith("-event")]
    assert imported == watching(fresh)
    body = inspect.getsource(operator.start)
    assert [line.strip() for line in body.splitlines() if "settings." in line or "settings," in line] == [
        "configure(settings, config)"
    ]


def test_its_handlers_return_at_once_and_it_logs_in_as_told(alone: Any) -> None:
    registry = alone.build(hidden=True)
    for handler in registry._watching.get_all_handlers():
        assert asyncio.run(handler.fn(event={"type": "ADDED", "object": {}})) is None
    assert logins(registry) == [kopf.login_with_kubeconfig]
    assert logins(alone.build(hidden=False)) == [kopf.login_via_client]


def logins(registry: kopf.OperatorRegistry) -> list[Any]:
    return [h.fn for h in registry._activities.get_all_handlers() if h.activity == Activity.AUTHENTICATION]


def test_a_start_that_fails_names_the_exit_code_and_shows_the_log(alone: Any, tmp_path: Path) -> None:
    broken = alone.KopfAlone({"PYTHONHOME": str(tmp_path / "none")}, tmp_path / "a.log", without_kubernetes=False)
    (tmp_path / "a.log").write_text(f"{alone.STARTED} (an earlier run's line)\n")  # a restart must not trust it
    with pytest.raises(SystemExit, match=r"kopf alone exited with \d+:\n(?s:.*)(Python|encodings)"):
        broken.start(timeout=30)


def test_waiting_for_it_to_be_idle_returns_once_it_uses_no_cpu_and_names_it_when_busy(
    alone: Any, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from tests.e2e.harness import WaitTimeout

    process = alone.KopfAlone({}, tmp_path / "a.log", without_kubernetes=True)
    process.process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        process.wait_idle(timeout=30, quiet=0.3)
    finally:
        process.stop()
    process.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with pytest.raises(WaitTimeout, match="kopf alone without kubernetes to use no CPU"):
            process.wait_idle(timeout=2, quiet=0.3)
    finally:
        process.stop()
