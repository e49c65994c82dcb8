"""Internal routes a bot's machine calls around its agent: the bootstrap and late artifacts.

- ``POST /internal/v1/agents/{bot_id}/bootstrap`` (``Authorization: Bearer <bootstrap
  token>``; body :class:`~agent.contracts.bootstrap.BootstrapRequest`, or none from agents
  older than it) — answers the bot's ``BotConfig`` (with its agent token, minted here, and
  ``Settings.fleet_agent_settings``, the only way secret agent settings reach a machine) once,
  fitted to the ``config_schema`` the agent posted
  (:mod:`control_plane.agent_link.compatibility`); 401 ``invalid_bootstrap_token`` for an
  unknown token or another bot's, 401 ``bootstrap_token_expired``, 409
  ``bootstrap_token_used``; 409 ``agent_incompatible`` when the agent predates an option the
  bot uses (the token is spent and the bot becomes ``failed``/``launch_failed``, the problems
  in its ``status_detail``: that image cannot run it). A launcher that keeps the grant
  (:class:`~control_plane.launchers.base.GrantKeeper`: ``kubernetes``'s Secret) deletes it then.
- ``POST /internal/v1/agents/{bot_id}/artifacts`` (agent token; body ``ArtifactReport``) —
  stores an artifact uploaded through an upload slot after the agent's link is gone (the
  agent's log): 201 ``{artifact_id, storage_key}``, also for a resent report; 422
  ``artifact_not_uploaded`` when the key is not the bot's or holds nothing; 409
  ``meeting_purged`` (and the bytes deleted) when the meeting was purged meanwhile.
"""

from __future__ import annotations

import logging
import uuid

from aiohttp import web
from sqlalchemy import select

from agent.contracts.bootstrap import BootstrapRequest
from agent.contracts.link import ArtifactReport
from agent.contracts.status import BotStatus, StatusReason, can_transition
from agent.contracts.wire import (
    AGENT_ARTIFACTS_PATH,
    AGENT_BOOTSTRAP_PATH,
    AUTHORIZATION_HEADER,
    bearer_token,
)
from control_plane.agent_hub.artifacts import record_artifact
from control_plane.agent_hub.bootstrap_tokens import BOOTSTRAP_TOKENS, BootstrapRefused
from control_plane.agent_hub.keys import STORAGE, STREAM_SIGNER
from control_plane.agent_link.compatibility import IncompatibleAgent, fit_config
from control_plane.agent_link.config_step import linked_agent_token
from control_plane.agent_link.endpoint import authenticate_agent
from control_plane.api.http import path_uuid, read_body
from control_plane.bots.status import change_status, lock_meeting
from control_plane.db.engine import DB
from control_plane.db.models.bot import Meeting
from control_plane.errors import (
    AuthError,
    Conflict,
    ErrorItem,
    NotConfigured,
    NotFound,
    Validation,
)
from control_plane.hooks import STATUS_HOOKS
from control_plane.launchers.base import LAUNCHER, GrantKeeper, LaunchError
from control_plane.settings import SETTINGS
from control_plane.storage.base import bot_prefix

logger = logging.getLogger(__name__)

routes = web.RouteTableDef()


