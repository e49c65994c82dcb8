"""Action prompts: versioned per workspace, and which one a bot uses (docs/api.md 2.9).

A bot's prompt is its ``prompt_version_id`` when that names a version of its workspace, else
the workspace's ``default_prompt_version_id``, else :data:`SYSTEM_PROMPT`. The control plane's
detection worker (:mod:`control_plane.intelligence.worker`) resolves it for each window with
:func:`resolve`; it never travels to the bot, whose machine runs no model.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from control_plane.db.engine import Database
from control_plane.db.models.action_prompt import ActionPrompt
from control_plane.db.models.workspace import Workspace
from control_plane.errors import Conflict
from control_plane.quotas import enforce_quota


@dataclass(frozen=True, slots=True)
class ResolvedPrompt:
    """The prompt a bot's meeting is analysed with: a stored version's, or the system one.

    Attributes:
        id: The version's id, or ``system``.
        instructions: What precedes the built-in answer format.
        model: The model that answers the windows; None: the replica's configured one.
    """

    id: str
    instructions: str
    model: str | None = None


SYSTEM_PROMPT = ResolvedPrompt(
    id="system",
    instructions=(
        "You read a window of a meeting transcript. Report only what the speakers "
        "clearly state: "
        "action_item (someone commits to or is asked to do something), decision (the group "
        "settles something), question (a question left open), follow_up (something to revisit "
        "later). For each, give its type, a one-sentence text in the transcript's language, "
        "and the lines it rests on. Report nothing rather than guess."
    ),
    model=None,
)
"""The built-in prompt used when neither the bot nor its workspace names a version."""

_CREATE_ATTEMPTS = 5


def embedded_model_name(setting: str) -> str:
    """The one model the embedded provider serves, ``MEETBOT_INTELLIGENCE_EMBEDDED_MODEL`` given.

    It is the only ``model`` an action prompt may name under that provider: a packaged
    model's name as it is (``qwen2.5-coder-0.5b-instruct``); for a GGUF path, the file's name
    without ``.gguf`` (``/models/phi-3.gguf`` is ``phi-3``), so that no server path is shown to
    API clients. The embedded provider reports itself as ``embedded/{name}`` and refuses calls
    naming another model (docs/api.md 2.9).
    """
    return Path(setting).name.removesuffix(".gguf")


async def create_version(
    database: Database,
    *,
    workspace_id: uuid.UUID,
    user_id: int | None,
    name: str,
    instructions: str,
    model: str | None,
    max_prompts: int | None = None,
) -> ActionPrompt:
    """Store a new version of prompt ``name`` (1 for a new name, else the newest + 1).

    Args:
        database: Where the versions are stored.
        workspace_id: The workspace that owns the prompt.
        user_id: Who creates the version (None for a key not bound to a user).
        name: The prompt's name; versions count per name.
        instructions: The prompt's text for the language model.
        model: The model the version asks for, or None for the operator's default.
        max_prompts: Most versions (of all names) the workspace may hold; None is unlimited.

    Raises:
        QuotaExceeded: 409 ``quota_exceeded``, the workspace holds ``max_prompts`` versions.
        Conflict: 409 ``prompt_version_conflict`` — other writers kept winning the race for
            the next version number.
    """
    for _ in range(_CREATE_ATTEMPTS):
        try:
            async with database.sessions.begin() as session:
                if max_prompts is not None:
                    await enforce_quota(
                        session,
                        select(ActionPrompt.id).where(ActionPrompt.workspace_id == workspace_id),
                        max_prompts,
                        "action prompt versions",
                    )
                newest = await session.scalar(
                    select(func.max(ActionPrompt.version)).where(
                        ActionPrompt.workspace_id == workspace_id, ActionPrompt.name == name
                    )
                )
                prompt = ActionPrompt(
                    workspace_id=workspace_id,
                    name=name,
                    version=(newest or 0) + 1,
                    instructions=instructions,
                    model=model,
                    created_by_user_id=user_id,
                )
                session.add(prompt)
                await session.flush()
                await session.refresh(prompt)
                return prompt
        except IntegrityError:
            # Someone stored the same (name, version) first; take the next number.
            continue
    raise Conflict("too many concurrent versions of this prompt", code="prompt_version_conflict")


async def version_of_workspace(
    session: AsyncSession, workspace_id: uuid.UUID, version_id: str
) -> ActionPrompt | None:
    """The prompt version ``version_id`` if it belongs to ``workspace_id``, else None.

    Bot creation uses this to refuse an unknown ``prompt_version_id``.
    """
    prompt = await session.get(ActionPrompt, version_id)
    if prompt is None or prompt.workspace_id != workspace_id:
        return None
    return prompt


async def resolve(
    session: AsyncSession, workspace_id: uuid.UUID, prompt_version_id: str | None
) -> ResolvedPrompt:
    """The prompt a bot of ``workspace_id`` uses.

    Its own version, the workspace default, or :data:`SYSTEM_PROMPT` (each step only when the
    previous names a version of this workspace).
    """
    candidates = [prompt_version_id]
    workspace = await session.get(Workspace, workspace_id)
    if workspace is not None:
        candidates.append(workspace.default_prompt_version_id)
    for candidate in candidates:
        if candidate is None:
            continue
        prompt = await version_of_workspace(session, workspace_id, candidate)
        if prompt is not None:
            return ResolvedPrompt(
                id=prompt.id, instructions=prompt.instructions, model=prompt.model
            )
    return SYSTEM_PROMPT
