"""The trace viewer's capacity panel in a real browser (headless Chromium, pages from file://),
and its model (capacity.js), which, like model.js, is tested where it runs: in the page.

Covers: a template change on a full GPU pool (tests/shared/rollouts.py) shows, at the step a
new pod is refused, both nodes by name with "8/8 nvidia.com/gpu" used, and the Pending pod with
kube-scheduler's message exactly as recorded; stepping through every record with → keeps each
node's used GPUs and the Pending pods equal to a replay of the records written apart from the
page, the touched pod marked, and ends with every new pod placed and none Pending; a trace
without cluster records (a demo scenario's with them taken out, as a real cluster's trace is;
a version-1 trace) opens and the panel says there is no cluster data; malformed records (no
name, a change that is none, a request that is not a number, a deletion of a pod never added, a
pod on a node no record describes) are listed with their seq and the rest is still drawn; the
model's jump to any step, backwards or across its checkpoints, equals the replay from the
start; finished pods hold nothing, terminating ones theirs. No exception, console error or
request but the page itself. Screenshot: ``artifacts/viewer/capacity-<seq>.png``
(docs/viewer-capacity.png is the first refused pod's).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from inference_operator.cli import main
from inference_operator.trace.sink import FileSink, read_trace
from inference_operator.trace.view import write_page

from ..browser import Browser, Page, chromium
from ..shared.rollouts import CHANGE_NOTE, GPU, NODES, replay, used, write_rollout_trace
from ..viewerpage import ARTIFACTS, check_clean, go_to_seq, open_viewer

Obj = dict[str, Any]
PANEL = """(() => {
  const q = (s, root) => [...(root || document).querySelectorAll(s)];
  return {
    summary: document.getElementById('capacity-summary').textContent,
    text: document.getElementById('capacity').textContent,
    nodes: q('#cap-nodes .cap-node').map((n) => ({
      name: n.dataset.node, missing: n.classList.contains('missing'),
      gpu: n.querySelector('.cap-gpu').textContent, used: Number(n.querySelector('.cap-gpu').dataset.used),
      pods: q('li[data-pod]', n).map((li) => li.dataset.pod) })),
    pending: q('#cap-pending li[data-pod]').map((li) => [li.dataset.pod,
      (li.querySelector('.cap-msg') || {}).textContent]),
    touched: q('#capacity .touched').map((e) => e.dataset.pod || e.dataset.node),
    problems: q('#cap-problems li').map((li) => li.textContent),
  };
})()"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def rollout(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Obj], Path]:
    work = tmp_path_factory.mktemp("rollout")
    records = write_rollout_trace(work / "rollout.jsonl")
    return records, write_page(work / "rollout.jsonl", work / "rollout.html")


def panel(page: Page) -> Obj:
    value: Obj = page.eval(PANEL)
    return value


def short(key: str) -> str:
    return key.split("/", 1)[1]


def page_of(tmp_path: Path, records: list[Obj]) -> Path:
    trace = tmp_path / "t.jsonl"
    sink = FileSink(trace)
    for record in records:
        sink.write(record)
    sink.close()
    return write_page(trace, tmp_path / "t.html")


def header(version: int = 2) -> Obj:
    return {
        "seq": 1,
        "t": 0.0,
        "type": "header",
        "format": "inference-operator-trace",
        "version": version,
        "backend": "simulator",
        "started": "2026-01-01T00:00:00Z",
        "clock": "fake",
        "operatorVersion": "0.1.0",
        "phases": ["observe", "diff", "act", "status"],
    }


def test_a_template_change_on_a_full_pool_shows_full_nodes_and_a_pending_pod_with_the_schedulers_message(
    browser: Browser, rollout: tuple[list[Obj], Path]
) -> None:
    records, html = rollout
    change = next(r["seq"] for r in records if r.get("text") == CHANGE_NOTE)
    refused = next(r for r in records if r["seq"] > change and r["type"] == "pod" and r.get("unschedulable"))
    page = open_viewer(browser, html)
    go_to_seq(page, refused["seq"])
    shot = panel(page)
    assert [n["name"] for n in shot["nodes"]] == [shape.name for shape in NODES]
    assert all(n["gpu"].startswith("8/8 nvidia.com/gpu used") for n in shot["nodes"]), shot["nodes"]
    assert f"16/16 {GPU} used" in shot["summary"]
    assert [short(refused["pod"]), refused["unschedulable"]] in [[short(p), m] for p, m in shot["pending"]]
    assert "Insufficient nvidia.com/gpu" in refused["unschedulable"]
    assert shot["touched"] == [refused["pod"]] and shot["problems"] == []
    page.screenshot(ARTIFACTS / f"capacity-{refused['seq']}.png")
    check_clean(page, html)


