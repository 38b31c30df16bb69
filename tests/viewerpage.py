"""What the trace viewer's page shows, read from its DOM, and the checks every browser test makes.

Shared by tests/integration/test_viewer_browser.py (the four demo scenarios) and
tests/e2e/test_trace.py (a trace recorded on the e2e cluster): open a page built by
``inference-operator trace view``, step through it with real key presses, and check that
each step's record shows where the format says it should (docs/trace-format.md, "For a viewer").
Screenshots go to ``artifacts/viewer/<name>-<step>.png`` under the repository root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .browser import ROOT, Browser, Page

ARTIFACTS = ROOT / "artifacts" / "viewer"

SNAPSHOT = """(() => {
  const q = (s) => [...document.querySelectorAll(s)];
  const dd = (id, field) => {
    const e = document.querySelector(`#${id} dd[data-field="${field}"]`);
    return e ? e.textContent : null;
  };
  return {
    index: Number(document.body.dataset.step),
    pos: Number(document.getElementById('step-index').textContent),
    count: Number(document.getElementById('step-count').textContent),
    active: q('#phases li.active').map((e) => e.id),
    queue: q('#queue li:not(.more)').map((e) => [e.dataset.key, e.dataset.state]),
    changed: q('#diff .changed').length,
    diffRows: q('#diff tbody tr').length,
    edge: document.getElementById('diagram').getAttribute('data-edge'),
    edgesLit: q('#diagram .edge.active').map((e) => e.dataset.edge),
    converged: document.getElementById('converged').textContent,
    objectState: document.getElementById('object-state').textContent,
    objectName: document.getElementById('object-name').textContent,
    statusPhase: dd('status', 'phase'),
    specReplicas: dd('spec', 'replicas'),
    timelineRows: q('#timeline .row').length,
    current: q('#timeline .row.current').map((e) => Number(e.dataset.index)),
    links: q('#step-detail button.link').map((e) => Number(e.dataset.target)),
  };
})()"""


def open_viewer(browser: Browser, html: Path) -> Page:
    """A new tab on ``html`` (file://), the viewer initialised."""
    page = browser.new_page()
    page.open(html.resolve().as_uri())
    page.wait_for("document.body.dataset.ready === 'true'")
    return page


def snapshot(page: Page) -> dict[str, Any]:
    value: dict[str, Any] = page.eval(SNAPSHOT)
    return value


def expected_edge(record: dict[str, Any]) -> str:
    kind = record["type"]
    if kind == "event":
        return "informer-queue" if record.get("enqueued") else "api-informer"
    if kind == "enqueue":
        return "reconciler-queue" if "pass" in record else "informer-queue"
    if kind == "dequeue":
        return "queue-workers"
    if kind == "write":
        return "reconciler-lb" if record["kind"] == "LoadBalancer" else "reconciler-api"
    if kind == "platform":
        return "platform-api"
    if kind == "phase" and record["phase"] == "observe":
        return "reconciler-cache"
    return ""


def check_step(shot: dict[str, Any], record: dict[str, Any], key: str | None) -> None:
    """The DOM at one step agrees with that step's record."""
    where = f"step seq {record['seq']} ({record['type']})"
    assert shot["current"] == [shot["index"]], f"{where}: the timeline marks the current row"
    assert shot["edge"] == expected_edge(record), f"{where}: data flows along {shot['edge']!r}"
    if record["type"] == "phase":
        assert shot["active"] == [f"phase-{record['phase']}"], f"{where}: active phase {shot['active']}"
    elif record["type"] in ("dequeue", "result") or "pass" not in record:
        assert shot["active"] == [], f"{where}: no phase is active between passes, got {shot['active']}"
    if record["type"] == "dequeue":
        assert [record["key"], "processing"] in shot["queue"], f"{where}: the taken key is shown processing"
        waiting = {w["key"] for w in record["queue"]["waiting"]}
        assert waiting <= {k for k, state in shot["queue"] if state == "waiting"}, f"{where}: waiting keys shown"
    if record["type"] == "enqueue" and record["how"] == "add" and key in (None, record["key"]):
        assert [record["key"], "ready"] in shot["queue"], f"{where}: an added key is shown ready"
    if record["type"] == "phase" and record["phase"] == "diff" and record.get("decision") == "patch":
        assert shot["changed"] >= len(record["fields"]), f"{where}: the differing fields are marked"
    if record["type"] == "event" and record.get("cause"):
        assert shot["links"], f"{where}: an event caused by a write links to it"


def step_through(page: Page, records: list[dict[str, Any]], *, key: str | None = None) -> list[dict[str, Any]]:
    """From Home, press → once per step, checking each step; returns the snapshots. With ``key``, the
    viewer is filtered to that object first and only its records are stepped through."""
    steps = records[1:]
    if key is not None:
        page.eval(
            f"(() => {{ const s = document.getElementById('object-filter'); s.value = {key!r};"
            " s.dispatchEvent(new Event('change')); return s.value; })()"
        )
        steps = [r for r in steps if r.get("key") == key]
    page.eval("document.activeElement && document.activeElement.blur(), document.body.focus()")
    page.press("Home")
    shots = []
    for n, record in enumerate(steps):
        if n:
            page.press("ArrowRight")
        shot = snapshot(page)
        assert shot["pos"] == n + 1 and shot["count"] == len(steps)
        assert records[shot["index"] + 1] is record or records[shot["index"] + 1] == record
        check_step(shot, record, key)
        shots.append(shot)
    page.press("ArrowRight")  # past the end: stays on the last step
    assert snapshot(page)["pos"] == len(steps)
    return shots


def check_clean(page: Page, html: Path) -> None:
    """No exception, no console error or warning, and no request but the page itself."""
    assert page.errors == [], page.errors
    assert page.requests == [html.resolve().as_uri()], f"the page loaded something: {page.requests}"


def go_to_seq(page: Page, seq: int) -> None:
    """Step with → from Home until the step shown is record ``seq`` (real key presses)."""
    page.press("Home")
    for _ in range(100000):
        if int(page.eval("document.getElementById('step-index').dataset.seq")) == seq:
            return
        before = page.eval("document.body.dataset.step")
        page.press("ArrowRight")
        if page.eval("document.body.dataset.step") == before:
            break
    raise AssertionError(f"no step with seq {seq}")
