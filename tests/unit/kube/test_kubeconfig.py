"""Where the operator's credentials come from: the pod's service account or the kubeconfig files.

Covers: in a pod (host, port and a mounted token) the service's address (IPv6 in brackets),
the mounted CA and namespace, and the token file read again after a minute, not before; not in
a pod without all three. Kubeconfig files merge as kubectl merges them (the first file to name
a context, cluster, user or current context wins), relative paths resolve against the file
that names them, ``*-data`` fields are base64 of PEM. A kubeconfig that cannot be used is one
error naming the file and the field: no current context (naming KUBECONFIG), a context naming a
cluster that is not there, a server that is no URL, an ``auth-provider`` user, a certificate
without its key, data that is not base64. An exec plugin is run without a terminal, with
``KUBERNETES_EXEC_INFO`` and its own env, and run again only once its credential expired; a
plugin that fails or prints no ExecCredential is named with its exit code and words. The
transport sends the token (or basic credentials) and the user agent; Kopf logs in with the same
credentials (``operator.connection_info``); tools and tests send a user agent of their own, which the
audit log never counts as the operator's.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from inference_operator.kube.kubeconfig import (
    KubeconfigError,
    from_kubeconfig,
    in_cluster,
    load_credentials,
    read_kubeconfigs,
)
from inference_operator.kube.transport import Transport
from inference_operator.operator import connection_info

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def kubeconfig(path: Path, *, current: str | None = "main", **sections: Any) -> Path:
    document: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", **sections}
    if current:
        document["current-context"] = current
    path.write_text(json.dumps(document))
    return path


def one(path: Path, *, user: dict[str, Any], cluster: dict[str, Any] | None = None) -> Path:
    return kubeconfig(
        path,
        clusters=[{"name": "c", "cluster": cluster or {"server": "https://127.0.0.1:6443"}}],
        users=[{"name": "u", "user": user}],
        contexts=[{"name": "main", "context": {"cluster": "c", "user": "u", "namespace": "team"}}],
    )


def load(*paths: Path) -> Any:
    return load_credentials({"KUBECONFIG": os.pathsep.join(map(str, paths))})


# -- in a pod ------------------------------------------------------------------------------------


def test_in_a_pod_the_service_account_is_used_and_its_token_read_again_after_a_minute(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("first\n")
    (tmp_path / "ca.crt").write_text(PEM)
    (tmp_path / "namespace").write_text("ops")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    found = in_cluster(env, account=str(tmp_path))
    assert found is not None
    now = [0.0]
    found.clock = lambda: now[0]
    assert (found.server, found.ca_data, found.namespace) == ("https://[fd00::1]:443", PEM, "ops")
    assert found.token() == "first"
    (tmp_path / "token").write_text("rotated")
    now[0] = 59.0
    assert found.token() == "first", "read once a minute, not on every request"
    now[0] = 60.0
    assert found.token() == "rotated"


@pytest.mark.parametrize("missing", ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "token"])
def test_not_in_a_pod_without_host_port_and_token(tmp_path: Path, missing: str) -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    env.pop(missing, None)
    if missing != "token":
        (tmp_path / "token").write_text("t")
    assert in_cluster(env, account=str(tmp_path)) is None


# -- kubeconfig ----------------------------------------------------------------------------------


def test_files_merge_as_kubectl_merges_them_and_paths_are_the_files_own(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ca.pem").write_text(PEM)
    first = kubeconfig(
        tmp_path / "a" / "config",
        current="main",
        clusters=[{"name": "c", "cluster": {"server": "https://first:6443/", "certificate-authority": "ca.pem"}}],
        contexts=[{"name": "main", "context": {"cluster": "c", "user": "u"}}],
    )
    second = kubeconfig(
        tmp_path / "second",
        current="other",
        clusters=[{"name": "c", "cluster": {"server": "https://second:6443"}}],
        users=[{"name": "u", "user": {"token": "from-second"}}],
        contexts=[{"name": "main", "context": {"cluster": "nowhere"}}],
    )
    found = load(tmp_path / "missing", first, second)
    assert (found.server, found.ca_data, found.token()) == ("https://first:6443", PEM, "from-second")
    assert found.source == f"kubeconfig {first}, context main"


def test_data_fields_are_base64_of_pem(tmp_path: Path) -> None:
    path = one(
        tmp_path / "config",
        user={"client-certificate-data": b64("CERT"), "client-key-data": b64("KEY")},
        cluster={"server": "https://h:1", "certificate-authority-data": b64(PEM)[:8] + "\n " + b64(PEM)[8:]},
    )
    found = load(path)
    assert (found.client_certificate(), found.ca_data) == (("CERT", "KEY"), PEM), "line breaks in data are allowed"
    assert found.token() is None and found.namespace == "team"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"current": None}, r"no cluster to run against: kubeconfig .* has no current-context \(set KUBECONFIG\)"),
        ({"current": "elsewhere"}, "current-context 'elsewhere' is not among its contexts"),
        ({"cluster": {"server": "127.0.0.1:6443"}}, r"clusters\[c\]\.cluster\.server: '127.0.0.1:6443' is no http"),
        ({"cluster": {}}, r"clusters\[c\]\.cluster\.server: required"),
        ({"user": {"auth-provider": {"name": "oidc"}}}, r"users\[u\]\.user\.auth-provider: not supported; use an exec"),
        ({"user": {"client-certificate-data": b64("C")}}, "needs both client-certificate and client-key"),
        ({"user": {"token": "t", "exec": {"args": ["x"]}}}, r"users\[u\]\.user\.exec\.command: required"),
        (
            {"cluster": {"server": "https://h", "certificate-authority-data": "%%%"}},
            r"certificate-authority-data: not base64",
        ),
        ({"cluster": {"server": "https://h", "certificate-authority": "nothere.pem"}}, "nothere.pem"),
        ({"cluster": {"server": "https://h", "tls-server-name": "api"}}, r"tls-server-name: not supported: Kopf"),
        ({"cluster": {"server": "https://h", "proxy-url": "http://p:3128"}}, r"proxy-url: not supported"),
        ({"cluster": {"server": "https://h", "insecure-skip-tls-verify": "false"}}, "must be true or false"),
        ({"cluster": "oops"}, r"clusters\[c\]\.cluster: must be a map"),
        ({"user": {"exec": {"command": "x", "interactiveMode": "Always"}}}, "Always needs a terminal"),
    ],
)
def test_a_kubeconfig_that_cannot_be_used_is_one_error_naming_the_field(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    path = tmp_path / "config"
    cluster = change.get("cluster", {"server": "https://127.0.0.1:6443"})
    kubeconfig(
        path,
        current=change.get("current", "main"),
        clusters=[{"name": "c", "cluster": cluster}],
        users=[{"name": "u", "user": change.get("user", {"token": "t"})}],
        contexts=[{"name": "main", "context": {"cluster": "c", "user": "u"}}],
    )
    with pytest.raises(KubeconfigError, match=problem):
        load(path)


def test_a_context_naming_a_missing_cluster_says_so(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", contexts=[{"name": "main", "context": {"cluster": "gone"}}])
    with pytest.raises(KubeconfigError, match="names cluster 'gone', which it does not have"):
        load(path)


def test_no_file_at_all_names_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(
        KubeconfigError, match=r"no cluster to run against: not in a pod, and no kubeconfig .*KUBECONFIG"
    ):
        load(tmp_path / "none")


# -- exec plugins --------------------------------------------------------------------------------


def plugin(tmp_path: Path, body: str) -> Path:
    """An executable Python script as the plugin; each run appends a line to ``runs``."""
    script = tmp_path / "plugin"
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"seen = os.environ['KUBERNETES_EXEC_INFO'] + ' ' + os.environ['EXTRA']\n"
        f"open({str(tmp_path / 'runs')!r}, 'a').write(seen + '\\n')\n" + body
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def exec_user(command: str) -> dict[str, Any]:
    return {"exec": {"command": command, "args": ["--flag"], "env": [{"name": "EXTRA", "value": "yes"}]}}


def test_an_exec_plugin_is_run_again_only_once_its_credential_expired(tmp_path: Path) -> None:
    soon = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)).isoformat()
    (tmp_path / "expires").write_text(soon)
    body = (
        f"expires = open({str(tmp_path / 'expires')!r}).read()\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
        " 'status': {'token': 'tok-' + str(len(sys.argv)), 'expirationTimestamp': expires}}))\n"
    )
    script = plugin(tmp_path, body)
    found = load(one(tmp_path / "config", user=exec_user("./plugin")))
    assert found.exec_plugin is not None and found.exec_plugin.command == str(script)
    assert found.token() == "tok-2" and found.token() == "tok-2"
    runs = (tmp_path / "runs").read_text().splitlines()
    assert len(runs) == 1 and '"interactive": false' in runs[0] and runs[0].endswith(" yes")
    assert found.expiration() == datetime.datetime.fromisoformat(soon)
    found._exec = (datetime.datetime.now(datetime.UTC), "old", None)  # it expires now
    assert found.token() == "tok-2" and len((tmp_path / "runs").read_text().splitlines()) == 2


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("sys.stderr.write('login required\\n'); sys.exit(3)", "failed with exit code 3: login required"),
        ("print('not json')", "printed no ExecCredential"),
        ("print(json.dumps({'status': 'ok'}))", "printed no ExecCredential"),
        ("print(json.dumps({'status': {}}))", "its ExecCredential has neither status.token nor a client certificate"),
    ],
)
def test_an_exec_plugin_that_fails_is_named_with_what_it_said(tmp_path: Path, body: str, problem: str) -> None:
    plugin(tmp_path, body)
    found = load(one(tmp_path / "config", user=exec_user("./plugin")))
    with pytest.raises(KubeconfigError, match=rf"users\[u\]\.user: exec plugin '.*/plugin':? {problem}"):
        found.token()


# -- who the requests say they are ---------------------------------------------------------------


def test_the_transport_sends_the_token_or_basic_credentials_and_the_user_agent(tmp_path: Path) -> None:
    token = Transport(load(one(tmp_path / "a", user={"token": "abc"})), user_agent="me/1")
    assert token.headers() == {"User-Agent": "me/1", "Authorization": "Bearer abc"}
    basic = Transport(load(one(tmp_path / "b", user={"username": "ann", "password": "pw"})), user_agent="me/1")
    assert basic.headers()["Authorization"] == f"Basic {b64('ann:pw')}"
    nobody = Transport(load(one(tmp_path / "c", user={})), user_agent="me/1")
    assert "Authorization" not in nobody.headers()


def test_kopf_logs_in_with_the_same_credentials(tmp_path: Path) -> None:
    path = one(
        tmp_path / "config",
        user={"token": "abc", "client-certificate-data": b64("CERT"), "client-key-data": b64("KEY")},
        cluster={"server": "https://h:1", "certificate-authority-data": b64(PEM)},
    )
    info = connection_info(from_kubeconfig(read_kubeconfigs([str(path)]), "here"))
    assert (info.server, info.token, info.ca_data, info.default_namespace) == (
        "https://h:1",
        "abc",
        PEM.encode(),
        "team",
    )
    assert (info.certificate_data, info.private_key_data, info.insecure) == (b"CERT", b"KEY", None)


def test_tools_are_never_counted_as_the_operator_in_the_audit_log(tmp_path: Path) -> None:
    from inference_operator.kube.client import KubeClient
    from tests.e2e.harness import OPERATOR_USER_AGENT

    path = one(tmp_path / "config", user={"token": "t"})
    tool = KubeClient.from_kubeconfig(str(path)).transport.user_agent
    replica = KubeClient.from_credentials(load(path), identity="pod-1").transport.user_agent
    assert not tool.startswith(OPERATOR_USER_AGENT)
    assert replica.startswith(OPERATOR_USER_AGENT) and replica.endswith(" (pod-1)")


def counting_plugin(tmp_path: Path) -> Path:
    """A plugin whose token counts its runs (tok-1, tok-2, ...), with no expiry; it echoes the
    cluster it was told of as its client certificate's first line."""
    body = (
        f"runs = len(open({str(tmp_path / 'runs')!r}).read().splitlines())\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "print(json.dumps({'status': {'token': f'tok-{runs}', 'clusterInfo': info['spec'].get('cluster')}}))\n"
    )
    return plugin(tmp_path, body)


