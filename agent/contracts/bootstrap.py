"""What a bot machine's cloud-init user-data carries: the bootstrap grant.

User-data is readable by anything on the machine and often by the cloud's metadata service,
so it holds no secret that outlives the boot: the control plane's URL, the bot id and a
one-time bootstrap token that expires. The launcher writes it (cloud-init ``write_files``) to
:data:`BOOTSTRAP_GRANT_FILE`, root-only; ``meetbot-agent.service`` trades the token for the
bot's ``BotConfig`` at ``POST {control_plane_url}/internal/v1/agents/{bot_id}/bootstrap``
(``Authorization: Bearer <bootstrap_token>``) before it starts the agent. The exchange works
once: 401 ``invalid_bootstrap_token`` (unknown token, or another bot's), 401
``bootstrap_token_expired``, 409 ``bootstrap_token_used``. The machine's request body
(:class:`BootstrapRequest`) says which ``BotConfig`` its agent accepts, so a control plane newer
than the image leaves out options the agent predates while they are unset, and refuses (409
``agent_incompatible``, the bot ``failed``/``launch_failed``) when one is set.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

BOOTSTRAP_GRANT_FILE = "/etc/meetbot/bootstrap.json"
"""Where the grant lies on a bot machine (mode 0600, root)."""

BOOTSTRAP_TOKEN_PREFIX = "mbt_"  # noqa: S105 - a public marker, not a secret
"""How a bootstrap token starts (then 43 URL-safe characters, 256 bits)."""


class BootstrapGrant(BaseModel):
    """The bootstrap grant of one bot machine (the JSON of :data:`BOOTSTRAP_GRANT_FILE`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    control_plane_url: str = Field(min_length=1, description="Base URL, as the machine reaches it.")
    bot_id: UUID
    bootstrap_token: str = Field(min_length=1, max_length=128)


class BootstrapRequest(BaseModel):
    """The body of the bootstrap exchange: what the machine's agent can run.

    Attributes:
        config_schema: The JSON Schema (pydantic's ``model_json_schema``, draft 2020-12) of the
            ``BotConfig`` this agent validates; absent from agents older than the field, which
            get the config as it is.
        agent_version: meetbot's version on the machine (for the control plane's log).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    config_schema: dict[str, Any] | None = None
    agent_version: str | None = Field(default=None, max_length=64)
