"""The middlewares, outermost first: observe, errors, authentication, idempotency.

* :func:`observe_middleware` counts and times every request by route template and logs it.
* :func:`error_middleware` turns every failure — domain errors, aiohttp's own 404/405/413, and
  unexpected exceptions (500, traceback logged) — into RFC 9457 problem+json.
* :func:`auth_middleware` authenticates routes declared with ``auth=True`` (docs/api.md 2.1–2.2):
  ``X-API-Key`` → SHA-256 digest lookup + constant-time compare → 401 ``invalid_api_key`` /
  ``api_key_expired``; per-key token bucket → 429 ``rate_limited`` + ``Retry-After``; ``read``
  keys on mutating routes → 403 ``read_only_key``; ``last_used_at`` written at most once a
  minute. It sets ``request[AUTH]`` (:class:`~control_plane.auth.context.AuthContext`).
  A request without a key, with a malformed key, or with a key the lookup does not find takes a
  token of its client address's bucket; an address whose bucket is empty gets 429
  ``rate_limited`` *before* any lookup, so bad keys are throttled per address and cost no query
  once throttled. Every request to a route declared without a key (``/healthz``, ``/readyz``,
  ``/metrics``, the OpenAPI document, the stream with its token, invitation acceptance) takes a
  token too. The address is the client's as the ``trusted_proxies`` tell it
  (:mod:`control_plane.api.client_address`). Buckets are per process (docs/api.md 2.1 gives
  the fleet-wide figure).
* :func:`idempotency_middleware` honours ``Idempotency-Key`` on routes declared
  ``idempotent=True`` (:mod:`control_plane.api.idempotency`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from datetime import UTC, datetime, timedelta

from aiohttp import web
from aiohttp.typedefs import Handler
from sqlalchemy import and_, select, update

from control_plane.api.client_address import client_address
from control_plane.api.idempotency import IDEMPOTENCY, Idempotency, Replay, idempotency_key
from control_plane.api.routes import ROUTE_SPECS, RouteSpec
from control_plane.auth import api_keys
from control_plane.auth.context import AUTH, AuthContext, auth_of
from control_plane.auth.key_cache import KEY_CACHE, CachedKey
from control_plane.auth.ratelimit import ADDRESS_RATE_LIMITER, RATE_LIMITER
from control_plane.db.engine import DB
from control_plane.db.models.workspace import ApiKey, Membership
from control_plane.enums import Permission, Role
from control_plane.errors import (
    ApiKeyExpired,
    AuthError,
    DomainError,
    InternalError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ReadOnlyKey,
)
from control_plane.metrics import METRICS
from control_plane.settings import SETTINGS

log = logging.getLogger(__name__)

LAST_USED_RESOLUTION = timedelta(minutes=1)


def route_template(request: web.Request) -> str | None:
    """The matched route's path template (``/api/v1/bots/{bot_id}``), or None if unmatched."""
    route = request.match_info.route
    resource = route.resource
    if resource is None or isinstance(request.match_info.http_exception, web.HTTPException):
        return None
    return resource.canonical


def spec_of(request: web.Request) -> RouteSpec | None:
    """The :class:`RouteSpec` of the matched route (HEAD uses the GET route's spec)."""
    template = route_template(request)
    if template is None:
        return None
    method = "GET" if request.method == "HEAD" else request.method
    return request.app[ROUTE_SPECS].get((method, template))


def problem_response(exc: DomainError) -> web.Response:
    """The problem+json response of ``exc`` (503 always carries ``Retry-After``)."""
    problem = exc.problem()
    headers = dict(exc.headers)
    if problem.status == 503:
        headers.setdefault("Retry-After", "30")
    return web.Response(
        text=problem.model_dump_json(exclude_none=True),
        status=problem.status,
        content_type="application/problem+json",
        headers=headers,
    )


def _template_pattern(template: str) -> re.Pattern[str]:
    return re.compile(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)))


def allowed_methods(request: web.Request, fallback: str) -> str:
    """Return the ``Allow`` header of the request's path.

    That is the methods of the most specific route template matching it
    (``/api/v1/bots/schedule`` is the schedule collection, not a bot id of
    ``/api/v1/bots/{bot_id}``, whose methods aiohttp would add); ``fallback`` when no declared
    route matches.
    """
    matches: dict[str, set[str]] = {}
    for method, template in request.app[ROUTE_SPECS]:
        if _template_pattern(template).fullmatch(request.path):
            matches.setdefault(template, set()).add(method)
    if not matches:
        return fallback
    methods = matches[min(matches, key=lambda template: template.count("{"))]
    if "GET" in methods:
        methods = methods | {"HEAD"}
    return ", ".join(sorted(methods))


def _from_http_exception(exc: web.HTTPException, request: web.Request) -> DomainError:
    if exc.status == 404:
        return NotFound("no such path")
    if exc.status == 405:
        allowed = allowed_methods(request, exc.headers.get("Allow", ""))
        return MethodNotAllowed("method not allowed here", headers={"Allow": allowed})
    if exc.status == 413:
        return PayloadTooLarge("request bodies are limited to 1 MiB")
    error = DomainError(exc.reason, code=exc.reason.lower().replace(" ", "_"))
    error.status = exc.status  # type: ignore[misc]  # per-instance status of an odd HTTP error
    return error