def test_stepping_through_the_rollout_the_panel_is_the_replay_of_the_records(
    browser: Browser, rollout: tuple[list[Obj], Path]
) -> None:
    records, html = rollout
    after = {r["seq"]: (nodes, pods) for r, nodes, pods in replay(records)}
    page = open_viewer(browser, html)
    page.eval("document.activeElement && document.activeElement.blur(), document.body.focus()")
    page.press("Home")
    nodes: dict[str, Obj] = {}
    pods: dict[str, Obj] = {}
    for n, record in enumerate(records[1:]):
        if n:
            page.press("ArrowRight")
        nodes, pods = after.get(record["seq"], (nodes, pods))
        if not nodes:
            continue
        shot = panel(page)
        where = f"seq {record['seq']}"
        assert {x["name"]: x["used"] for x in shot["nodes"]} == {name: used(pods, name) for name in nodes}, where
        unbound = [k for k, p in pods.items() if not p.get("nodeName")]
        pending = sorted(k for k in unbound if pods[k]["phase"] not in ("Succeeded", "Failed"))
        assert sorted(p for p, _ in shot["pending"]) == pending, where
        for x in shot["nodes"]:
            assert sorted(x["pods"]) == sorted(k for k, p in pods.items() if p.get("nodeName") == x["name"]), where
        if record["type"] == "pod" and record["change"] != "deleted":
            assert shot["touched"] == [record["pod"]], where
    last = panel(page)
    assert last["pending"] == [] and "0 Pending" in last["summary"]
    change = next(r["seq"] for r in records if r.get("text") == CHANGE_NOTE)
    new_owner = next(r["owner"] for r in records if r["type"] == "pod" and r["seq"] > change)
    assert all(p.startswith("default/" + new_owner.split("/")[1]) for n in last["nodes"] for p in n["pods"])
    check_clean(page, html)


def test_a_trace_without_cluster_records_says_there_is_no_cluster_data(browser: Browser, tmp_path: Path) -> None:
    trace = tmp_path / "create.jsonl"
    assert main(["demo", "--scenario", "create", "--trace", str(trace)]) == 0
    records = read_trace(trace)
    assert [r for r in records if r["type"] in ("node", "pod")], "the simulator's cluster is recorded"
    # What a trace from a real cluster holds: the same control loop, no node or pod records.
    (tmp_path / "kube").mkdir()
    html = page_of(tmp_path / "kube", [r for r in records if r["type"] not in ("node", "pod")])
    old = page_of(tmp_path, [header(version=1), {"seq": 2, "t": 0.0, "type": "note", "text": "scenario create"}])
    for page_file in (html, old):
        page = open_viewer(browser, page_file)
        page.press("End")
        shot = panel(page)
        assert "No cluster data in this trace" in shot["text"] and shot["nodes"] == [] and shot["summary"] == ""
        check_clean(page, page_file)


def test_malformed_records_are_listed_with_their_seq_and_the_rest_is_still_drawn(
    browser: Browser, tmp_path: Path
) -> None:
    node = {"type": "node", "change": "added", "node": "gpu-a", "allocatable": {GPU: 8}, "ready": True}
    good = {
        "type": "pod",
        "change": "added",
        "pod": "default/good",
        "requests": {GPU: 2},
        "phase": "Running",
        "nodeName": "gpu-a",
        "ready": True,
        "terminating": False,
    }
    bad: list[tuple[Obj, str]] = [
        ({"type": "pod", "change": "added", "requests": {GPU: 1}}, "without its pod name"),
        ({"type": "node", "change": "exploded", "node": "gpu-b"}, "is not added, changed or deleted"),
        ({"type": "pod", "change": "added", "pod": "default/odd", "requests": {GPU: "lots"}}, "is not a non-negative"),
        ({"type": "pod", "change": "deleted", "pod": "default/ghost"}, "no earlier record added it"),
    ]
    stray = {
        "type": "pod",
        "change": "added",
        "pod": "default/stray",
        "requests": {GPU: 4},
        "phase": "Running",
        "nodeName": "gpu-gone",
        "ready": True,
    }
    body = [node, good, *(b for b, _ in bad), stray]
    records = [header()] + [{"seq": n + 2, "t": 0.0, **r} for n, r in enumerate(body)]
    html = page_of(tmp_path, records)
    page = open_viewer(browser, html)
    page.press("End")
    shot = panel(page)
    for (record, why), seq in zip(bad, range(4, 8), strict=True):
        assert any(p.startswith(f"seq {seq}: ") and why in p for p in shot["problems"]), (record, shot["problems"])
    assert any("gpu-gone" in p and "no node record" in p for p in shot["problems"])
    by_name = {n["name"]: n for n in shot["nodes"]}
    assert by_name["gpu-a"]["gpu"].startswith("2/8 nvidia.com/gpu used")
    assert by_name["gpu-a"]["pods"] == ["default/good"]
    assert by_name["gpu-gone"]["missing"] and by_name["gpu-gone"]["pods"] == ["default/stray"]
    assert "default/odd" in [p for p, _ in shot["pending"]], "a pod with a bad request is still shown"
    check_clean(page, html)


