"""The load balancer registry over https with a bearer token, on 127.0.0.1 (openssl makes the certs).

Covers (load balancer credentials): the reference registry serves https with
``tls_cert``/``tls_key`` and requires the token when it has one; the operator's client with the
right CA bundle and token registers, looks up and releases; a wrong or missing token is a
LoadBalancerError naming HTTP 401 and the registry's words, with the token nowhere in it; without
the CA bundle the certificate is refused ("TLS failed", certificate verify failed); a CA bundle
on an http:// URL or an unreadable one is refused at construction; ``registry list`` takes
``--token-file`` and ``--ca-file``, and ``registry serve`` refuses a token file of two lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inference_operator.core.ports import LoadBalancerError
from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry import RegistryServer
from inference_operator.lb.registry.cli import main as registry_main

TOKEN = "s3cr3t-token-for-tests"


@pytest.fixture
def secure(certs: dict[str, Path]) -> Iterator[RegistryServer]:
    server = RegistryServer(token=TOKEN, tls_cert=certs["cert"], tls_key=certs["key"])
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_the_client_with_the_ca_and_the_token_does_everything(secure: RegistryServer, certs: dict[str, Path]) -> None:
    assert secure.url.startswith("https://127.0.0.1:")
    lb = HttpLoadBalancer(secure.url, token=TOKEN, ca_file=str(certs["ca"]))
    registration = lb.register("ns/a", target="a.ns.svc:80")
    assert lb.lookup("ns/a") == registration
    lb.release("ns/a")
    assert lb.lookup("ns/a") is None and secure.registrations() == {}


@pytest.mark.parametrize("token", ["wrong-token", None])
def test_a_wrong_or_missing_token_is_a_401_that_never_shows_the_token(
    secure: RegistryServer, certs: dict[str, Path], token: str | None
) -> None:
    lb = HttpLoadBalancer(secure.url, token=token, ca_file=str(certs["ca"]))
    with pytest.raises(LoadBalancerError, match="HTTP 401") as caught:
        lb.register("ns/a", target="a.ns.svc:80")
    assert "bearer token" in str(caught.value) and TOKEN not in str(caught.value)
    assert secure.registrations() == {}


def test_without_the_ca_bundle_the_registry_certificate_is_refused(secure: RegistryServer) -> None:
    with pytest.raises(LoadBalancerError, match="TLS failed: CERTIFICATE_VERIFY_FAILED"):
        HttpLoadBalancer(secure.url, token=TOKEN).lookup("ns/a")


def test_a_ca_bundle_needs_https_and_a_readable_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only applies to an https"):
        HttpLoadBalancer("http://127.0.0.1:9", ca_file=str(tmp_path / "ca.crt"))
    with pytest.raises(ValueError, match="cannot load the load balancer CA bundle"):
        HttpLoadBalancer("https://127.0.0.1:9", ca_file=str(tmp_path / "missing.crt"))


def test_registry_list_reads_the_token_and_the_ca_from_files(
    secure: RegistryServer, certs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    HttpLoadBalancer(secure.url, token=TOKEN, ca_file=str(certs["ca"])).register("ns/a", target="a.ns.svc:80")
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    args = ["list", "--url", secure.url, "--token-file", str(token_file), "--ca-file", str(certs["ca"])]
    assert registry_main(args) == 0
    assert "ns/a" in capsys.readouterr().out
    token_file.write_text("two\nlines\n")
    assert registry_main(["serve", "--port", "0", "--token-file", str(token_file)]) == 1
    assert "must hold one non-empty line" in capsys.readouterr().err
