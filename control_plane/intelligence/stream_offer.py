"""Offering a stored action to its bot's stream, through the agent (docs/api.md 2.7, 2.9).

The stream is the agent's (its ids, its replay), so the control plane asks the agent to put
the action on it: an ``announce_action`` command through the agent hub, to the link on this
replica or, through the relay, on another. An agent that is gone (the meeting ended) cannot
stream it; the webhook and the meeting record carry the action all the same.
"""

from __future__ import annotations

import uuid

from aiohttp import web

from agent.contracts.link import AnnounceActionCommand
from control_plane.agent_hub.hub import AgentHub
from control_plane.agent_hub.keys import AGENT_HUB
from control_plane.intelligence.window_store import StoredAction
from control_plane.intelligence.worker import PublishAction


class AgentGone(Exception):
    """No replica holds a link to the bot's agent: the action is not on its stream."""


def announce_through(hub: AgentHub) -> PublishAction:
    """What offers a stored action to its bot's stream through ``hub``.

    The publisher raises :class:`AgentGone` when no replica holds the bot's link.
    """

    async def publish(bot_id: uuid.UUID, stored: StoredAction) -> None:
        action = stored.action
        command = AnnounceActionCommand(
            id=stored.id,
            action_type=action.action_type,
            text=action.text,
            owner=action.owner,
            due=action.due,
            segment_ids=list(action.segment_ids),
            timestamp=stored.detected_at,
        )
        if not await hub.notify(bot_id, command):
            raise AgentGone(str(bot_id))

    return publish


def hub_publisher(app: web.Application) -> PublishAction | None:
    """:func:`announce_through` the started app's agent hub; None when it has none."""
    hub = app.get(AGENT_HUB)
    return None if hub is None else announce_through(hub)