def test_the_models_jump_to_any_step_equals_the_replay_from_the_start(browser: Browser, tmp_path: Path) -> None:
    rng = random.Random(7)
    body: list[Obj] = [
        {"type": "node", "change": "added", "node": f"n{i}", "allocatable": {GPU: 8, "cpu": 96000}, "ready": True}
        for i in range(3)
    ]
    live: dict[str, Obj] = {}
    for n in range(700):  # past several of the model's checkpoints (every 128 cluster records)
        key = f"default/p{rng.randrange(40)}"
        if key in live and rng.random() < 0.25:
            body.append({"type": "pod", "change": "deleted", "pod": key})
            del live[key]
            continue
        pod = {
            "type": "pod",
            "change": "changed" if key in live else "added",
            "pod": key,
            "requests": {GPU: rng.choice([1, 2, 4])},
            "phase": rng.choice(["Pending", "Running", "Succeeded"]),
            "ready": rng.random() < 0.5,
            "terminating": rng.random() < 0.2,
        }
        if rng.random() < 0.7:
            pod["nodeName"] = f"n{rng.randrange(3)}"
        live[key] = pod
        body.append(pod)
        if n % 50 == 0:
            body.append({"type": "note", "text": f"between {n}"})
    records = [header()] + [{"seq": n + 2, "t": float(n), **r} for n, r in enumerate(body)]
    html = page_of(tmp_path, records)
    page = open_viewer(browser, html)
    steps = records[1:]
    expected: list[Obj] = []
    nodes: dict[str, Obj] = {}
    pods: dict[str, Obj] = {}
    replayed = {r["seq"]: (nd, pd) for r, nd, pd in replay(records)}
    for record in steps:
        nodes, pods = replayed.get(record["seq"], (nodes, pods))
        expected.append({name: used(pods, name) for name in nodes})
    order = [rng.randrange(len(steps)) for _ in range(60)] + [len(steps) - 1, 0, 300, 299, 129, 128, 127]
    got = page.eval(
        "(() => { const steps = JSON.parse(document.getElementById('trace-data').textContent).slice(1);"
        f" const m = CapacityModel.build(steps); return {json.dumps(order)}.map((i) => Object.fromEntries("
        f"m.viewAt(i).nodes.map((n) => [n.name, n.used['{GPU}'] || 0]))); }})()"
    )
    assert got == [expected[i] for i in order]
    check_clean(page, html)


def test_finished_pods_hold_nothing_and_terminating_ones_hold_theirs(browser: Browser, tmp_path: Path) -> None:
    node = {"type": "node", "change": "added", "node": "n", "allocatable": {GPU: 8}, "ready": True}
    pods = [
        {
            "type": "pod",
            "change": "added",
            "pod": f"default/{name}",
            "requests": {GPU: 2},
            "phase": phase,
            "nodeName": "n",
            "ready": False,
            "terminating": terminating,
        }
        for name, phase, terminating in (
            ("done", "Succeeded", False),
            ("failed", "Failed", False),
            ("leaving", "Running", True),
            ("serving", "Running", False),
        )
    ]
    records = [header()] + [{"seq": n + 2, "t": 0.0, **r} for n, r in enumerate([node, *pods])]
    html = page_of(tmp_path, records)
    page = open_viewer(browser, html)
    page.press("End")
    shot = panel(page)
    assert shot["nodes"][0]["used"] == 4 and shot["nodes"][0]["gpu"].startswith("4/8 nvidia.com/gpu used · 4 free")
    listed = sorted(shot["nodes"][0]["pods"])
    assert listed == sorted(p["pod"] for p in pods), "finished pods are listed, holding nothing"
    summary = page.eval("CapacityModel.summary(" + json.dumps(pods[2]) + ")")
    assert summary == "pod default/leaving added Running on n terminating"
    check_clean(page, html)
