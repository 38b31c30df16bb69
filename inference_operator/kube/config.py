"""Operator settings, from environment variables (flags of ``inference-operator run`` set them).

| env var                               | flag              | default  |
|---------------------------------------|-------------------|----------|
| INFERENCE_OPERATOR_WORKERS            | --workers         | 8        |
| INFERENCE_OPERATOR_RESYNC_SECONDS     | --resync-period   | 300      |
| INFERENCE_OPERATOR_REQUEUE_SECONDS    | --requeue-period  | 5        |
| INFERENCE_OPERATOR_LB_PROVIDER        | --lb-provider     | memory   |
| INFERENCE_OPERATOR_LB_URL             | --lb-url          | (none)   |
| INFERENCE_OPERATOR_LB_TIMEOUT         | --lb-timeout      | 5        |
| INFERENCE_OPERATOR_LB_TOKEN           | (none: a secret)  | (none)   |
| INFERENCE_OPERATOR_LB_CA_FILE         | --lb-ca-file      | (system) |
| INFERENCE_OPERATOR_NAMESPACES         | --namespace (rep) | all      |
| INFERENCE_OPERATOR_LOG_FORMAT         | --log-format      | plain    |
| INFERENCE_OPERATOR_METRICS_ADDRESS    | --metrics-address | (off)    |
| INFERENCE_OPERATOR_LEADER_ELECTION    | --leader-election | true     |
| INFERENCE_OPERATOR_READ_CAPACITY      | (none)            | true     |
| INFERENCE_OPERATOR_LEASE_NAMESPACE    | --lease-namespace | POD_NAMESPACE, the pod's, default |
| INFERENCE_OPERATOR_LEASE_NAME         | (none)            | inference-operator (-HASH with NAMESPACES) |
| INFERENCE_OPERATOR_LEASE_DURATION     | (none)            | 15       |
| INFERENCE_OPERATOR_RENEW_DEADLINE     | (none)            | 10       |
| INFERENCE_OPERATOR_RETRY_PERIOD       | (none)            | 2        |
| INFERENCE_OPERATOR_IDENTITY           | --identity        | POD_NAME, else host_random |
| INFERENCE_OPERATOR_TRACE              | --trace           | (off)    |
| INFERENCE_OPERATOR_TRACE_MAX_BYTES    | --trace-max-bytes | 16Mi     |
| INFERENCE_OPERATOR_TRACE_FILES        | --trace-files     | 4        |
| INFERENCE_OPERATOR_CONNECT_TIMEOUT    | --connect-timeout | 30       |
| INFERENCE_OPERATOR_CRASH_AFTER_WRITES | (none: test hook) | 0 (off)  |
| INFERENCE_OPERATOR_CRASH_ON           | (none: test hook) | (any)    |

``TRACE=FILE`` records the control loop (docs/trace-format.md) into a ring of files: ``FILE`` up
to ``TRACE_MAX_BYTES`` (bytes, or with a ``Ki``/``Mi``/``Gi`` suffix), then rotated to ``FILE.1`` …,
at most ``TRACE_FILES`` files in all.

``READ_CAPACITY=false`` stops the cluster-wide watch of Nodes and Pods (for a ClusterRole without
them); so does namespaced mode, which cannot read Nodes. Rollouts then count no free GPUs: an
``Auto`` rollout surges one pod at a time and switches to replacing when one cannot be placed.

``CRASH_AFTER_WRITES=N`` is a test hook, never for production: the process exits (code 137)
right after its Nth mutating call (``inference_operator.kube.crashpoint``), counting only the
calls whose label starts with ``CRASH_ON`` when that is set.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import stat
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from inference_operator.core.bounds import parse_number

ENV_PREFIX = "INFERENCE_OPERATOR_"
SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
LB_PROVIDERS = ("memory", "http")
LOG_FORMATS = ("plain", "full", "json")


class ConfigError(ValueError):
    """A setting has a bad value; the message names the variable and what is allowed."""


def _number(
    env: Mapping[str, str], name: str, default: float, *, minimum: float, maximum: float, integer: bool = False
) -> float:
    """A finite number in ``[minimum, maximum]``: NaN and infinities are refused (NaN passes
    every comparison, and an infinite timeout overflows the first wait that uses it)."""
    raw = env.get(ENV_PREFIX + name)
    if raw is None or raw == "":
        return default
    try:
        return parse_number(raw, low=minimum, high=maximum, integer=integer)
    except ValueError as err:
        raise ConfigError(f"{ENV_PREFIX}{name}={raw!r}: {err}") from None


def _choice(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = env.get(ENV_PREFIX + name) or default
    if value not in allowed:
        raise ConfigError(f"{ENV_PREFIX}{name}={value!r}: must be one of {', '.join(allowed)}")
    return value


def _address(env: Mapping[str, str], name: str) -> str:
    value = env.get(ENV_PREFIX + name) or ""
    if value:
        _, sep, port = value.rpartition(":")
        if not sep or not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535:
            raise ConfigError(f"{ENV_PREFIX}{name}={value!r}: must be HOST:PORT or :PORT, e.g. 0.0.0.0:9090")
    return value


_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_IDENTITY = re.compile(r"^[\x21-\x7e]{1,253}$")


def _check_namespace(name: str, value: str) -> None:
    if not _NAMESPACE.match(value):
        raise ConfigError(
            f"{ENV_PREFIX}{name}={value!r}: {value!r} is not a namespace name (at most 63 lowercase letters, "
            "digits and '-', starting and ending with a letter or digit)"
        )


def _lease_name(env: Mapping[str, str], namespaces: tuple[str, ...]) -> str:
    """The Lease's name: a DNS subdomain, as the API server requires of it. Deployments set it
    explicitly, because the leader-election Role names this one Lease (``resourceNames``)."""
    value = env.get(ENV_PREFIX + "LEASE_NAME") or default_lease_name(namespaces)
    if len(value) > 253 or not _SUBDOMAIN.match(value):
        raise ConfigError(
            f"{ENV_PREFIX}LEASE_NAME={value!r}: must be a Lease name (at most 253 lowercase letters, digits, "
            "'-' and '.', starting and ending with a letter or digit)"
        )
    return value


def _check_url(url: str) -> None:
    """An http(s) URL with a host and, if any, a port in range (urllib raises on a bad port)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as err:
        raise ConfigError(f"{ENV_PREFIX}LB_URL={url!r}: {err}") from None
    if not parts.hostname or any(c.isspace() for c in url):
        raise ConfigError(f"{ENV_PREFIX}LB_URL={url!r}: must name a host, e.g. http://lb-registry:9090")
    if port == 0:
        raise ConfigError(f"{ENV_PREFIX}LB_URL={url!r}: port 0 is no port to connect to")


