"""The flight recorder's seam: what the control loop tells a ``Tracer``, and the recorder.

The trace shows, step by step, what the operator saw, decided and wrote (the format is in
``docs/trace-format.md``). It is recorded by the code that does the work, on both backends:

- watch events, where each backend's wiring turns one into a workqueue key (:meth:`Tracer.event`);
- the workqueue's own hooks: every accepted add, delay and rate-limited retry (``queuehooks.QueueTrace``);
- the controller: each dequeue with a snapshot of the queue, and how each pass ended;
- the reconciler: its four phases (observe, diff, act, status) with what each saw and decided;
- the Backend and the load balancer (``tracedio``): every write with its result;
- on the simulator only, the platform: the Deployment controller's status moves and the garbage collector;
- on the simulated cluster, each change of a Node's or Pod's capacity facts (:meth:`Tracer.cluster`).

The default is :data:`NULL_TRACER`, whose ``enabled`` is False: call sites test it before
building anything, so tracing off costs one attribute read per step. :class:`Recorder` turns
the calls into records (plain dicts, values redacted) and hands them to a sink (``tracesink``).
"""

from __future__ import annotations

import datetime
import itertools
import threading
from collections import OrderedDict
from typing import Any, Protocol

from inference_operator import __version__
from inference_operator.core.clock import Clock, format_timestamp
from inference_operator.core.objects import Obj
from inference_operator.core.text import cut
from inference_operator.trace.redact import redact, redact_at

__all__ = [
    "FORMAT",
    "NULL_TRACER",
    "READABLE_VERSIONS",
    "VERSION",
    "NullTracer",
    "Recorder",
    "Sink",
    "Tracer",
]

FORMAT = "inference-operator-trace"
VERSION = 2
"""Version 2 added the ``node`` and ``pod`` records; a version-1 trace reads the same without them."""
READABLE_VERSIONS = (1, 2)
PHASES = ("observe", "diff", "act", "status")
"""The four phases of the control loop: observe → diff → act → update status (docs/trace-format.md)."""
MAX_ERROR = 4096  # characters of a write's error kept: the answer of another system, not ours to size
_LINKS_KEPT = 10_000  # write resourceVersions remembered for linking, oldest forgotten first


class Tracer(Protocol):
    """Told what the control loop does. ``enabled`` False: nobody listens, call nothing else."""

    enabled: bool

    def event(self, kind: str, type_: str, obj: Obj, *, enqueued: str | None) -> None:
        """A watch event arrived (``enqueued``: the key it queued, None: ignored)."""
        ...

    def queued(self, key: str, *, how: str, delay: float = 0.0, retries: int = 0) -> None:
        """The workqueue accepted ``key`` (``how``: add, after, rate_limited)."""
        ...

    def dequeued(self, controller: str, key: str, *, retries: int, queue: Obj) -> None:
        """A worker took ``key``; a pass starts (``queue``: what was left, see QueueContents)."""
        ...

    def phase(self, name: str, key: str, data: Obj) -> None:
        """The reconciler went through ``name`` (one of :data:`PHASES`) and saw or decided ``data``."""
        ...

    def write(self, verb: str, kind: str, key: str, *, rv: str | None, error: BaseException | None, detail: Obj) -> str:
        """A write (API or load balancer) was answered; returns the write's id."""
        ...

    def finished(self, controller: str, key: str, *, outcome: str, requeue_after: float | None, error: str) -> None:
        """The pass over ``key`` ended (controller-runtime's result name)."""
        ...

    def platform(self, actor: str, action: str, kind: str, key: str, *, rv: str | None, detail: Obj) -> str:
        """The simulated platform moved (Deployment controller, garbage collector, a user); returns its id."""
        ...

    def cluster(self, kind: str, name: str, *, change: str, state: Obj) -> None:
        """A simulated cluster's ``node`` (by name) or ``pod`` (``namespace/name``) was added,
        changed or deleted; ``state``: what capacity depends on (``sim/cluster/capacity.py``)."""
        ...

    def note(self, text: str) -> None:
        """Free text for people (a scenario's ``kubectl`` step)."""
        ...

    def close(self) -> None: ...


