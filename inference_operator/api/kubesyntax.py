"""The syntax kube-apiserver holds a pod to, for the strings a spec copies into the pod template.

A string admitted into an InferenceService but refused in the Deployment or the Pods built from
it would end as ``ChildRejected`` (or as pods that are never created): so each string the
builders copy is held here to the rule the API server applies to it there, as a schema
``pattern`` where one regular expression can say it (the same in Go, Rust and Python), and as a
:class:`.base.Rule` (CEL and Python side by side) where it takes more: lengths of the parts of a
label key, and whitespace as Go's ``unicode.IsSpace`` knows it.
"""

from __future__ import annotations

import re
from typing import Final

from inference_operator.api.base import Rule

__all__ = [
    "CONFIG_KEY_PATTERN",
    "DNS_SUBDOMAIN_PATTERN",
    "IMAGE_TRIMMED",
    "LABEL_KEY_PATTERN",
    "LABEL_VALUE_PATTERN",
    "MAX_LABEL_KEY_LENGTH",
    "MAX_LABEL_KEY_PREFIX",
    "OPTIONAL_LABEL_KEY_PATTERN",
    "is_label_key",
    "label_key_cel",
    "label_key_prefix_cel",
    "label_key_prefix_fits",
]

_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
"""A label key's name part: at most 63 characters, bounded by the expression itself."""
_LABEL_KEY = rf"({_SUBDOMAIN}/)?{_LABEL_NAME}"

DNS_SUBDOMAIN_PATTERN: Final = rf"^{_SUBDOMAIN}$"
"""A Secret's or ConfigMap's name (an RFC 1123 subdomain; at most 253 characters: a maxLength)."""
LABEL_KEY_PATTERN: Final = rf"^{_LABEL_KEY}$"
"""A label key (IsQualifiedName): an optional DNS subdomain and '/', then a name of at most 63."""
OPTIONAL_LABEL_KEY_PATTERN: Final = rf"^({_LABEL_KEY})?$"
"""A toleration's key: a label key, or empty (with operator Exists: every taint)."""
LABEL_VALUE_PATTERN: Final = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
"""A label value, as a node selector's and a toleration's values must be (empty, or letters,
digits, '-', '_', '.' starting and ending with a letter or digit; at most 63: a maxLength)."""
CONFIG_KEY_PATTERN: Final = r"^\.?[-_a-zA-Z0-9][-._a-zA-Z0-9]*$"
"""A key of a ConfigMap or Secret: letters, digits, '-', '_' and '.', and not '.', '..' or
anything starting with '..' (IsConfigMapKey)."""

MAX_LABEL_KEY_LENGTH: Final = 317  # a DNS subdomain prefix (253), '/', a name (63)
MAX_LABEL_KEY_PREFIX: Final = 253
_PREFIX_FITS = rf"^[^/]{{1,{MAX_LABEL_KEY_PREFIX}}}/"
_LABEL_KEY_RE = re.compile(LABEL_KEY_PATTERN)


def label_key_prefix_fits(key: str) -> bool:
    """The prefix before '/' (if any) is at most 253 characters, as a DNS subdomain must be."""
    prefix, slash, _ = key.rpartition("/")
    return not slash or len(prefix) <= MAX_LABEL_KEY_PREFIX


def is_label_key(key: str) -> bool:
    return len(key) <= MAX_LABEL_KEY_LENGTH and bool(_LABEL_KEY_RE.fullmatch(key)) and label_key_prefix_fits(key)


def _cel_literal(pattern: str) -> str:
    return pattern.replace("\\", "\\\\")  # inside a CEL string literal


def label_key_prefix_cel(key: str) -> str:
    """CEL: :func:`label_key_prefix_fits` of ``key`` (an expression)."""
    return f"(size({key}) <= {MAX_LABEL_KEY_PREFIX} || {key}.matches('{_PREFIX_FITS}'))"


def label_key_cel(key: str) -> str:
    """CEL: ``key`` (an expression) is a label key, with :func:`is_label_key`'s verdict. Its size
    is checked first, which also bounds the cost the API server estimates for the matches."""
    return (
        f"size({key}) <= {MAX_LABEL_KEY_LENGTH} && {key}.matches('{_cel_literal(LABEL_KEY_PATTERN)}') && "
        f"{label_key_prefix_cel(key)}"
    )


# Go's unicode.IsSpace, which kube-apiserver's check of a Pod's image (strings.TrimSpace) uses:
# the Latin-1 spaces, and the Unicode White_Space characters above them.
GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)
_RE2_SPACE = r"[\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"
IMAGE_TRIMMED = Rule(
    # RE2 in CEL (kube-apiserver's and the fake's engine alike), where \x{…} says every such
    # character; `$` is the end of the text in RE2.
    cel=f"!self.matches('{_cel_literal('^' + _RE2_SPACE)}') && !self.matches('{_cel_literal(_RE2_SPACE + '$')}')",
    message="image must not start or end with whitespace: a Pod with such an image is refused",
    field_path="",
    check=lambda image: image == image.strip(GO_SPACE),
)