_SIZE_UNITS = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "K": 10**3, "M": 10**6, "G": 10**9}
MIN_TRACE_BYTES = 1024
MAX_TRACE_BYTES = 2**30
MAX_WORKERS = 256
"""Reconcile threads: each holds a connection; past a few dozen they only contend for the GIL."""
MAX_SECONDS = 86400.0
"""Periods and timeouts: a day at most (an infinite or astronomic wait overflows the thread's wait)."""


def _size(env: Mapping[str, str], name: str, default: int) -> int:
    """A size in bytes: ``1048576``, ``512Ki``, ``16Mi``, ``1G``."""
    raw = (env.get(ENV_PREFIX + name) or "").strip()
    if not raw:
        return default
    number, unit = raw, ""
    for suffix in ("Ki", "Mi", "Gi", "K", "M", "G"):
        if raw.endswith(suffix):
            number, unit = raw[: -len(suffix)], suffix
            break
    if not (number.isascii() and number.isdigit()) or len(number) > 20:
        raise ConfigError(f"{ENV_PREFIX}{name}={raw!r}: must be a whole number of bytes, optionally with Ki, Mi or Gi")
    value = int(number) * _SIZE_UNITS[unit]
    if value < MIN_TRACE_BYTES:
        raise ConfigError(f"{ENV_PREFIX}{name}={raw!r}: must be at least {MIN_TRACE_BYTES} bytes")
    if value > MAX_TRACE_BYTES:
        raise ConfigError(f"{ENV_PREFIX}{name}={raw!r}: must be at most 1Gi")
    return value


