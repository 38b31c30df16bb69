"""Property names in CEL as kube-apiserver binds them: escaped where CEL could not spell them.

A field of an object schema is ``self.<name>`` in a rule, but a name such as
``ephemeral-storage`` is no CEL identifier. Kubernetes escapes it (apiextensions' CEL
property-name rules): ``__`` → ``__underscores__``, ``.`` → ``__dot__``, ``-`` → ``__dash__``,
``/`` → ``__slash__``, and a CEL reserved word ``w`` → ``__w__``; a rule writes
``self.requests.ephemeral__dash__storage``. Map keys (``additionalProperties``) are not
escaped: they are read with an index, ``self.labels['app.kubernetes.io/name']``.

The fake's objects hold the real names, so a selection asks for the unescaped one.
"""

from __future__ import annotations

import functools
import re
from typing import Final

RESERVED: Final = frozenset(
    (
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    )
)
_ESCAPES: Final = {"underscores": "__", "dot": ".", "dash": "-", "slash": "/"}
_ESCAPED: Final = re.compile(r"__(" + "|".join(_ESCAPES) + r")__")


@functools.lru_cache(maxsize=1024)
def unescape(name: str) -> str:
    """The property a CEL selection ``.name`` reads (``ephemeral__dash__storage`` → ``ephemeral-storage``)."""
    if "__" not in name:
        return name
    if name.startswith("__") and name.endswith("__") and name[2:-2] in RESERVED:
        return name[2:-2]
    return _ESCAPED.sub(lambda m: _ESCAPES[m.group(1)], name)
