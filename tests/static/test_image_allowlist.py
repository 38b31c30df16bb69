"""The image allow-list (deploy/optional/image-allowlist.yaml), statically: its prefixes end in
"/", and its CEL refuses to be misconfigured otherwise; the e2e suite runs it on a real API
server (tests/e2e/test_security.py).

Covers: the prefixes of the shipped file (its ``allowedPrefixes`` variable, evaluated) are a
non-empty list, each ending in "/", as the chart's values must be (tests/static/test_chart_security.py);
its CEL admits an image under a prefix and refuses ``registry.example.com.evil.io/…``; edited
as a user would edit it, to the bare ``registry.example.com`` (or to no prefix at all), the
policy lets nothing through, ``registry.example.com.evil.io/…`` included, and the failing
validation is the one saying the list is misconfigured; the chart renders exactly the shipped
policy for the shipped prefixes.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from inference_operator.api.samples import make_inference_service

from .chartkit import DEPLOY, Obj, Render, only
from .policykit import failing, variables_of

ALLOWLIST = DEPLOY / "optional" / "image-allowlist.yaml"
SHIPPED_PREFIX = "registry.example.com/inference/"
MISCONFIGURED = "size(variables.allowedPrefixes) > 0"  # how the guarding validation's expression starts


def policy(text: str | None = None) -> Obj:
    docs = [d for d in yaml.safe_load_all(ALLOWLIST.read_text() if text is None else text) if d]
    return only(docs, "ValidatingAdmissionPolicy")


def edited(prefixes: str) -> Obj:
    """The shipped policy with its prefix list replaced, wherever the file spells it, as a user
    following the file's comment would."""
    text = ALLOWLIST.read_text()
    assert f"['{SHIPPED_PREFIX}']" in text
    return policy(text.replace(f"['{SHIPPED_PREFIX}']", prefixes))


def refusals(spec: Obj, image: str) -> list[str]:
    return failing(spec, make_inference_service("a", image=image, model="m"))


def test_the_shipped_prefixes_each_end_in_a_slash() -> None:
    spec = policy()["spec"]
    prefixes: Any = variables_of(spec, {})["allowedPrefixes"]
    assert [str(p) for p in prefixes] == [SHIPPED_PREFIX]
    assert all(str(p).endswith("/") for p in prefixes)


def test_the_shipped_policy_admits_its_registry_and_refuses_a_lookalike_host() -> None:
    spec = policy()["spec"]
    assert refusals(spec, f"{SHIPPED_PREFIX}vllm:0.7.0") == []
    assert refusals(spec, "registry.example.com.evil.io/inference/vllm:0.7.0")
    assert refusals(spec, "docker.io/vllm/vllm-openai:v0.7.0")


@pytest.mark.parametrize("prefixes", ["['registry.example.com']", "[]", f"['{SHIPPED_PREFIX}', 'ghcr.io']"])
def test_a_prefix_without_its_slash_makes_the_policy_refuse_everything_and_say_why(prefixes: str) -> None:
    spec = edited(prefixes)["spec"]
    for image in ("registry.example.com.evil.io/x:1", "registry.example.com/x:1", f"{SHIPPED_PREFIX}vllm:0.7.0"):
        found = refusals(spec, image)
        assert found and found[0].startswith(MISCONFIGURED), (image, found)


def test_the_chart_renders_the_shipped_policy_for_the_shipped_prefixes(render: Render) -> None:
    objects = render({"imagePolicy": {"enabled": True, "allowedPrefixes": [SHIPPED_PREFIX]}})
    rendered = [o for o in objects if o["metadata"]["name"].endswith("-image-allowlist")]
    assert only(rendered, "ValidatingAdmissionPolicy")["spec"] == policy()["spec"]
