"""Offering a stored action to its bot's stream, through the agent (docs/api.md 2.7, 2.9).

The stream is the agent's (its ids, its replay), so the control plane asks the agent to put
the action on it: an ``announce_action`` command through the agent hub, to the link on this
replica or, through the relay, on another, and waits for the agent's answer. Only an answer
with success marks the action streamed (the worker then records ``streamed_at``). Whatever
else happens the action is not lost to the stream: the control plane's stream sends every
action not marked streamed after the agent's last event (``control_plane.bots.stream``):

- no replica holds the bot's link (the agent left; the meeting's last window is detected
  after the end): :class:`AgentGone` (reason ``no_link``);
- the agent refuses, e.g. ``unknown_command`` from a bot image older than the command (its
  link client answers any command it cannot parse so): :class:`AnnounceRefused`, with the code
  (reason ``refused``);
- no answer in time: :class:`NoAnswer` from the hub's ``CommandTimedOut`` (reason
  ``timeout``; the agent may still have streamed it: the stream may then carry it twice, with
  the same ``id``). How long is the worker's to say: one window's offers share one live
  command's timeout (``DetectionOptions.offer_timeout``).

Each is an :class:`~.worker.OfferFailed`, whose ``reason`` labels the worker's count.
"""

from __future__ import annotations

import uuid

from aiohttp import web

from agent.contracts.link import AnnounceActionCommand
from control_plane.agent_hub.hub import AgentHub, AgentNotConnected, CommandTimedOut
from control_plane.agent_hub.keys import AGENT_HUB
from control_plane.intelligence.window_store import StoredAction
from control_plane.intelligence.worker import OfferFailed, PublishAction


class AgentGone(OfferFailed):
    """No replica holds a link to the bot's agent: the action is not on its stream."""

    def __init__(self, bot_id: str) -> None:
        super().__init__("no_link", bot_id)


class AnnounceRefused(OfferFailed):
    """The agent answered ``announce_action`` with an error (``code``, e.g. ``unknown_command``)."""

    def __init__(self, code: str, detail: str | None) -> None:
        super().__init__("refused", f"{code}: {detail or 'no detail'}")
        self.code = code


class NoAnswer(OfferFailed):
    """The agent did not answer ``announce_action`` within the seconds it was given."""

    def __init__(self, message: str) -> None:
        super().__init__("timeout", message)


def announce_through(hub: AgentHub) -> PublishAction:
    """What offers a stored action to its bot's stream through ``hub``.

    The publisher returns once the agent answered with success; it raises :class:`AgentGone`,
    :class:`AnnounceRefused` or :class:`NoAnswer` (no answer within the ``within_seconds`` it
    is given) otherwise.
    """

    async def publish(bot_id: uuid.UUID, stored: StoredAction, within_seconds: float) -> None:
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
        try:
            result = await hub.command(bot_id, command, within_seconds=within_seconds)
        except AgentNotConnected as exc:
            raise AgentGone(str(bot_id)) from exc
        except CommandTimedOut as exc:
            raise NoAnswer(f"no answer within {within_seconds:.1f} s") from exc
        if not result.ok:
            code = result.error.value if result.error is not None else "error"
            raise AnnounceRefused(code, result.detail)

    return publish


def hub_publisher(app: web.Application) -> PublishAction | None:
    """:func:`announce_through` the started app's agent hub; None when it has none.

    The worker gives a window's offers one live command's timeout in all
    (``agent_command_timeout_seconds``, its ``offer_timeout``).
    """
    hub = app.get(AGENT_HUB)
    if hub is None:
        return None
    return announce_through(hub)
