"""A local HTTP server that speaks the part of Zoom's OAuth and REST API meetbot uses.

Zoom itself is out of reach in tests, so this is a real HTTP implementation of that seam
(docs/architecture.md §7): it checks client credentials, issues and rotates token pairs,
expires access
tokens on demand and mints on-behalf-of tokens, recording what it was asked. Shapes follow
Zoom's references (see ``control_plane/zoom/client.py``).
"""

from __future__ import annotations

import base64
import secrets
import time
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class _Grant:
    user_id: str
    email: str


@dataclass
class FakeZoom:
    """State and routes of the fake; ``start()`` serves it on loopback.

    Attributes:
        client_id: Accepted OAuth client id.
        client_secret: Accepted OAuth client secret.
        access_token_lifetime: ``expires_in`` handed out, seconds.
        refreshes: Number of successful refresh grants.
        obf_mints: ``(zoom user id, meeting id)`` of every minted OBF token.
        fail_status: When set, every request answers this status (simulates an outage).
    """

    client_id: str = "zoom-client"
    client_secret: str = "zoom-secret"
    access_token_lifetime: int = 3600
    refreshes: int = 0
    obf_mints: list[tuple[str, str]] = field(default_factory=list)
    fail_status: int | None = None
    _codes: dict[str, _Grant] = field(default_factory=dict)
    _access: dict[str, tuple[_Grant, float]] = field(default_factory=dict)
    _refresh: dict[str, _Grant] = field(default_factory=dict)
    _runner: web.AppRunner | None = None
    base_url: str = ""

    def authorize(self, user_id: str, email: str) -> str:
        """What Zoom does when a user consents: a one-time authorization code for them."""
        code = f"code-{secrets.token_urlsafe(8)}"
        self._codes[code] = _Grant(user_id, email)
        return code

    def expire_access_tokens(self) -> None:
        """Make every issued access token stale, as time passing would."""
        self._access = {token: (grant, 0.0) for token, (grant, _) in self._access.items()}

    @property
    def oauth_url(self) -> str:
        """Token endpoint URL (setting ``zoom_oauth_url``)."""
        return f"{self.base_url}/oauth/token"

    @property
    def api_base_url(self) -> str:
        """REST base URL (setting ``zoom_api_base_url``)."""
        return f"{self.base_url}/v2"

    async def start(self) -> None:
        """Serve on an ephemeral loopback port; sets :attr:`base_url`."""
        app = web.Application()
        app.router.add_post("/oauth/token", self._token)
        app.router.add_get("/v2/users/me", self._me)
        app.router.add_get("/v2/users/me/token", self._user_token)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()

    def _issue(self, grant: _Grant) -> web.Response:
        access, refresh = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        self._access[access] = (grant, time.monotonic() + self.access_token_lifetime)
        self._refresh[refresh] = grant
        return web.json_response(
            {
                "access_token": access,
                "token_type": "bearer",
                "refresh_token": refresh,
                "expires_in": self.access_token_lifetime,
                "scope": "user:read:token",
            }
        )

    async def _token(self, request: web.Request) -> web.Response:
        if self.fail_status is not None:
            return web.json_response({"reason": "outage"}, status=self.fail_status)
        expected = base64.b64encode(f"{self.client_id}:{self.client_secret}".encode()).decode()
        if request.headers.get("Authorization") != f"Basic {expected}":
            return web.json_response({"reason": "Invalid client_id or client_secret"}, status=401)
        form = await request.post()
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            grant = self._codes.pop(str(form.get("code")), None)
            if grant is None or not form.get("redirect_uri"):
                return web.json_response({"reason": "Invalid authorization code"}, status=400)
            return self._issue(grant)
        if grant_type == "refresh_token":
            grant = self._refresh.pop(str(form.get("refresh_token")), None)
            if grant is None:
                return web.json_response({"reason": "Invalid Token!"}, status=400)
            self.refreshes += 1
            return self._issue(grant)
        return web.json_response({"reason": "unsupported grant_type"}, status=400)

    def _bearer(self, request: web.Request) -> _Grant | None:
        header = request.headers.get("Authorization", "")
        entry = self._access.get(header.removeprefix("Bearer "))
        if entry is None or entry[1] <= time.monotonic():
            return None
        return entry[0]

    async def _me(self, request: web.Request) -> web.Response:
        if self.fail_status is not None:
            return web.json_response({"message": "outage"}, status=self.fail_status)
        grant = self._bearer(request)
        if grant is None:
            return web.json_response({"code": 124, "message": "Invalid access token."}, status=401)
        return web.json_response({"id": grant.user_id, "email": grant.email, "type": 1})

    async def _user_token(self, request: web.Request) -> web.Response:
        if self.fail_status is not None:
            return web.json_response({"message": "outage"}, status=self.fail_status)
        grant = self._bearer(request)
        if grant is None:
            return web.json_response({"code": 124, "message": "Invalid access token."}, status=401)
        meeting_id = request.query.get("meeting_id", "")
        if request.query.get("type") != "onbehalf" or not meeting_id.isdigit():
            return web.json_response({"code": 300, "message": "Invalid parameters."}, status=400)
        self.obf_mints.append((grant.user_id, meeting_id))
        return web.json_response({"token": f"obf-{meeting_id}-{secrets.token_urlsafe(8)}"})
