"""Guards around the load balancer registry and its client, checked at construction (no sockets).

Covers: a bearer token is refused with a plain
``http://`` registry URL unless the registry is on this machine's loopback (127.0.0.1, ::1,
localhost), by the client and by the operator's configuration alike, naming the variable; the
reference registry refuses ``tls_key`` without ``tls_cert`` (it used to serve plain http
silently) and serves its fault-injection endpoint only on a loopback address or with a token.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_operator.kube.config import ConfigError, OperatorConfig
from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry import RegistryServer


@pytest.mark.parametrize("url", ["http://lb-registry:9090", "http://10.0.0.5:9090", "http://127.0.0.1.nip.io:80"])
def test_a_token_over_plain_http_to_another_host_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="a bearer token needs an https:// load balancer URL"):
        HttpLoadBalancer(url, token="t0k")
    with pytest.raises(ConfigError, match="INFERENCE_OPERATOR_LB_TOKEN is set, but INFERENCE_OPERATOR_LB_URL="):
        OperatorConfig.from_env({"INFERENCE_OPERATOR_LB_URL": url, "INFERENCE_OPERATOR_LB_TOKEN": "t0k"})


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9090", "http://localhost:9090", "http://[::1]:9090", "https://lb.example:8443"]
)
def test_a_token_to_loopback_or_over_https_is_accepted(url: str) -> None:
    HttpLoadBalancer(url, token="t0k")
    assert OperatorConfig.from_env({"INFERENCE_OPERATOR_LB_URL": url, "INFERENCE_OPERATOR_LB_TOKEN": "t0k"}).lb_token


def test_plain_http_without_a_token_stays_allowed() -> None:
    HttpLoadBalancer("http://lb-registry:9090")


def test_the_registry_refuses_a_tls_key_without_its_certificate(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"TLS key was given without its certificate \(--tls-cert\)"):
        RegistryServer(tls_key=tmp_path / "server.key")


@pytest.mark.parametrize(
    ("host", "token", "served"),
    [
        ("127.0.0.1", None, True),
        ("::1", None, True),
        ("localhost", None, True),
        ("0.0.0.0", None, False),
        ("10.0.0.5", None, False),
        ("0.0.0.0", "s3cret", True),
    ],
)
def test_the_fault_endpoint_is_served_only_on_loopback_or_with_a_token(
    host: str, token: str | None, served: bool
) -> None:
    assert RegistryServer(host, token=token).fault_endpoint is served