def test_a_refused_token_is_fetched_again_once_and_only_if_it_is_the_current_one(tmp_path: Path) -> None:
    counting_plugin(tmp_path)
    found = load(one(tmp_path / "config", user=exec_user("./plugin")))
    assert found.token() == "tok-1" and found.token() == "tok-1", "no expiry: kept"
    found.refused("tok-0")  # an older token's 401, answered after the refresh: nothing to do
    assert found.token() == "tok-1"
    found.refused("tok-1")
    found.refused("tok-1")  # another request sent with it: still one run more
    assert found.token() == "tok-2" and found.token() == "tok-2"
    found.refresh()
    assert found.token() == "tok-3"


def test_the_plugin_is_told_of_the_cluster_only_when_it_asks(tmp_path: Path) -> None:
    counting_plugin(tmp_path)
    user = exec_user("./plugin")
    cluster = {"server": "https://h:1", "certificate-authority-data": b64(PEM)}
    load(one(tmp_path / "a", user=user, cluster=cluster)).token()
    user["exec"]["provideClusterInfo"] = True
    load(one(tmp_path / "b", user=user, cluster=cluster)).token()
    told = [json.loads(line.rsplit(" ", 1)[0])["spec"] for line in (tmp_path / "runs").read_text().splitlines()]
    assert told[0] == {"interactive": False}
    assert told[1]["cluster"] == {"server": "https://h:1", "certificate-authority-data": b64(PEM)}


