"""``demo -f CHANGE --cluster SNAPSHOT``: the rollout a change would do on a real cluster's state.

Why this exists: on a full GPU pool whether a change finishes, how long fewer replicas serve
and which pods wait for GPUs depends on where every pod runs now. This loads the snapshot
(:mod:`.snapshot`, :mod:`.load`), applies the change as ``kubectl apply`` would, runs the
simulated operator and cluster until nothing moves or ``horizon`` seconds pass (watching them,
:mod:`.observe`) and prints, with time 0 at the change: what was loaded and left out, the
operator's timeline, then per InferenceService of the change the pods that went Pending with
the scheduler's words, the lowest count of serving pods and for how long, whether and when it
was Ready on the new spec, and the status a user would see (conditions, ``status.rollout``).
"""

from __future__ import annotations

from typing import TextIO

from inference_operator.api.constants import KIND
from inference_operator.core.objects import Obj, key_of
from inference_operator.demo import ManifestRefused, Report, apply_object, print_pods
from inference_operator.manifests import Manifest
from inference_operator.sim import Simulation
from inference_operator.whatif.load import load_snapshot
from inference_operator.whatif.observe import PendingPod, RolloutWatch, run_watched
from inference_operator.whatif.snapshot import Snapshot, counted

__all__ = ["DEFAULT_HORIZON", "run_whatif"]

ROLLOUT_NUMBERS = ("strategy", "plan", "maxSurge", "maxUnavailable")
"""What of ``status.rollout`` is printed before its message."""

DEFAULT_HORIZON = 3600.0
"""Seconds of simulated time a what-if waits for the change to finish (the operator's progress
deadline is 1800 s: a stuck rollout is Failed by then)."""


def run_whatif(
    change: Manifest,
    snapshot: Snapshot,
    out: TextIO,
    *,
    ready_after: float = 5.0,
    stop_after: float | None = None,
    horizon: float = DEFAULT_HORIZON,
    trace: str | None = None,
) -> int:
    """Load ``snapshot``, apply ``change``, print the rollout (``trace``: recording it); 0 when every
    InferenceService of the change was Ready on its new spec within ``horizon`` seconds, else 1.

    :class:`ManifestRefused` when the simulated API server refuses an object of either file."""
    if change.nodes:
        node = change.nodes[0]["metadata"]["name"]
        raise ManifestRefused(
            f"{change.source}: Node {node}: with --cluster the nodes are the snapshot's; leave Nodes out of the change"
        )
    report = Report("what-if", trace=trace)
    sim = report.simulation(ready_after=ready_after, node_layout=[], termination_seconds=stop_after)
    try:
        loaded = load_snapshot(sim, snapshot)
        sim.clear_timeline()
        start = sim.now
        sim.note(f"what-if: kubectl apply -f {change.source}")
        services = _services(change)
        watch = RolloutWatch(sim, services=services, start=start)
        for obj in change.objects:
            apply_object(sim, obj, change.source)
        run_watched(sim, watch, until=start + horizon)
    finally:
        report.close()
    print(f"snapshot {snapshot.source}: {counted(snapshot.counts)}", file=out)
    for line in snapshot.notes:
        print(f"  {line}", file=out)
    print("before the change (as loaded in the simulator):", file=out)
    for line in loaded:
        print(f"  {line}", file=out)
    print(f"the change, {change.source} (time 0; pods ready {ready_after:g} s after binding):", file=out)
    for entry in sim.timeline:
        print(f"[{entry.time - start:6.1f}s] {entry.text}", file=out)
    end = sim.now - start
    if any(c.ready_at is None for c in watch.capacity.values()):
        end = horizon
    finished = 0
    for key in services:
        finished += _summary(sim, watch, key, end=end, horizon=horizon, out=out)
    waited = [p for p in watch.pending if p.owner not in services]
    if waited:
        print("other pods that waited for room:", file=out)
        _print_pending(waited, end=end, out=out)
    print("pods at the end:", file=out)
    print_pods(sim, out)
    return 0 if finished == len(services) else 1


def _services(change: Manifest) -> dict[str, int]:
    """``namespace/name`` → spec.replicas of each InferenceService of the change."""
    out: dict[str, int] = {}
    for obj in change.inference_services:
        meta = obj["metadata"]
        out[key_of(meta.get("namespace") or "default", meta["name"])] = int((obj.get("spec") or {}).get("replicas", 1))
    return out


def _summary(sim: Simulation, watch: RolloutWatch, key: str, *, end: float, horizon: float, out: TextIO) -> bool:
    capacity = watch.capacity[key]
    print(f"{key}:", file=out)
    pending = [p for p in watch.pending if p.owner == key]
    if pending:
        print(f"  pods that went Pending: {len(pending)}", file=out)
        _print_pending(pending, end=end, out=out)
    else:
        print("  pods that went Pending: none", file=out)
    low, lasted, since = capacity.lowest(end=end)
    below = capacity.below(end=end)
    if below:
        print(
            f"  serving: lowest {low}/{capacity.wanted} pods, for {lasted:g} s (first at {since:g} s); "
            f"fewer than {capacity.wanted} for {below:g} s in all",
            file=out,
        )
    else:
        print(f"  serving: {low}/{capacity.wanted} pods or more throughout", file=out)
    if capacity.ready_at is not None:
        print(f"  finished: Ready on the new spec at {capacity.ready_at:g} s", file=out)
    else:
        print(f"  finished: no, not Ready on the new spec within {horizon:g} s", file=out)
    changes = ", ".join(f"{verdict} at {t:g} s" for t, verdict in capacity.verdicts)
    print(f"  status over time: {changes or 'not observed on the new generation'}", file=out)
    namespace, _, name = key.partition("/")
    obj = sim.get(KIND, namespace, name) or {}
    status: Obj = obj.get("status") or {}
    print(
        f"  status at the end: phase={status.get('phase')} ready={status.get('readyReplicas')}/{capacity.wanted}",
        file=out,
    )
    ready_message = ""
    for c in status.get("conditions") or ():
        if c.get("type") == "Ready":
            ready_message = str(c.get("message") or "")
            print(f"    Ready={c.get('status')} {c.get('reason')}: {ready_message}", file=out)
    rollout: Obj = status.get("rollout") or {}
    if rollout:
        numbers = " ".join(f"{k}={rollout[k]}" for k in ROLLOUT_NUMBERS if k in rollout)
        message = str(rollout.get("message") or "")
        said = "(its message is Ready's, above)" if message and message in ready_message else message
        print(f"    rollout: {numbers}: {said}", file=out)
    return capacity.ready_at is not None


def _print_pending(pending: list[PendingPod], *, end: float, out: TextIO) -> None:
    for pod in pending:
        until = f"until {pod.until:g} s" if pod.until is not None else f"still at {end:g} s"
        print(f"    {pod.name} from {pod.since:g} s {until}: {pod.message}", file=out)
