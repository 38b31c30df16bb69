"""Names: the rules per kind, what makes a name invalid, generateName, and which namespace a body lands in.

Names are where a simulator most easily accepts what a cluster refuses (a Service named ``Web``, a
ConfigMap named ``a_b``) or refuses what it accepts (since Kubernetes 1.36 a Service may be called
``7b``). A generated name is random: the normaliser turns it into its prefix and a placeholder, and
the checks note its shape instead of its value.
"""

from __future__ import annotations

from ..objects import configmap, deployment, isvc, secret, service
from ..recorder import Api
from ..registry import check


def _service(name: str, **metadata: object) -> dict[str, object]:
    """A Service whose selector does not repeat its name (a bad name would make a bad label too)."""
    obj = service(name, **metadata)
    obj["spec"]["selector"] = {"app": "web"}
    return obj


def _generated_shape(name: str, prefix: str) -> dict[str, object]:
    return {"starts with the prefix (cut to 58)": name.startswith(prefix[:58]), "length": len(name)}


@check("names/generate-name-makes-prefix-and-five-characters")
def generate_name(api: Api) -> None:
    made = api.create(configmap("", {"k": "v"}, generateName="gen-"))
    name = made["metadata"]["name"]
    api.note("the generated name", _generated_shape(name, "gen-"))
    api.get("ConfigMap", name)


@check("names/generated-name-serves-later-calls")
def generated_name_later(api: Api) -> None:
    made = api.create(configmap("", {"k": "1"}, generateName="later-"), keep=["metadata.name", "data"])
    name = made["metadata"]["name"]
    api.update({**made, "data": {"k": "2"}}, keep=["metadata.name", "data"])
    api.patch("ConfigMap", name, {"data": {"k": "3"}}, keep=["data"])
    api.list("ConfigMap", keep=["items.0.metadata.name", "items.0.data"])
    api.delete("ConfigMap", name)
    api.wait_gone("ConfigMap", name)


@check("names/name-wins-over-generate-name")
def name_wins(api: Api) -> None:
    api.create(configmap("explicit", generateName="gen-"))
    api.get("ConfigMap", "explicit", keep=["metadata.name", "metadata.generateName"])


@check("names/neither-name-nor-generate-name-is-422")
def no_name(api: Api) -> None:
    api.create(configmap("", {"k": "v"}))
    api.create(secret("", {"k": "v"}, labels={"app": "a"}))


@check("names/generate-name-is-validated-as-a-prefix")
def generate_name_validated(api: Api) -> None:
    api.create(configmap("", generateName="Gen-"))
    api.create(configmap("", generateName="gen_"))
    made = api.create(configmap("", generateName="ends-with-dash-"), keep=["metadata.generateName"])
    api.note("the generated name", _generated_shape(made["metadata"]["name"], "ends-with-dash-"))


@check("names/long-generate-name-is-cut-to-58-characters")
def long_generate_name(api: Api) -> None:
    prefix = "g" * 70
    made = api.create(configmap("", generateName=prefix), keep=["metadata.generateName"])
    api.note("the generated name", _generated_shape(made["metadata"]["name"], prefix))


@check("names/service-generate-name-longer-than-63-is-422")
def service_long_generate_name(api: Api) -> None:
    api.create(_service("", generateName="s" * 64))
    made = api.create(_service("", generateName="s" * 63), keep=["metadata.generateName"])
    api.note("the generated name", _generated_shape(made["metadata"]["name"], "s" * 63))


@check("names/service-generate-name-may-start-with-a-digit")
def service_generate_name_digit(api: Api) -> None:
    made = api.create(_service("", generateName="7-"), keep=["metadata.generateName", "spec.ports"])
    api.note("the generated name", _generated_shape(made["metadata"]["name"], "7-"))


@check("names/service-name-is-an-rfc-1123-label")
def service_name_label(api: Api) -> None:
    api.create(_service("7b"), keep=["metadata.name"])
    api.create(_service("0"), keep=["metadata.name"])
    api.create(_service("a" * 63), keep=["metadata.name"])
    for bad in ("a" * 64, "web.v1", "Web", "web_1", "-web", "web-"):
        api.create(_service(bad))


@check("names/configmap-name-is-an-rfc-1123-subdomain")
def configmap_name_subdomain(api: Api) -> None:
    api.create(configmap("web.v1"), keep=["metadata.name"])
    api.create(configmap("7"), keep=["metadata.name"])
    api.create(configmap("a" * 253), keep=["metadata.name"])
    for bad in ("a" * 254, "Web", "web_1", "web..v1", "-web", "web.", "web v1"):
        api.create(configmap(bad))


@check("names/secret-and-deployment-names-are-rfc-1123-subdomains")
def other_kinds_subdomain(api: Api) -> None:
    api.create(secret("tls.web"), keep=["metadata.name"])
    api.create(deployment("web.v1"), keep=["metadata.name"])
    api.create(secret("Tls"))
    api.create(deployment("web_v1"))


@check("names/namespace-name-is-an-rfc-1123-label")
def namespace_name_label(api: Api) -> None:
    for bad in ("n" * 64, "web.v1", "Web", "web_1", "web-"):
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": bad}})


@check("names/custom-resource-name-is-an-rfc-1123-subdomain")
def custom_resource_name(api: Api) -> None:
    api.create(isvc("Web"))
    api.create(isvc("web_1"))
    api.create(isvc("i" * 254))


@check("names/dot-and-dot-dot-are-invalid")
def dot_names(api: Api) -> None:
    api.create(configmap("."))
    api.create(configmap(".."))
    api.create(secret("."))


@check("names/slash-and-percent-are-invalid")
def slash_percent(api: Api) -> None:
    api.create(configmap("a/b"))
    api.create(configmap("a%b"))
    api.get("ConfigMap", "a%b")
    api.get("ConfigMap", "a/b")
    api.delete("ConfigMap", "a%b")


@check("names/body-namespace-other-than-the-path-is-400")
def namespace_mismatch(api: Api) -> None:
    api.create(configmap("a", namespace="somewhere-else"), namespace=api.ns)
    api.get("ConfigMap", "a")


@check("names/body-without-namespace-lands-in-the-path-namespace")
def namespace_from_path(api: Api) -> None:
    api.create(configmap("a", {"k": "v"}), namespace=api.ns, keep=["metadata.name", "metadata.namespace"])
    api.get("ConfigMap", "a", keep=["metadata.namespace", "data"])


@check("names/cluster-scoped-kind-drops-a-namespace")
def cluster_scoped_namespace(api: Api) -> None:
    name = f"{api.ns}-c"
    api.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "namespace": api.ns}},
        keep=["metadata.name", "metadata.namespace"],
    )
    api.delete("Namespace", name)