@routes.post(AGENT_BOOTSTRAP_PATH)
async def bootstrap(request: web.Request) -> web.Response:
    """Trade the machine's one-time bootstrap token for the bot's ``BotConfig``."""
    bot_id = path_uuid(request, "bot_id", code="bot_not_found")
    token = bearer_token(request.headers.get(AUTHORIZATION_HEADER))
    if token is None:
        raise AuthError(
            "send the bootstrap token as a Bearer token", code="invalid_bootstrap_token"
        )
    tokens = request.app.get(BOOTSTRAP_TOKENS)
    if tokens is None:
        raise NotConfigured("this control plane issues no bootstrap tokens")
    # Read before the token is spent: a malformed body is the caller's to fix and resend.
    asks = await read_body(request, BootstrapRequest) if request.body_exists else None
    try:
        config = await tokens.redeem(bot_id, token)
    except BootstrapRefused as exc:
        logger.warning("bootstrap refused", extra={"bot_id": str(bot_id), "reason": exc.reason})
        if exc.reason == "used":
            raise Conflict(
                "this bootstrap token has been exchanged already", code="bootstrap_token_used"
            ) from exc
        if exc.reason == "expired":
            raise AuthError(
                "this bootstrap token has expired", code="bootstrap_token_expired"
            ) from exc
        raise AuthError(
            "the bootstrap token is not valid for this bot", code="invalid_bootstrap_token"
        ) from exc
    try:  # the machine's agent token is minted here, where it is delivered
        agent_token = await linked_agent_token(request.app[DB], request.app[STREAM_SIGNER], bot_id)
    except LookupError as exc:  # a bootstrap row without a launch: not a bot's machine
        raise NotFound("no such bot", code="bot_not_found") from exc
    # The operator's agent settings travel here only, never stored with the token.
    handed = request.app[SETTINGS].fleet_agent_settings
    config = config.model_copy(update={"agent_token": agent_token, "agent_settings": handed})
    launcher = request.app[LAUNCHER]
    if isinstance(launcher, GrantKeeper):  # the used grant is deleted where it is kept
        try:
            await launcher.grant_used(bot_id)
        except LaunchError:
            logger.exception("used bootstrap grant not deleted", extra={"bot_id": str(bot_id)})
    if asks is None or asks.config_schema is None:
        logger.info(
            "bootstrap token exchanged",
            extra={"bot_id": str(bot_id), "agent_settings": sorted(handed)},
        )
        return web.json_response(text=config.model_dump_json())
    try:
        fitted = fit_config(config, asks.config_schema)
    except IncompatibleAgent as exc:
        await _fail_incompatible(request.app, bot_id, asks.agent_version, exc)
        raise Conflict(
            "the agent on this bot's machine cannot run this bot: " + str(exc),
            code="agent_incompatible",
        ) from exc
    logger.info(
        "bootstrap token exchanged",
        extra={
            "bot_id": str(bot_id),
            "agent_version": asks.agent_version,
            "agent_settings": sorted(handed),  # names only: some values are secret
        },
    )
    return web.json_response(fitted)


def _detail(exc: IncompatibleAgent) -> str:
    """The bot record's ``status_detail``: what the image predates (at most 500 characters)."""
    text = "the bot image's agent cannot run this bot: " + "; ".join(exc.problems)
    return text if len(text) <= 500 else text[:497] + "..."


async def _fail_incompatible(
    app: web.Application, bot_id: uuid.UUID, agent_version: str | None, exc: IncompatibleAgent
) -> None:
    """Fail the bot ``launch_failed``: its machine's image cannot run it (logged with why)."""
    logger.error(
        "bot image too old for this bot's options",
        extra={"bot_id": str(bot_id), "agent_version": agent_version, "problems": exc.problems},
    )
    hooks = app[STATUS_HOOKS]
    async with app[DB].sessions.begin() as session:
        meeting = await lock_meeting(session, bot_id=bot_id)
        if meeting is not None and can_transition(BotStatus(meeting.status), BotStatus.FAILED):
            await change_status(
                session,
                meeting,
                BotStatus.FAILED,
                StatusReason.LAUNCH_FAILED.value,
                hooks=hooks,
                detail=_detail(exc),
            )


@routes.post(AGENT_ARTIFACTS_PATH)
async def report_artifact(request: web.Request) -> web.Response:
    """Store an artifact the bot's machine uploaded after its agent's link closed."""
    bot_id = path_uuid(request, "bot_id", code="bot_not_found")
    identity = await authenticate_agent(request, bot_id)
    body = await read_body(request, ArtifactReport)
    stored_size = None
    if body.storage_key.startswith(bot_prefix(bot_id)):
        stored_size = await request.app[STORAGE].size(body.storage_key)
    if stored_size is None:
        raise Validation(
            "nothing of this bot is stored under storage_key (upload through a slot first)",
            code="artifact_not_uploaded",
            errors=[
                ErrorItem(
                    loc=["body", "storage_key"], msg="not uploaded", type="artifact_not_uploaded"
                )
            ],
        )
    async with request.app[DB].sessions() as session:
        redacted = await session.scalar(
            select(Meeting.redacted).where(Meeting.id == identity.meeting_id)
        )
    if redacted:  # purged before the machine's upload: keep nothing of it
        await request.app[STORAGE].delete_prefix(body.storage_key)
        raise Conflict("the meeting has been purged", code="meeting_purged")
    await record_artifact(
        request.app[DB],
        identity.meeting_id,
        artifact_id=body.artifact_id,
        kind=body.kind.value,
        storage_key=body.storage_key,
        content_type=body.content_type,
        size_bytes=stored_size,
    )
    return web.json_response(
        {"artifact_id": body.artifact_id, "storage_key": body.storage_key}, status=201
    )
