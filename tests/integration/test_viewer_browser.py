"""The trace viewer in a real browser: headless Chromium (Debian ``chromium``, installed by
hack/install-chromium.sh when missing) driven over the DevTools pipe, pages opened from file://.

Covers, for each of the four demo scenarios (create, scale-upgrade, delete, drift): the trace
recorded by ``inference-operator demo --scenario S --trace FILE`` becomes a page with
``inference-operator trace view``; stepping through every record with real → presses shows the
record's phase as the active one (none between passes), the data moving along the right edge of
the architecture diagram, the taken key processing in the workqueue and added keys ready, the
differing fields of a patch marked, the current timeline row; spec and status differ early and
converge at the last step (Ready; for delete, the object is gone); ← / Home / End move as they
should; the page raises no exception, logs no console error and loads no URL but itself.
A trace with only its header opens and says so. Also: Tab reaches every control in order, each
with a visible focus ring, and Enter presses a focused button; Enter on an event's link jumps to
the write that caused it and back; space plays and pauses; the object filter limits the steps to
one object's records (a two-object trace).
``trace view --serve --port 0`` prints a 127.0.0.1 URL, serves the page there (Chromium loads it and
nothing else), answers 404 elsewhere, and stops on Ctrl-C (SIGINT) with exit code 0 and no traceback,
also when started with SIGINT ignored (a background command); a taken port is one error line naming it.
Screenshots: ``artifacts/viewer/<scenario>-<step>.png`` under the repository root
(first step, the first patch's diff or else the first diff, the first status write, last step;
docs/viewer.png is create's status write).
"""

from __future__ import annotations

import functools
import json
import selectors
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inference_operator.api.samples import make_inference_service
from inference_operator.cli import main
from inference_operator.sim import Simulation
from inference_operator.sim.clock import FakeClock
from inference_operator.trace.recorder import Recorder
from inference_operator.trace.sink import FileSink, read_trace

from ..browser import Browser, chromium
from ..viewerpage import ARTIFACTS, check_clean, go_to_seq, open_viewer, snapshot, step_through

SCENARIOS = ("create", "scale-upgrade", "delete", "drift")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


def build(tmp_path: Path, scenario: str) -> tuple[list[dict[str, Any]], Path]:
    trace = tmp_path / f"{scenario}.jsonl"
    html = tmp_path / f"{scenario}.html"
    assert main(["demo", "--scenario", scenario, "--trace", str(trace)]) == 0
    assert main(["trace", "view", str(trace), "-o", str(html)]) == 0
    return read_trace(trace), html


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_stepping_through_a_demo_scenario_shows_each_record_and_converges(
    browser: Browser, tmp_path: Path, scenario: str
) -> None:
    records, html = build(tmp_path, scenario)
    page = open_viewer(browser, html)
    page.screenshot(ARTIFACTS / f"{scenario}-{records[1]['seq']}.png")
    shots = step_through(page, records)

    assert any(s["changed"] for s in shots), "spec and status differ at some step"
    assert {a for s in shots for a in s["active"]} == {f"phase-{p}" for p in ("observe", "diff", "act", "status")}
    last = shots[-1]
    if scenario == "delete":
        assert last["objectState"] == "deleted" and last["changed"] == 0
        assert any(s["statusPhase"] == "Ready" for s in shots), "it was Ready before the delete"
    else:
        assert last["changed"] == 0 and "Ready" in last["converged"] and last["statusPhase"] == "Ready"
    assert all(s["timelineRows"] < 60 for s in shots), "the timeline renders a window of rows"

    diffs = [r for r in records if r.get("phase") == "diff"]
    first_diff = next((r for r in diffs if r["decision"] == "patch"), diffs[0])
    go_to_seq(page, first_diff["seq"])
    assert snapshot(page)["active"] == ["phase-diff"]
    page.screenshot(ARTIFACTS / f"{scenario}-{first_diff['seq']}.png")
    written = next(r for r in records if r.get("verb") == "update_status" and r["result"] == "ok")
    go_to_seq(page, written["seq"])  # the first status write, half converged: docs/viewer.png is create's
    shot = snapshot(page)
    assert shot["active"] == ["phase-status"] and 0 < shot["changed"] < shot["diffRows"]
    page.screenshot(ARTIFACTS / f"{scenario}-{written['seq']}.png")
    page.press("End")
    assert snapshot(page)["pos"] == len(records) - 1
    page.screenshot(ARTIFACTS / f"{scenario}-{records[-1]['seq']}.png")
    page.press("ArrowLeft")
    assert snapshot(page)["pos"] == len(records) - 2
    page.press("Home")
    assert snapshot(page)["pos"] == 1
    check_clean(page, html)


def test_enter_on_a_link_jumps_from_an_event_to_its_write_and_back(browser: Browser, tmp_path: Path) -> None:
    records, html = build(tmp_path, "create")
    writes = {r["id"]: r for r in records if r["type"] == "write"}
    event = next(r for r in records if r["type"] == "event" and r.get("cause") in writes)
    write = writes[event["cause"]]
    page = open_viewer(browser, html)
    go_to_seq(page, event["seq"])
    page.eval("document.getElementById('link-cause').focus()")
    page.press("Enter")
    assert int(page.eval("document.getElementById('step-index').dataset.seq")) == write["seq"]
    target = page.eval(
        f"(() => {{ const b = [...document.querySelectorAll('.link-effect')].find("
        f"(b) => b.textContent.includes('(seq {event['seq']})')); b.focus(); return !!b; }})()"
    )
    assert target
    page.press("Enter")
    assert int(page.eval("document.getElementById('step-index').dataset.seq")) == event["seq"]
    check_clean(page, html)