@web.middleware
async def observe_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count, time and log every request by route template."""
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    finally:
        elapsed = time.perf_counter() - started
        route = route_template(request) or "unmatched"
        metrics = request.app[METRICS]
        metrics.http_requests.labels(request.method, route, str(status)).inc()
        metrics.http_latency.labels(request.method, route).observe(elapsed)
        log.debug(
            "http request",
            extra={
                "method": request.method,
                "route": route,
                "status": status,
                "ms": round(elapsed * 1000, 2),
            },
        )


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Turn every error into problem+json."""
    try:
        return await handler(request)
    except DomainError as exc:
        return problem_response(exc)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return problem_response(_from_http_exception(exc, request))
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception(
            "unhandled error", extra={"method": request.method, "route": route_template(request)}
        )
        return problem_response(InternalError("an internal error occurred"))


def _throttle_address(request: web.Request, *, take: bool = True) -> None:
    """Take (or, with ``take`` false, only look for) a token of the client address's bucket.

    The address is the client's as the trusted proxies tell it
    (:mod:`control_plane.api.client_address`).

    Raises:
        RateLimited: 429 with ``Retry-After`` when the bucket is empty.
    """
    limiter = request.app[ADDRESS_RATE_LIMITER]
    address = f"addr:{client_address(request, request.app[SETTINGS].trusted_proxies)}"
    retry_after = limiter.acquire(address) if take else limiter.wait_of(address)
    if retry_after:
        raise RateLimited(
            "too many requests without a valid API key from this address",
            headers={"Retry-After": str(int(retry_after))},
        )


async def _authenticate(request: web.Request) -> AuthContext:
    secret = request.headers.get("X-API-Key", "")
    settings = request.app[SETTINGS]
    if not secret:
        _throttle_address(request)
        raise AuthError("send an API key in the X-API-Key header")
    if not api_keys.well_formed(secret, settings.key_prefix):
        _throttle_address(request)
        raise AuthError("the API key is not valid")
    digest = api_keys.digest_of(secret)
    db = request.app[DB]
    cache = request.app.get(KEY_CACHE)
    cached = cache.get(digest) if cache is not None else None
    if cached is None:
        _throttle_address(request, take=False)
        async with db.reads() as session:
            row = (
                await session.execute(
                    select(ApiKey, Membership.role)
                    .outerjoin(
                        Membership,
                        and_(
                            Membership.user_id == ApiKey.user_id,
                            Membership.workspace_id == ApiKey.workspace_id,
                        ),
                    )
                    .where(ApiKey.digest == digest)
                )
            ).first()
        if row is None or not api_keys.digests_match(row[0].digest, digest):
            _throttle_address(request)
            raise AuthError("the API key is not valid")
        key, role = row[0], row[1]
        cached = CachedKey(
            context=AuthContext(
                key_id=key.id,
                user_id=key.user_id,
                workspace_id=key.workspace_id,
                permission=Permission(key.permission),
                role=Role(role) if role is not None else None,
            ),
            expires_at=key.expires_at,
            last_used_at=key.last_used_at,
        )
        if cache is not None:
            cache.put(digest, cached)
    now = datetime.now(UTC)
    if cached.expires_at is not None and cached.expires_at <= now:
        raise ApiKeyExpired("the API key has expired")
    if cached.last_used_at is None or now - cached.last_used_at >= LAST_USED_RESOLUTION:
        cached.last_used_at = now
        async with db.sessions.begin() as session:
            await session.execute(
                update(ApiKey).where(ApiKey.id == cached.context.key_id).values(last_used_at=now)
            )
    return cached.context


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Authenticate, rate-limit and permission-check routes that need a key."""
    spec = spec_of(request)
    if spec is None or not spec.auth:
        if spec is not None:  # every public route: probes, metrics, the document, stream tokens
            _throttle_address(request)
        return await handler(request)
    context = await _authenticate(request)
    retry_after = request.app[RATE_LIMITER].acquire(context.key_id)
    if retry_after:
        raise RateLimited(
            "too many requests for this API key",
            headers={"Retry-After": str(int(retry_after))},
        )
    if context.permission is Permission.READ and not spec.allows_read_key:
        raise ReadOnlyKey("this API key may only read")
    request[AUTH] = context
    return await handler(request)


@web.middleware
async def idempotency_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Honour ``Idempotency-Key`` on a route declared ``idempotent=True`` (docs/api.md 2.1).

    It checks the header (422 unless 1 to 255 characters) and hands it to the handler's
    :func:`~control_plane.api.transaction.answered_transaction` as ``request[IDEMPOTENCY]``;
    a :class:`~control_plane.api.idempotency.Replay` raised there is answered with the stored
    response. A success that was not stored with its work is a bug of the route (500).
    """
    spec = spec_of(request)
    key = idempotency_key(request) if spec is not None and spec.idempotent else None
    if spec is None or key is None:
        return await handler(request)
    idempotency = Idempotency(api_key_id=auth_of(request).key_id, route=spec.path, key=key)
    request[IDEMPOTENCY] = idempotency
    try:
        response = await handler(request)
    except Replay as replay:
        return replay.response
    if response.status < 300 and not idempotency.stored:
        raise RuntimeError(f"{spec.method} {spec.path} answered without storing its answer")
    return response