class NullTracer:
    """Records nothing; the default. Its methods exist so that a forgotten guard is harmless."""

    enabled = False

    def event(self, kind: str, type_: str, obj: Obj, *, enqueued: str | None) -> None:
        return None

    def queued(self, key: str, *, how: str, delay: float = 0.0, retries: int = 0) -> None:
        return None

    def dequeued(self, controller: str, key: str, *, retries: int, queue: Obj) -> None:
        return None

    def phase(self, name: str, key: str, data: Obj) -> None:
        return None

    def write(self, verb: str, kind: str, key: str, *, rv: str | None, error: BaseException | None, detail: Obj) -> str:
        return ""

    def finished(self, controller: str, key: str, *, outcome: str, requeue_after: float | None, error: str) -> None:
        return None

    def platform(self, actor: str, action: str, kind: str, key: str, *, rv: str | None, detail: Obj) -> str:
        return ""

    def cluster(self, kind: str, name: str, *, change: str, state: Obj) -> None:
        return None

    def note(self, text: str) -> None:
        return None

    def close(self) -> None:
        return None


NULL_TRACER: Tracer = NullTracer()


class Sink(Protocol):
    """Where records go (``tracesink``: a file, a ring of files, a list)."""

    def write(self, record: Obj) -> None: ...
    def close(self) -> None: ...


def _redact_field(entry: Any) -> Any:
    """A diff's ``{path, desired, live}`` with both values redacted as what the path names."""
    if not (isinstance(entry, dict) and isinstance(entry.get("path"), str)):
        return entry
    return {k: redact_at(entry["path"], v) if k in ("desired", "live") else v for k, v in entry.items()}


# -- the recorder -------------------------------------------------------------------------------