def _trace_file(env: Mapping[str, str]) -> str:
    path = (env.get(ENV_PREFIX + "TRACE") or "").strip()
    if path:
        where = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise ConfigError(f"{ENV_PREFIX}TRACE={path!r}: is a directory, give a file name")
        if not os.path.isdir(where) or not os.access(where, os.W_OK):
            raise ConfigError(f"{ENV_PREFIX}TRACE={path!r}: directory {where} does not exist or is not writable")
    return path


def _election_timings(env: Mapping[str, str]) -> dict[str, float]:
    """Lease duration, renew deadline and retry period, which only work in that order: a leader
    must give up (renew deadline) before anyone else may take over (lease duration)."""
    duration = _number(env, "LEASE_DURATION", 15, minimum=1, maximum=3600, integer=True)  # whole seconds in a Lease
    deadline = _number(env, "RENEW_DEADLINE", 10.0, minimum=0.5, maximum=3600)
    retry = _number(env, "RETRY_PERIOD", 2.0, minimum=0.1, maximum=3600)
    if not retry < deadline < duration:
        raise ConfigError(
            f"{ENV_PREFIX}RETRY_PERIOD={retry:g} < {ENV_PREFIX}RENEW_DEADLINE={deadline:g} < "
            f"{ENV_PREFIX}LEASE_DURATION={duration:g} must hold: a leader must stop before another may start"
        )
    return {"lease_duration": duration, "renew_deadline": deadline, "retry_period": retry}


def _own_namespace() -> str:
    """The pod's namespace when running in a cluster, else "default"."""
    try:
        with open(SERVICE_ACCOUNT_NAMESPACE) as f:
            return f.read().strip() or "default"
    except OSError:
        return "default"


def default_lease_name(namespaces: tuple[str, ...]) -> str:
    """One Lease per scope: replicas watching the same namespaces elect among themselves, and an
    operator for other namespaces (another team's install) never waits for them."""
    if not namespaces:
        return "inference-operator"
    digest = hashlib.sha256(",".join(sorted(namespaces)).encode()).hexdigest()[:10]
    return f"inference-operator-{digest}"


