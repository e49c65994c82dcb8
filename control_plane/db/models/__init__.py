"""Every ORM model, one module per aggregate; importing this package registers them all.

Alembic's autogenerate and ``Base.metadata`` see exactly the modules imported here: a new
aggregate adds its module and one import line below.
"""

from control_plane.db.models.action import MeetingAction
from control_plane.db.models.action_cursor import ActionCursor
from control_plane.db.models.action_prompt import ActionPrompt
from control_plane.db.models.agent_link import (
    AgentFrameReceipt,
    AgentLink,
    Artifact,
    BootstrapToken,
    ChatMessage,
)
from control_plane.db.models.bot import BotStatusChange, Meeting
from control_plane.db.models.idempotency import IdempotencyRecord
from control_plane.db.models.invitation import Invitation
from control_plane.db.models.relay_message import RelayMessage
from control_plane.db.models.segment import Segment
from control_plane.db.models.signing_key import SigningKey
from control_plane.db.models.summary import MeetingSummary
from control_plane.db.models.webhook import (
    WebhookAttempt,
    WebhookDelivery,
    WebhookEndpoint,
    WebhookMessage,
)
from control_plane.db.models.workspace import ApiKey, Membership, User, Workspace
from control_plane.db.models.zoom_connection import ZoomConnection

__all__ = [
    "ActionCursor",
    "ActionPrompt",
    "AgentFrameReceipt",
    "AgentLink",
    "ApiKey",
    "Artifact",
    "BootstrapToken",
    "BotStatusChange",
    "ChatMessage",
    "IdempotencyRecord",
    "Invitation",
    "Meeting",
    "MeetingAction",
    "MeetingSummary",
    "Membership",
    "RelayMessage",
    "Segment",
    "SigningKey",
    "User",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WebhookMessage",
    "Workspace",
    "ZoomConnection",
]
