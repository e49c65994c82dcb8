"""The agent-link aggregate: link credentials, frame ledger, chat and artifacts of each bot.

Each bot's link credentials and liveness, the ledger of agent frames already stored, the meeting
chat, uploaded artifacts (recordings, screenshots, agent logs), and the one-time bootstrap
tokens bot machines trade for their ``BotConfig``.

Idempotency of the link (docs/architecture.md §5) rests on :class:`AgentFrameReceipt`: a
frame's effects and its receipt row commit in one transaction, so a frame resent from the agent's
outbox finds its receipt and is only acked again.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from control_plane.db.base import Base, UtcDateTime, utc_now


class AgentLink(Base):
    """One bot's agent: token digest, version, when it registered and was last heard.

    ``launched_at`` is when the bot was handed to the launcher; ``last_seen_at`` is the last
    frame of any kind (heartbeats included); both drive the reaper. ``token_digest`` is the
    SHA-256 of the agent token, set where the token is minted: at the launch for a local agent
    (the token is in its config), at the bootstrap exchange for a bot machine (None until then,
    matching no token).
    """

    __tablename__ = "agent_links"

    meeting_id: Mapped[int] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), primary_key=True
    )
    token_digest: Mapped[str | None] = mapped_column(String(64), unique=True, default=None)
    agent_version: Mapped[str | None] = mapped_column(String(64), default=None)
    launched_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    registered_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    last_seen_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)


class BootstrapToken(Base):
    """A bot machine's one-time bootstrap token: its digest and the ``BotConfig`` it buys.

    A launcher that boots a machine (the qemu launcher; the cloud launchers) puts only the
    control-plane URL, the bot id and the token into the machine's user-data; the machine
    trades the token once for ``config`` (``POST /internal/v1/agents/{bot_id}/bootstrap``).
    ``config`` is the ``BotConfig`` JSON, which holds no ``agent_token`` (minted at the
    exchange, never stored). One row per bot: a relaunch replaces it. ``used_at`` is set by
    the exchange; a token past ``expires_at`` or already used buys nothing.
    """

    __tablename__ = "bootstrap_tokens"

    meeting_id: Mapped[int] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), primary_key=True
    )
    token_digest: Mapped[str] = mapped_column(String(64), unique=True)
    config: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class AgentFrameReceipt(Base):
    """A frame (by the agent's stable id) whose effects are stored."""

    __tablename__ = "agent_frame_receipts"

    meeting_id: Mapped[int] = mapped_column(
        ForeignKey("meetings.id", ondelete="CASCADE"), primary_key=True
    )
    frame_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    frame_type: Mapped[str] = mapped_column(String(32))
    received_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class ChatMessage(Base):
    """A chat message seen in the meeting, sent by a participant or by the bot (docs/api.md 2.5)."""

    __tablename__ = "chat_messages"
    __table_args__ = (
        UniqueConstraint("meeting_id", "message_id"),
        Index("ix_chat_messages_meeting_timestamp", "meeting_id", "timestamp"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    meeting_id: Mapped[int] = mapped_column(ForeignKey("meetings.id", ondelete="CASCADE"))
    message_id: Mapped[str] = mapped_column(String(64))
    sender: Mapped[str] = mapped_column(String(300))
    text: Mapped[str] = mapped_column(Text)
    timestamp: Mapped[datetime] = mapped_column(UtcDateTime)
    from_bot: Mapped[bool] = mapped_column(Boolean, default=False)


class Artifact(Base):
    """A recording or screenshot in artifact storage under ``storage_key`` (docs/api.md 2.6).

    ``artifact_id`` is the agent's stable id (the API's recording/screenshot ``id``);
    ``kind`` is ``recording`` or ``screenshot``.
    """

    __tablename__ = "artifacts"
    __table_args__ = (
        UniqueConstraint("meeting_id", "artifact_id"),
        Index("ix_artifacts_meeting_kind", "meeting_id", "kind", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    meeting_id: Mapped[int] = mapped_column(ForeignKey("meetings.id", ondelete="CASCADE"))
    artifact_id: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    storage_key: Mapped[str] = mapped_column(String(512))
    content_type: Mapped[str] = mapped_column(String(100))
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    format: Mapped[str | None] = mapped_column(String(16), default=None)
    duration_s: Mapped[float | None] = mapped_column(Float, default=None)
    width: Mapped[int | None] = mapped_column(Integer, default=None)
    height: Mapped[int | None] = mapped_column(Integer, default=None)
    captured_at: Mapped[datetime | None] = mapped_column(UtcDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
