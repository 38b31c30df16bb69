"""``run``'s first step: find the cluster KUBECONFIG (or the pod's service account) names, or say why not.

Why this exists: handed a cluster it cannot reach, Kopf retries forever, each attempt a
traceback in the log, and the process looks alive. On a workstation that is a hang; in a pod
it hides the failure behind a Running container. So before Kopf starts, ``run`` loads the
client configuration (a missing, unreadable or malformed kubeconfig is one line, exit code 2)
and asks the API server for ``/version`` until it answers or ``connect_timeout`` has passed,
printing one line per failed attempt; then it gives up with one line and exit code 1. In a pod
the kubelet then restarts it with back-off (CrashLoopBackOff, the reason in the log's last
line), which is the signal a platform engineer looks for; a short retry window still rides
out an API server that is restarting while the operator starts.

It connects nowhere but the server the configuration names (``kubeconfig.py`` reads the
kubeconfig files as bounded input: regular files, at most 4 MiB, YAML without alias bombs).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from inference_operator.kube.transport import Transport

__all__ = [
    "ClusterUnreachable",
    "NoAnswer",
    "Preflight",
    "one_attempt",
    "version_probe",
    "wait_for_cluster",
]


class ClusterUnreachable(RuntimeError):
    """The API server did not answer within the wait; one line naming it (exit code 1)."""


@dataclass
class Preflight:
    """What was found: the API server's URL and the version it reported."""

    host: str
    version: str


RETRY_AFTER_MAX = 10
"""The longest ``Retry-After`` pause honoured inside a request (urllib3 would wait up to 6 hours)."""


def one_attempt() -> Any:
    """urllib3's retry policy for every request: one attempt within its timeout.

    Left at urllib3's default, a request that timed out or lost its connection is sent again up
    to three times, a PUT or a DELETE included: a 30 s timeout became two minutes against a hung
    API server, one ``/version`` probe of 5 s became 20, and a write could reach the server twice.
    The callers decide when to try again (the workqueue's backoff, the leader election's retry
    period, the preflight's loop). What stays is what the API server asks for: an answer 429 or
    503 with ``Retry-After`` (priority and fairness shedding load; nothing was done) is retried,
    for every verb, after that pause (at most ``RETRY_AFTER_MAX``) and with a fresh timeout, at
    most three times, as client-go does; the fourth such answer is the request's result. A
    redirect is not followed: it is returned, and the client reports it as an error."""
    import urllib3

    return urllib3.util.Retry(
        total=3,
        connect=0,
        read=0,
        other=0,
        redirect=False,
        status=3,
        allowed_methods=None,
        retry_after_max=RETRY_AFTER_MAX,
    )


def _why(err: BaseException) -> str:
    """The root cause of a failed request, in a few words (``connection refused``)."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        reason = getattr(cause, "reason", None)
        if isinstance(reason, BaseException):
            cause = reason
            continue
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        nxt = cause.__cause__ or cause.__context__
        if nxt is None:
            break
        cause = nxt
    text = " ".join(str(cause or err).split())
    if "Connection refused" in text:
        return "connection refused"
    return text[:200] or type(err).__name__


class NoAnswer(Exception):
    """A probe of the API server got no answer; the message says why in a few words."""


def version_probe(transport: Transport, *, attempt_timeout: float = 5.0) -> Callable[[], str]:
    """A probe for :func:`wait_for_cluster`: GET ``/version`` once through ``transport``.

    An HTTP error (401, 403) is an answer: the cluster is there, and Kopf's own error will name
    the credentials problem. No answer at all raises :class:`NoAnswer`; credentials that cannot
    be had (the token file, the exec plugin) raise the loader's ``KubeconfigError``."""
    import urllib3

    from inference_operator.kube.kubeconfig import KubeconfigError

    def probe() -> str:
        try:
            answer = transport.request("GET", "/version", timeout=(attempt_timeout, attempt_timeout))
        except KubeconfigError:  # the token file or the exec plugin failed: no retry mends that
            raise
        except (OSError, ValueError, urllib3.exceptions.HTTPError) as err:  # no answer at all
            raise NoAnswer(_why(err)) from None
        if answer.status >= 300:  # an HTTP answer: someone is there
            return f"(HTTP {answer.status})"
        try:
            return str(json.loads(answer.data).get("gitVersion") or "")
        except (ValueError, AttributeError):
            return ""

    return probe


def wait_for_cluster(
    host: str,
    probe: Callable[[], str],
    *,
    connect_timeout: float,
    say: Callable[[str], None],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Preflight:
    """Probe the API server at ``host`` until it answers, at most ``connect_timeout`` seconds
    (0: once), pausing 1, 2, 4, then 5 seconds between attempts.

    Each failed attempt is one line to ``say``; :class:`ClusterUnreachable` at the end."""
    deadline = clock() + connect_timeout
    pause = 1.0
    while True:
        try:
            return Preflight(host, probe())
        except NoAnswer as err:
            why = str(err)
        left = deadline - clock()
        if left <= 0:
            waited = f" for {connect_timeout:g}s" if connect_timeout > 0 else ""
            raise ClusterUnreachable(f"cannot reach the API server at {host}{waited}: {why}")
        say(f"cannot reach the API server at {host}: {why}; retrying for {left:.0f}s more")
        sleep(min(pause, left))
        pause = min(pause * 2, 5.0)
