"""One exception class per API failure, shared by every backend.

The reconciler and the controller must not care whether a failure came from the bundled
FakeApiServer or from a real kube-apiserver, so both backends map HTTP status codes onto
this small hierarchy exactly once.
"""

from __future__ import annotations


class ApiError(Exception):
    """A request to the API server failed; ``code`` is the HTTP status it maps to."""

    code: int = 500
    reason: str = "InternalError"

    def __init__(
        self, message: str, *, kind: str = "", namespace: str = "", name: str = "", api_message: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.api_message = api_message or message
        """The API server's own words, without the request that got them (for status messages)."""


class NotFound(ApiError):
    """The object does not exist (HTTP 404)."""

    code = 404
    reason = "NotFound"


class AlreadyExists(ApiError):
    """An object with this kind, namespace and name already exists (HTTP 409 on create)."""

    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    """The write carried a stale ``resourceVersion`` (HTTP 409 on update)."""

    code = 409
    reason = "Conflict"


class Invalid(ApiError):
    """The API server rejected the object as invalid (HTTP 422)."""

    code = 422
    reason = "Invalid"


class Forbidden(ApiError):
    """The caller may not do this (HTTP 403)."""

    code = 403
    reason = "Forbidden"


class ServerError(ApiError):
    """The API server failed the request (HTTP 500); its Status names no reason."""

    code = 500
    reason = ""


__all__ = ["AlreadyExists", "ApiError", "Conflict", "Forbidden", "Invalid", "NotFound", "ServerError"]