class Recorder:
    """A :class:`Tracer` that writes records to a :class:`Sink`; thread-safe.

    Each record gets ``seq`` (its order), ``t`` (seconds on the clock since the recording
    started: fake seconds on the simulator, monotonic ones on a cluster) and ``type``; records
    made during a pass carry its ``pass`` number. A write remembers the resourceVersion it
    returned, so the watch event with that version names the write as its ``cause``.
    """

    enabled = True

    def __init__(self, sink: Sink, clock: Clock, *, backend: str, origin: float | None = None) -> None:
        self._sink = sink
        self._clock = clock
        self._origin = clock.now() if origin is None else origin
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._passes = itertools.count(1)
        self._ids = itertools.count(1)
        self._local = threading.local()
        self._links: OrderedDict[tuple[str, str, str], str] = OrderedDict()  # → the write's id
        self._early: OrderedDict[tuple[str, str, str], int] = OrderedDict()  # → seq of an unexplained event
        self._closed = False
        self.records = 0
        started: datetime.datetime = clock.wall()
        self._emit(
            {
                "type": "header",
                "format": FORMAT,
                "version": VERSION,
                "backend": backend,
                "started": format_timestamp(started),
                "clock": "fake" if backend == "simulator" else "monotonic",
                "operatorVersion": __version__,
                "phases": list(PHASES),
            }
        )

    # -- plumbing --

    def _emit(self, record: Obj) -> Obj:
        with self._lock:
            return self._emit_locked(record)

    def _emit_locked(self, record: Obj) -> Obj:
        if self._closed:
            return record
        # Every record is redacted here, once, whatever made it: no caller can forget.
        record = {"seq": next(self._seq), "t": round(self._clock.now() - self._origin, 6), **redact(record)}
        self.records += 1
        self._sink.write(record)
        return record

    def _in_pass(self, record: Obj) -> Obj:
        current = getattr(self._local, "pass_", None)
        if current is not None:
            record["pass"] = current
        return self._emit(record)

    def _link(self, record: Obj, kind: str, key: str, rv: str | None, id_: str) -> None:
        """Remember the version a write produced for the event it will cause; or, when that
        event came first, name it in the write's record (``event``: its ``seq``)."""
        if not rv:
            return
        with self._lock:
            early = self._early.pop((kind, key, rv), None)
            if early is not None:
                record["event"] = early
                return
            self._links[(kind, key, rv)] = id_
            while len(self._links) > _LINKS_KEPT:
                self._links.popitem(last=False)

    # -- Tracer --

    def event(self, kind: str, type_: str, obj: Obj, *, enqueued: str | None) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        rv = str(meta.get("resourceVersion") or "")
        record: Obj = {"type": "event", "kind": kind, "event": type_, "key": key, "rv": rv, "enqueued": enqueued}
        if kind == "InferenceService":
            record["generation"] = meta.get("generation")
        with self._lock:  # one step: a write answered meanwhile finds either its link or this event
            cause = self._links.pop((kind, key, rv), None)
            if cause is not None:
                record["cause"] = cause
            emitted = self._emit_locked(record)
            if cause is None and rv and "seq" in emitted:  # the watch may deliver before the write's answer
                self._early[(kind, key, rv)] = emitted["seq"]
                while len(self._early) > _LINKS_KEPT:
                    self._early.popitem(last=False)

    def queued(self, key: str, *, how: str, delay: float = 0.0, retries: int = 0) -> None:
        record: Obj = {"type": "enqueue", "key": key, "how": how}
        if how != "add":
            record["delay"] = round(delay, 6)
            record["due"] = round(self._clock.now() - self._origin + delay, 6)
        if retries:
            record["retries"] = retries
        self._in_pass(record)

    def dequeued(self, controller: str, key: str, *, retries: int, queue: Obj) -> None:
        number = next(self._passes)
        self._local.pass_ = number
        self._emit(
            {
                "type": "dequeue",
                "controller": controller,
                "key": key,
                "pass": number,
                "retries": retries,
                "queue": queue,
            }
        )

    def phase(self, name: str, key: str, data: Obj) -> None:
        clean: Obj = dict(data)
        if isinstance(data.get("fields"), list):  # a value's path says what it is: redact by path first
            clean["fields"] = [_redact_field(entry) for entry in data["fields"]]
        self._in_pass({"type": "phase", "phase": name, "key": key, **clean})

    def write(self, verb: str, kind: str, key: str, *, rv: str | None, error: BaseException | None, detail: Obj) -> str:
        id_ = f"w{next(self._ids)}"
        record: Obj = {"type": "write", "id": id_, "verb": verb, "kind": kind, "key": key, **detail}
        if error is None:
            record["result"] = "ok"
            if rv:
                record["rv"] = rv
        else:
            record["result"] = "error"
            record["error"] = cut(f"{type(error).__name__}: {error}", MAX_ERROR)
            code = getattr(error, "code", None)
            if isinstance(code, int):
                record["code"] = code
        self._link(record, kind, key, rv if error is None else None, id_)
        self._in_pass(record)
        return id_

    def finished(self, controller: str, key: str, *, outcome: str, requeue_after: float | None, error: str) -> None:
        record: Obj = {"type": "result", "controller": controller, "key": key, "outcome": outcome}
        if requeue_after is not None:
            record["requeueAfter"] = round(requeue_after, 6)
        if error:
            record["error"] = error
        self._in_pass(record)
        self._local.pass_ = None

    def platform(self, actor: str, action: str, kind: str, key: str, *, rv: str | None, detail: Obj) -> str:
        id_ = f"p{next(self._ids)}"
        record: Obj = {"type": "platform", "id": id_, "actor": actor, "action": action, "kind": kind, "key": key}
        if rv:
            record["rv"] = rv
        record.update(detail)
        self._link(record, kind, key, rv, id_)
        self._emit(record)
        return id_

    def cluster(self, kind: str, name: str, *, change: str, state: Obj) -> None:
        # the object is named by ``node`` or ``pod``, not ``key``: a viewer's objects are the operator's
        self._emit({"type": kind, "change": change, kind: name, **state})

    def note(self, text: str) -> None:
        self._emit({"type": "note", "text": text})

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._sink.close()
