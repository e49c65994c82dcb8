"""A small client for the part of Zoom's REST API that meetbot uses.

Zoom calls (sources: Zoom's OAuth and REST API references, as also used by
attendee-labs/attendee ``bots/zoom_oauth_connections_utils.py``):

* ``POST {oauth_url}`` with HTTP Basic ``client_id:client_secret`` and a form body
  ``grant_type=authorization_code&code=…&redirect_uri=…`` (or
  ``grant_type=refresh_token&refresh_token=…``) → ``{access_token, refresh_token, expires_in,
  token_type, scope}``; ``expires_in`` is in seconds.
* ``GET {api_base_url}/users/me`` with ``Authorization: Bearer <access token>`` → the
  authorizing user, of which ``id`` and ``email`` are kept.
* ``GET {api_base_url}/users/me/token?type=onbehalf&meeting_id=<meeting number>`` → ``{token}``,
  a short-lived, single-use on-behalf-of (OBF) token for that meeting.

The client does one request per call; the caller (``control_plane.zoom.service``) decides when
to refresh and retry.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp

from control_plane.zoom.errors import ZoomAuthorizationError, ZoomUnavailableError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ZoomTokens:
    """An OAuth token pair of one Zoom user.

    Attributes:
        access_token: Bearer token for the REST API.
        refresh_token: Token that buys the next pair (Zoom rotates it on every refresh).
        expires_at: When ``access_token`` stops working (UTC).
    """

    access_token: str
    refresh_token: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class ZoomUser:
    """The Zoom user who authorized the app: Zoom's user id and e-mail address."""

    id: str
    email: str


class ZoomClient:
    """Calls Zoom's OAuth endpoint and REST API over a shared ``aiohttp`` session.

    Args:
        session: Session owned by the application (closed by its cleanup context).
        oauth_url: Token endpoint (setting ``zoom_oauth_url``).
        api_base_url: REST base including ``/v2`` (setting ``zoom_api_base_url``).
        client_id: OAuth client id of the meetbot Zoom app.
        client_secret: Its client secret.
        timeout_seconds: Total time allowed for one request.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        oauth_url: str,
        api_base_url: str,
        client_id: str,
        client_secret: str,
        timeout_seconds: float = 10.0,
    ) -> None:
        self._session = session
        self._oauth_url = oauth_url
        self._api_base_url = api_base_url.rstrip("/")
        credentials = f"{client_id}:{client_secret}".encode()
        self._basic_auth = "Basic " + base64.b64encode(credentials).decode("ascii")
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._configured = bool(client_id and client_secret)

    @property
    def configured(self) -> bool:
        """Whether a client id and secret are set (without them no code can be exchanged)."""
        return self._configured

    async def exchange_code(self, code: str, redirect_uri: str) -> ZoomTokens:
        """Trade an OAuth authorization code for a token pair.

        Raises:
            ZoomAuthorizationError: Zoom refused the code (4xx).
            ZoomUnavailableError: Zoom could not be reached or failed (5xx, bad body).
        """
        return await self._token_request(
            {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        )

    async def refresh(self, refresh_token: str) -> ZoomTokens:
        """Trade a refresh token for a new pair.

        Raises:
            ZoomAuthorizationError: The refresh token is no longer valid (4xx).
            ZoomUnavailableError: Zoom could not be reached or failed.
        """
        return await self._token_request(
            {"grant_type": "refresh_token", "refresh_token": refresh_token}
        )

    async def current_user(self, access_token: str) -> ZoomUser:
        """The user the access token belongs to (``GET /users/me``).

        Raises:
            ZoomAuthorizationError: The access token was refused (401/403).
            ZoomUnavailableError: Zoom could not be reached, failed or answered without an id.
        """
        body = await self._api_get("/users/me", access_token, params=None)
        user_id, email = body.get("id"), body.get("email")
        if not isinstance(user_id, str) or not user_id:
            raise ZoomUnavailableError("zoom user without id")
        return ZoomUser(id=user_id, email=email if isinstance(email, str) else "")

    async def mint_obf_token(self, access_token: str, meeting_id: str) -> str:
        """A one-time on-behalf-of token for joining ``meeting_id`` (the numeric meeting id).

        Raises:
            ZoomAuthorizationError: The access token was refused (401/403).
            ZoomUnavailableError: Zoom could not be reached, failed or sent no token.
        """
        body = await self._api_get(
            "/users/me/token", access_token, params={"type": "onbehalf", "meeting_id": meeting_id}
        )
        token = body.get("token")
        if not isinstance(token, str) or not token:
            raise ZoomUnavailableError("zoom answered without a token")
        return token

    async def _token_request(self, form: dict[str, str]) -> ZoomTokens:
        started = datetime.now(UTC)
        body = await self._request(
            "POST",
            self._oauth_url,
            data=form,
            headers={"Authorization": self._basic_auth},
            params=None,
        )
        access, refresh, expires_in = (
            body.get("access_token"),
            body.get("refresh_token"),
            body.get("expires_in"),
        )
        if not isinstance(access, str) or not isinstance(refresh, str):
            raise ZoomUnavailableError("zoom token response without tokens")
        lifetime = float(expires_in) if isinstance(expires_in, int | float) else 3600.0
        return ZoomTokens(
            access_token=access,
            refresh_token=refresh,
            expires_at=started + timedelta(seconds=lifetime),
        )

    async def _api_get(
        self, path: str, access_token: str, *, params: dict[str, str] | None
    ) -> dict[str, Any]:
        return await self._request(
            "GET",
            f"{self._api_base_url}{path}",
            data=None,
            headers={"Authorization": f"Bearer {access_token}"},
            params=params,
        )

    async def _request(
        self,
        method: str,
        url: str,
        *,
        data: dict[str, str] | None,
        headers: dict[str, str] | None,
        params: dict[str, str] | None,
    ) -> dict[str, Any]:
        try:
            async with self._session.request(
                method,
                url,
                data=data,
                headers=headers,
                params=params,
                timeout=self._timeout,
                allow_redirects=False,
            ) as response:
                status = response.status
                try:
                    body: object = await response.json(content_type=None)
                except ValueError:
                    body = None
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning(
                "zoom request failed", extra={"method": method, "error": type(exc).__name__}
            )
            raise ZoomUnavailableError("zoom unreachable") from exc
        if 400 <= status < 500:
            log.info("zoom refused request", extra={"method": method, "status": status})
            raise ZoomAuthorizationError(status)
        if status >= 300 or not isinstance(body, dict):
            log.warning("zoom request failed", extra={"method": method, "status": status})
            raise ZoomUnavailableError(f"zoom answered {status}")
        return body
