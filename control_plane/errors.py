"""Domain errors of the control plane; the error middleware turns each into RFC 9457 problem+json.

Handlers and services raise these; nothing builds an error response by hand. Every error has an
HTTP ``status``, a stable snake_case ``code`` (docs/api.md 2.1; the body's ``type`` is
``/errors/<code>``) and a short ``title``; ``detail`` is the human sentence of one occurrence.

The tree::

    DomainError (status, code, title)
    ├── BadRequest ............... 400  bad_request
    │   ├── MalformedJson ........ 400  malformed_json
    │   └── Validation ........... 400/422 validation_error (+ ``errors``; code overridable:
    │                              missing_meeting_reference, invalid_meeting_id, invalid_date,
    │                              scheduled_start_in_past, malformed_meeting_url,
    │                              zoom_token_required, idempotency_key_reused, …)
    ├── AuthError ................ 401  invalid_api_key
    │   └── ApiKeyExpired ........ 401  api_key_expired
    ├── Forbidden ................ 403  forbidden
    │   ├── KeyNotBound .......... 403  key_not_bound
    │   └── ReadOnlyKey .......... 403  read_only_key
    ├── NotFound ................. 404  not_found (bot_not_found, meeting_not_found, …)
    ├── MethodNotAllowed ......... 405  method_not_allowed
    ├── Conflict ................. 409  conflict (bot_not_updatable, bot_finished,
    │                                   meeting_active, …)
    ├── PayloadTooLarge .......... 413  payload_too_large
    ├── UnsupportedMediaType ..... 415  unsupported_media_type
    ├── CapabilityNotSupported ... 422  capability_not_supported
    ├── RateLimited .............. 429  rate_limited (+ ``Retry-After``)
    ├── NotImplementedOperation .. 501  not_implemented
    ├── ProviderError ............ 502  provider_error (webhook_provider_error, zoom_provider_error)
    └── NotConfigured ............ 503  not_configured (+ ``Retry-After``)

Subclasses fix ``status`` and a default ``code``; a raise site may pass a more specific ``code``
(e.g. ``NotFound("bot not found", code="bot_not_found")``) without a new class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict


class ErrorItem(BaseModel):
    """One input-validation problem: where (``loc``), what (``msg``) and its kind (``type``)."""

    model_config = ConfigDict(frozen=True)

    loc: list[str | int]
    msg: str
    type: str


class Problem(BaseModel):
    """The error body of every 4xx/5xx response (RFC 9457, docs/api.md 2.1).

    ``type`` is ``/errors/<code>``; ``errors`` appears only on 400/422 from input validation.
    """

    model_config = ConfigDict(frozen=True)

    type: str
    title: str
    status: int
    detail: str
    code: str
    errors: list[ErrorItem] | None = None


class DomainError(Exception):
    """Base of every error the API reports; carries the HTTP status, code, title and detail.

    Args:
        detail: Human-readable sentence about this occurrence (no personal data).
        code: Stable snake_case code overriding the class default.
        errors: Input-validation items (400/422 only).
        headers: Extra response headers (e.g. ``Retry-After``).
    """

    status: ClassVar[int] = 500
    default_code: ClassVar[str] = "internal_error"
    title: ClassVar[str] = "Internal server error"

    def __init__(
        self,
        detail: str | None = None,
        *,
        code: str | None = None,
        errors: Sequence[ErrorItem] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.detail = detail or self.title
        self.code = code or self.default_code
        self.errors = list(errors) if errors is not None else None
        self.headers = dict(headers or {})
        super().__init__(self.detail)

    def problem(self) -> Problem:
        """The RFC 9457 body of this error."""
        return Problem(
            type=f"/errors/{self.code}",
            title=self.title,
            status=self.status,
            detail=self.detail,
            code=self.code,
            errors=self.errors,
        )


class BadRequest(DomainError):
    """400: the request cannot be processed as sent."""

    status = 400
    default_code = "bad_request"
    title = "Bad request"


class MalformedJson(BadRequest):
    """400: the body is not valid JSON (or not a JSON object)."""

    default_code = "malformed_json"
    title = "Malformed JSON"


class Validation(BadRequest):
    """400 or 422: input failed validation; ``errors`` lists each problem.

    Args:
        detail: Summary sentence.
        status: 400 (a rule of docs/api.md's 400 rows) or 422 (schema validation; the default).
        code: Stable code; ``validation_error`` by default.
        errors: The items; an empty list when none apply.
    """

    default_code = "validation_error"
    title = "Validation failed"

    def __init__(
        self,
        detail: str | None = None,
        *,
        status: int = 422,
        code: str | None = None,
        errors: Sequence[ErrorItem] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail, code=code, errors=errors or [], headers=headers)
        self.instance_status = status

    @staticmethod
    def of_field(
        field: str | tuple[str, ...],
        detail: str,
        *,
        code: str,
        msg: str | None = None,
        item_type: str | None = None,
        status: int = 422,
    ) -> Validation:
        """A refused body field: one item, ``{loc: ["body", *path], msg, type}``.

        Args:
            field: The body field's name, or its path in a nested body
                (``("settings", "default_prompt_version_id")``).
            detail: Summary sentence.
            code: Stable code.
            msg: The item's words; ``detail`` when omitted.
            item_type: The item's ``type``; ``code`` when omitted.
            status: 400 or 422 (the default).
        """
        path = (field,) if isinstance(field, str) else field
        item = ErrorItem(loc=["body", *path], msg=msg or detail, type=item_type or code)
        return Validation(detail, status=status, code=code, errors=[item])

    def problem(self) -> Problem:
        """The RFC 9457 body, with this occurrence's status (400 or 422)."""
        return super().problem().model_copy(update={"status": self.instance_status})


class AuthError(DomainError):
    """401: missing or invalid API key."""

    status = 401
    default_code = "invalid_api_key"
    title = "Invalid or missing API key"


class ApiKeyExpired(AuthError):
    """401: the key's ``expires_at`` has passed."""

    default_code = "api_key_expired"
    title = "API key expired"


class Forbidden(DomainError):
    """403: the caller is known but may not do this."""

    status = 403
    default_code = "forbidden"
    title = "Forbidden"


class KeyNotBound(Forbidden):
    """403: the key is not bound to a workspace (bot launch, key creation)."""

    default_code = "key_not_bound"
    title = "API key not bound to a workspace"


class ReadOnlyKey(Forbidden):
    """403: a ``read`` key tried a mutating call."""

    default_code = "read_only_key"
    title = "API key is read-only"


class NotFound(DomainError):
    """404: no such resource in the caller's workspace (foreign ids are 404 too)."""

    status = 404
    default_code = "not_found"
    title = "Not found"


class MethodNotAllowed(DomainError):
    """405: the path exists but not with this method."""

    status = 405
    default_code = "method_not_allowed"
    title = "Method not allowed"


class Conflict(DomainError):
    """409: the resource's current state forbids the operation."""

    status = 409
    default_code = "conflict"
    title = "Conflict with the resource's state"


class PayloadTooLarge(DomainError):
    """413: request body over the 1 MiB limit."""

    status = 413
    default_code = "payload_too_large"
    title = "Payload too large"


class UnsupportedMediaType(DomainError):
    """415: a JSON body without ``Content-Type: application/json``."""

    status = 415
    default_code = "unsupported_media_type"
    title = "Unsupported media type"


class CapabilityNotSupported(DomainError):
    """422: the bot's platform lacks this capability (docs/architecture.md §4)."""

    status = 422
    default_code = "capability_not_supported"
    title = "Capability not supported by the platform"


class RateLimited(DomainError):
    """429: the key's token bucket is empty; ``Retry-After`` says when to retry (seconds)."""

    status = 429
    default_code = "rate_limited"
    title = "Rate limit exceeded"


class NotImplementedOperation(DomainError):
    """501: the operation exists in the contract but is deliberately not offered."""

    status = 501
    default_code = "not_implemented"
    title = "Not implemented"


class ProviderError(DomainError):
    """502: a third-party provider (webhook delivery, Zoom) failed."""

    status = 502
    default_code = "provider_error"
    title = "Upstream provider error"


class NotConfigured(DomainError):
    """503: a provider this operation needs is not configured; carries ``Retry-After``."""

    status = 503
    default_code = "not_configured"
    title = "Service not configured"


class InternalError(DomainError):
    """500: an unexpected failure (logged with its traceback; the body says nothing more)."""

    status = 500
    default_code = "internal_error"
    title = "Internal server error"