def test_tab_reaches_every_control_with_a_visible_focus_ring(browser: Browser, tmp_path: Path) -> None:
    _, html = build(tmp_path, "create")
    page = open_viewer(browser, html)
    page.eval("document.activeElement && document.activeElement.blur()")
    reached = []
    for _ in range(9):
        page.press("Tab")
        reached.append(
            page.eval(
                "(() => { const e = document.activeElement; const s = getComputedStyle(e);"
                " return [e.id, s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2]; })()"
            )
        )
    ids = [r[0] for r in reached]
    expected = ["btn-first", "btn-prev", "btn-play", "btn-next", "btn-last", "scrubber", "object-filter", "timeline"]
    assert [i for i in ids if i in expected][: len(expected)] == expected, ids
    assert all(visible for _, visible in reached if _ in expected), reached
    page.eval("document.getElementById('btn-next').focus()")
    page.press("Enter")
    assert snapshot(page)["pos"] == 2, "Enter on a focused button presses it"
    check_clean(page, html)


def test_space_plays_and_pauses(browser: Browser, tmp_path: Path) -> None:
    _, html = build(tmp_path, "create")
    page = open_viewer(browser, html)
    page.eval("document.body.focus()")
    page.press(" ")
    assert page.eval("document.getElementById('btn-play').getAttribute('aria-pressed')") == "true"
    page.wait_for("Number(document.getElementById('step-index').textContent) >= 3", timeout=15)
    page.press(" ")
    assert page.eval("document.getElementById('btn-play').getAttribute('aria-pressed')") == "false"
    check_clean(page, html)


def test_the_object_filter_steps_through_one_objects_records(browser: Browser, tmp_path: Path) -> None:
    trace, html = tmp_path / "two.jsonl", tmp_path / "two.html"
    sink = FileSink(trace)
    sim = Simulation(ready_after=5.0, tracer=lambda clock: Recorder(sink, clock, backend="simulator"))
    for name in ("alpha", "beta"):
        sim.apply(make_inference_service(name, image="vllm:0.7.0", model="Llama-3", replicas=1))
    sim.run_until_quiescent()
    sim.tracer.close()
    assert main(["trace", "view", str(trace), "-o", str(html)]) == 0
    records = read_trace(trace)
    page = open_viewer(browser, html)
    options = page.eval("[...document.querySelectorAll('#object-filter option')].map((o) => o.value)")
    assert options == ["", "default/alpha", "default/beta"]
    shots = step_through(page, records, key="default/beta")
    assert {s["objectName"] for s in shots} == {"default/beta"}
    assert len(shots) == sum(1 for r in records if r.get("key") == "default/beta") < len(records) - 1
    assert shots[-1]["statusPhase"] == "Ready" and shots[-1]["changed"] == 0
    check_clean(page, html)


def test_a_trace_with_only_its_header_opens_and_says_so(browser: Browser, tmp_path: Path) -> None:
    trace, html = tmp_path / "empty.jsonl", tmp_path / "empty.html"
    sink = FileSink(trace)
    Recorder(sink, FakeClock(), backend="simulator").close()
    assert main(["trace", "view", str(trace), "-o", str(html)]) == 0
    page = open_viewer(browser, html)
    assert "no records" in page.eval("document.getElementById('loop-state').textContent")
    page.press("ArrowRight")
    page.press("End")
    check_clean(page, html)


def test_the_page_carries_the_trace_and_nothing_else(tmp_path: Path) -> None:
    records, html = build(tmp_path, "create")
    text = html.read_text()
    start = text.index('<script id="trace-data" type="application/json">') + len(
        '<script id="trace-data" type="application/json">'
    )
    embedded = json.loads(text[start : text.index("</script>", start)])
    assert embedded == records


def test_serve_prints_a_loopback_url_serves_the_page_and_stops_on_ctrl_c(browser: Browser, tmp_path: Path) -> None:
    _, html = build(tmp_path, "create")
    trace = tmp_path / "create.jsonl"
    command = [sys.executable, "-m", "inference_operator", "trace", "view", str(trace), "--serve", "--port", "0"]
    # Started as a shell starts a background command (`… --serve &`, or a CI runner without job
    # control): SIGINT ignored, so Python installs no Ctrl-C handler of its own.
    ignore_sigint = functools.partial(signal.signal, signal.SIGINT, signal.SIG_IGN)
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ignore_sigint
    )
    try:
        with selectors.DefaultSelector() as selector:
            assert proc.stdout is not None
            selector.register(proc.stdout, selectors.EVENT_READ)
            assert selector.select(timeout=30), "no URL printed within 30 s"
            line = proc.stdout.readline()
        url = line.split(" at ")[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/"), line
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.read().decode() == html.read_text()
        try:
            urllib.request.urlopen(url + "other", timeout=10)
            raise AssertionError("only the page is served")
        except urllib.error.HTTPError as err:
            assert err.code == 404
        page = browser.new_page()
        page.open(url)
        page.wait_for("document.body.dataset.ready === 'true'")
        assert page.errors == [] and page.requests == [url]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()  # never leave a server behind, whatever failed
            proc.communicate()
            raise AssertionError("the server did not stop within 15 s of SIGINT") from None
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_serve_on_a_taken_port_is_one_line_naming_the_port(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build(tmp_path, "create")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        capsys.readouterr()
        assert main(["trace", "view", str(tmp_path / "create.jsonl"), "--serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --port {port}: cannot listen on 127.0.0.1: Address already in use\n", err