def _plain_http_elsewhere(url: str) -> bool:
    """Whether ``url`` is plain http to anywhere but this machine's loopback."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return True
    return url.startswith("http://") and host not in ("127.0.0.1", "::1", "localhost")


def _default_identity() -> str:
    """client-go's default: the host name and a random suffix (two runs on one host differ)."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class OperatorConfig:
    workers: int = 8
    resync_seconds: float = 300.0
    requeue_seconds: float = 5.0
    lb_provider: str = "memory"
    lb_url: str | None = None
    lb_timeout: float = 5.0
    lb_token: str | None = field(default=None, repr=False)
    """Sent as ``Authorization: Bearer``; from a Secret (the chart's ``loadBalancer.tokenSecret``), never logged."""
    lb_ca_file: str | None = None
    """CA bundle (PEM) that the https registry's certificate must chain to; None: the system's."""
    namespaces: tuple[str, ...] = field(default_factory=tuple)
    log_format: str = "plain"
    metrics_address: str = ""
    leader_election: bool = True
    """Only the holder of the Lease writes; other replicas keep their caches warm and wait."""
    lease_namespace: str = "default"
    lease_name: str = "inference-operator"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    read_capacity: bool = True
    """Watch every Node and unfinished Pod (cluster mode only), for the rollouts' GPU count."""
    identity: str = ""
    """This replica's name in the Lease, the logs and the user agent (default: host name + random)."""
    trace_file: str = ""
    """Record the control loop into this ring of files (docs/trace-format.md); empty: off."""
    trace_max_bytes: int = 16 * 2**20
    trace_files: int = 4
    crash_after_writes: int = 0
    crash_on: str = ""
    connect_timeout: float = 30.0
    """``run``: how long to wait for the API server at start before giving up (0: one attempt)."""

    @property
    def reads_capacity(self) -> bool:
        """Nodes and Pods are cached: asked for, and readable (namespaced mode cannot read Nodes)."""
        return self.read_capacity and not self.namespaces

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OperatorConfig:
        env = os.environ if env is None else env
        provider = _choice(env, "LB_PROVIDER", "memory", LB_PROVIDERS)
        url = env.get(ENV_PREFIX + "LB_URL") or None
        if provider == "http" and not url:
            raise ConfigError(f"{ENV_PREFIX}LB_PROVIDER=http needs {ENV_PREFIX}LB_URL (e.g. http://lb-registry:9090)")
        if url and not url.startswith(("http://", "https://")):
            raise ConfigError(f"{ENV_PREFIX}LB_URL={url!r}: must start with http:// or https://")
        if url:
            _check_url(url)
        token = env.get(ENV_PREFIX + "LB_TOKEN") or None
        if token is not None and (token != token.strip() or "\n" in token or "\r" in token):
            raise ConfigError(f"{ENV_PREFIX}LB_TOKEN must be one line without surrounding whitespace")
        if token is not None and url and _plain_http_elsewhere(url):
            raise ConfigError(
                f"{ENV_PREFIX}LB_TOKEN is set, but {ENV_PREFIX}LB_URL={url!r} is plain http:// to another host: "
                "the token would cross the network readable; use https:// (plain http only to 127.0.0.1 or localhost)"
            )
        ca_file = env.get(ENV_PREFIX + "LB_CA_FILE") or None
        if ca_file is not None:
            if not (url or "").startswith("https://"):
                raise ConfigError(f"{ENV_PREFIX}LB_CA_FILE is set, but {ENV_PREFIX}LB_URL is not https://")
            if not os.access(ca_file, os.R_OK):
                raise ConfigError(f"{ENV_PREFIX}LB_CA_FILE={ca_file!r}: no readable file there")
            if not stat.S_ISREG(os.stat(ca_file).st_mode):
                raise ConfigError(f"{ENV_PREFIX}LB_CA_FILE={ca_file!r}: not a regular file")
        namespaces = tuple(n for n in (env.get(ENV_PREFIX + "NAMESPACES") or "").replace(",", " ").split() if n)
        for namespace in namespaces:
            _check_namespace("NAMESPACES", namespace)
        lease_namespace = env.get(ENV_PREFIX + "LEASE_NAMESPACE") or env.get("POD_NAMESPACE") or _own_namespace()
        _check_namespace("LEASE_NAMESPACE", lease_namespace)
        identity = env.get(ENV_PREFIX + "IDENTITY") or env.get("POD_NAME") or _default_identity()
        if not _IDENTITY.match(identity):
            raise ConfigError(
                f"{ENV_PREFIX}IDENTITY={identity!r}: must be 1 to 253 printable characters without spaces "
                "(it goes into the Lease and the User-Agent header)"
            )
        return cls(
            workers=int(_number(env, "WORKERS", 8, minimum=1, maximum=MAX_WORKERS, integer=True)),
            resync_seconds=_number(env, "RESYNC_SECONDS", 300.0, minimum=0, maximum=MAX_SECONDS),
            requeue_seconds=_number(env, "REQUEUE_SECONDS", 5.0, minimum=0.1, maximum=MAX_SECONDS),
            lb_provider=provider,
            lb_url=url,
            lb_timeout=_number(env, "LB_TIMEOUT", 5.0, minimum=0.1, maximum=600),
            lb_token=token,
            lb_ca_file=ca_file,
            namespaces=namespaces,
            log_format=_choice(env, "LOG_FORMAT", "plain", LOG_FORMATS),
            metrics_address=_address(env, "METRICS_ADDRESS"),
            leader_election=_choice(env, "LEADER_ELECTION", "true", ("true", "false")) == "true",
            read_capacity=_choice(env, "READ_CAPACITY", "true", ("true", "false")) == "true",
            lease_namespace=lease_namespace,
            lease_name=_lease_name(env, namespaces),
            **_election_timings(env),
            identity=identity,
            trace_file=_trace_file(env),
            trace_max_bytes=_size(env, "TRACE_MAX_BYTES", 16 * 2**20),
            trace_files=int(_number(env, "TRACE_FILES", 4, minimum=1, maximum=1000, integer=True)),
            crash_after_writes=int(_number(env, "CRASH_AFTER_WRITES", 0, minimum=0, maximum=10**9, integer=True)),
            connect_timeout=_number(env, "CONNECT_TIMEOUT", 30.0, minimum=0, maximum=3600),
            crash_on=env.get(ENV_PREFIX + "CRASH_ON") or "",
        )