class Refusing:
    """A pool whose server answers 401 to everything."""

    def request(self, *_: Any, **__: Any) -> Any:
        class Response:
            status, data = 401, b'{"reason": "Unauthorized"}'

        return Response()


def test_an_answer_401_makes_the_transport_fetch_the_token_again(tmp_path: Path) -> None:
    counting_plugin(tmp_path)
    transport = Transport(load(one(tmp_path / "config", user=exec_user("./plugin"))), user_agent="me/1")
    transport.pool = Refusing()  # type: ignore[assignment]
    assert transport.request("GET", "/version").status == 401  # sent with tok-1
    assert transport.headers()["Authorization"] == "Bearer tok-2"


def test_kopf_is_told_when_an_exec_credential_expires(tmp_path: Path) -> None:
    expires = "2099-01-02T03:04:05Z"
    plugin(tmp_path, f"print(json.dumps({{'status': {{'token': 't', 'expirationTimestamp': {expires!r}}}}}))\n")
    info = connection_info(load(one(tmp_path / "config", user=exec_user("./plugin"))))
    assert info.token == "t" and info.expiration == datetime.datetime(2099, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def test_a_login_that_cannot_get_credentials_is_tried_again_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kopf

    from inference_operator import operator

    plugin(tmp_path, "sys.stderr.write('expired session\\n'); sys.exit(1)\n")
    monkeypatch.setenv("KUBECONFIG", str(one(tmp_path / "config", user=exec_user("./plugin"))))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setattr(operator, "_runtime", None)
    with pytest.raises(kopf.TemporaryError, match=r"Cannot log in \(attempt 3\): .*expired session") as caught:
        operator.login(retry=2)
    assert caught.value.delay == operator.LOGIN_RETRY_SECONDS


def test_each_login_after_the_first_fetches_the_token_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from inference_operator import operator

    counting_plugin(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(one(tmp_path / "config", user=exec_user("./plugin"))))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    credentials = load_credentials()

    class Runtime:
        class client:
            class transport:
                pass

    Runtime.client.transport.credentials = credentials  # type: ignore[attr-defined]
    monkeypatch.setattr(operator, "_runtime", Runtime)
    monkeypatch.setattr(operator, "_logins", 0)
    assert operator.login().token == "tok-1"  # what startup loaded: not run again
    assert operator.login().token == "tok-2"  # Kopf asks again after a 401: run again
