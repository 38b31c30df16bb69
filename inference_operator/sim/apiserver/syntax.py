"""The syntax rules of apimachinery's validation, with the words kube-apiserver answers in.

Label keys and values, DNS names, port names, config keys: each function returns the messages
the real server would put after ``field: Invalid value: "x": `` — none when the value is valid —
so the fake's refusals read, and compare (tests/shared/conformance), like the real ones.
"""

from __future__ import annotations

import re
from typing import Final

_LABEL_NAME: Final = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE: Final = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_CONFIG_KEY: Final = re.compile(r"^[-._a-zA-Z0-9]+$")
_PORT_NAME_CHARS: Final = re.compile(r"^[-a-z0-9]+$")
_LETTER: Final = re.compile(r"[a-z]")

LABEL_NAME_RULE: Final = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_RULE: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
SUBDOMAIN_RULE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS_LABEL_RULE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "
    "end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
CONFIG_KEY_RULE: Final = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)


def subdomain_problems(value: str) -> list[str]:
    """IsDNS1123Subdomain."""
    problems = ["must be no more than 253 characters"] if len(value) > 253 else []
    if not _DNS_SUBDOMAIN.match(value):
        problems.append(SUBDOMAIN_RULE)
    return problems


def dns_label_problems(value: str) -> list[str]:
    """IsDNS1123Label."""
    problems = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _DNS_LABEL.match(value):
        problems.append(DNS_LABEL_RULE)
    return problems


def label_key_problems(key: str) -> list[str]:
    """IsQualifiedName: an optional DNS subdomain prefix and '/', then a name part of at most 63."""
    prefix, slash, name = key.rpartition("/")
    problems: list[str] = []
    if slash:
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {p}" for p in subdomain_problems(prefix)]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part must be no more than 63 bytes")
    if name and not _LABEL_NAME.match(name):
        problems.append(LABEL_NAME_RULE)
    return problems


def label_value_problems(value: str) -> list[str]:
    """IsValidLabelValue."""
    problems = ["must be no more than 63 bytes"] if len(value) > 63 else []
    if not _LABEL_VALUE.match(value):
        problems.append(LABEL_VALUE_RULE)
    return problems


def port_name_problems(name: str) -> list[str]:
    """IsValidPortName (an IANA service name)."""
    problems = ["must be no more than 15 characters"] if len(name) > 15 else []
    if not _PORT_NAME_CHARS.match(name):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _LETTER.search(name):
        problems.append("must contain at least one letter (a-z)")
    if "--" in name:
        problems.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        problems.append("must not begin or end with a hyphen")
    return problems


def config_key_problems(key: str) -> list[str]:
    """IsConfigMapKey (Secret keys follow the same rule)."""
    problems = ["must be no more than 253 characters"] if len(key) > 253 else []
    if not _CONFIG_KEY.match(key):
        problems.append(CONFIG_KEY_RULE)
    if key in (".", ".."):
        problems.append(f"must not be '{key}'")
    elif key.startswith(".."):
        problems.append("must not start with '..'")
    return problems


def env_name_problems(name: str) -> list[str]:
    """The relaxed environment variable names of Kubernetes 1.34 and later."""
    if all(" " <= ch <= "~" for ch in name) and "=" not in name:
        return []
    return ["a valid environment variable name must consist only of printable ASCII characters other than '='"]


def port_number_problem(port: object) -> str:
    """IsValidPortNum, for an integer port ("" when valid)."""
    return "" if isinstance(port, int) and 1 <= port <= 65535 else "must be between 1 and 65535, inclusive"
