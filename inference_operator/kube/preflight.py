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

It connects nowhere but the server the configuration names. The kubeconfig files are read
as bounded input first (regular files, at most 4 MiB, YAML without alias bombs), since the
client library would read a FIFO or an alias bomb without a limit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from inference_operator.core.files import InputFileError, read_text_file

__all__ = [
    "ClusterUnreachable",
    "KubeconfigError",
    "NoAnswer",
    "Preflight",
    "check_kubeconfig_files",
    "load_client",
    "one_attempt",
    "version_probe",
    "wait_for_cluster",
]

MAX_KUBECONFIG_BYTES = 4 << 20
DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")


class KubeconfigError(ValueError):
    """No usable client configuration; the message names the file or variable (exit code 2)."""


class ClusterUnreachable(RuntimeError):
    """The API server did not answer within the wait; one line naming it (exit code 1)."""


def kubeconfig_paths(env: dict[str, str] | None = None) -> list[str]:
    """The files the client reads: ``KUBECONFIG``'s list, else ``~/.kube/config``."""
    env = dict(os.environ) if env is None else env
    listed = env.get("KUBECONFIG")
    if listed:
        return [p for p in listed.split(os.pathsep) if p]
    return [os.path.expanduser(DEFAULT_KUBECONFIG)]


def check_kubeconfig_files(paths: list[str]) -> None:
    """Each existing kubeconfig is a regular file under the cap and YAML the bounded loader
    reads (the client reads it again, unbounded, after this); :class:`KubeconfigError` if not."""
    from inference_operator.core.boundedyaml import YamlLimitError, load_documents

    for path in paths:
        if not os.path.lexists(path):
            continue
        try:
            text = read_text_file(path, limit=MAX_KUBECONFIG_BYTES)
            documents = list(load_documents(text))
        except InputFileError as err:
            raise KubeconfigError(f"kubeconfig {err}") from None
        except (YamlLimitError, yaml.YAMLError) as err:
            problem = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise KubeconfigError(f"kubeconfig {path}: not valid YAML: {problem}") from None
        if documents and not isinstance(documents[0], dict):
            raise KubeconfigError(f"kubeconfig {path}: not a kubeconfig (the document is no map)")


@dataclass
class Preflight:
    """What was found: the API server's URL and the version it reported."""

    host: str
    version: str


def load_client(*, identity: str = "") -> Any:
    """The ``kubernetes`` ApiClient for in-cluster config or KUBECONFIG; :class:`KubeconfigError`."""
    from kubernetes import client, config

    if "KUBERNETES_SERVICE_HOST" not in os.environ:  # in a pod: the service account, no file
        check_kubeconfig_files(kubeconfig_paths())
    try:
        try:
            config.load_incluster_config()  # type: ignore[no-untyped-call]
        except config.ConfigException:
            config.load_kube_config()  # type: ignore[no-untyped-call]
    except config.ConfigException as err:
        message = " ".join(str(err).split()) or "no configuration found"
        raise KubeconfigError(f"no cluster to run against: {message} (set KUBECONFIG)") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as err:
        message = " ".join(str(err).split()) or type(err).__name__
        raise KubeconfigError(f"kubeconfig {':'.join(kubeconfig_paths())}: cannot use it: {message}") from None
    configuration = client.Configuration.get_default_copy()
    configuration.retries = one_attempt()  # read when the ApiClient builds its pool: set it first
    return client.ApiClient(configuration)


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


def version_probe(api_client: Any, *, attempt_timeout: float = 5.0) -> Callable[[], str]:
    """A probe for :func:`wait_for_cluster`: GET ``/version`` once through ``api_client``.

    An HTTP error (401, 403) is an answer: the cluster is there, and Kopf's own error will name
    the credentials problem. No answer at all raises :class:`NoAnswer`."""
    import urllib3
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    def probe() -> str:
        try:
            info = client.VersionApi(api_client).get_code(_request_timeout=(attempt_timeout, attempt_timeout))
        except ApiException as err:
            if err.status:  # an HTTP answer: someone is there
                return f"(HTTP {err.status})"
            raise NoAnswer(_why(err)) from None
        except (OSError, ValueError, urllib3.exceptions.HTTPError) as err:  # no answer at all
            raise NoAnswer(_why(err)) from None
        return str(getattr(info, "git_version", "") or "")

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
