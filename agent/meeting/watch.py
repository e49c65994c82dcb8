"""What the bot sees while it is in the meeting: participants, active speakers, chat.

:class:`MeetingWatch` is polled by the bot's lifecycle driver (:mod:`agent.meeting.bot`) on every
tick of its meeting loop; it reports participant changes and chat lines as events and passes
active-speaker changes to the transcription (and an optional extra sink).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

from agent.capture.audio import SpeakerActivity
from agent.capture.pcm import CaptureStats
from agent.contracts.link import ChatMessageEvent, utc_now
from agent.link.events import BotEvents
from agent.meeting.lifecycle import MeetingTimers
from agent.platforms.base import ChatLine, MeetingState, PlatformAdapter, Presence
from agent.process.errors import BrowserError, CapabilityNotSupported

log = logging.getLogger(__name__)

SpeakerSink = Callable[[SpeakerActivity], Awaitable[None]]

QUIET_LOG_S = 600.0
"""Seconds of nobody seen speaking and nothing heard, while the roster names someone, after
which the bot says why it still thinks someone is there (issue 33): at least the left-alone
timeout."""


UNHEARD_AFTER_S = 5.0
"""Seconds of others shown speaking with no meeting audio reaching the bot before it says so
(``meeting_audio_missing``, well within the 30 s issue 33 asks for)."""


@dataclass(slots=True)
class UnheardSpeakers:
    """How long others were shown speaking while no meeting audio reached the bot.

    Plain logic over a clock value: :meth:`observe` answers True once when that reaches
    ``after`` seconds; audio arriving starts it again.
    """

    after: float
    shown: float = 0.0
    last: float | None = None
    voiced: float = 0.0
    told: bool = False

    def observe(self, now: float, voiced: float, speaking: bool) -> bool:
        """Record one read; True when the missing audio is to be reported now."""
        if voiced > self.voiced:
            self.voiced, self.shown, self.told = voiced, 0.0, False
        elif speaking and self.last is not None:
            self.shown += now - self.last
        self.last = now
        if self.told or self.shown < self.after:
            return False
        self.told = True
        return True


@dataclass(slots=True)
class QuietSpell:
    """How long the meeting has shown no sign of anyone: no speaker lit, nothing heard, no join.

    Plain logic over a clock value. :meth:`observe` answers True once per quiet spell that
    reaches ``after`` seconds while the roster still names someone.
    """

    after: float
    since: float | None = None
    voiced: float = 0.0
    told: bool = False

    def observe(self, now: float, voiced: float, speaking: bool, others: int) -> bool:
        """Record one roster read; True when the quiet spell is to be reported now."""
        if self.since is None or speaking or voiced > self.voiced:
            self.since, self.voiced, self.told = now, voiced, False
            return False
        if others <= 0 or self.told or now - self.since < self.after:
            return False
        self.told = True
        return True

    def heard(self, now: float) -> None:
        """A sign of someone (a join): the spell starts again."""
        self.since, self.told = now, False


class SpeakerListener(Protocol):
    """Hears active-speaker changes (:class:`agent.media_in.meeting_media.MeetingMedia` is one)."""

    def speaker(self, activity: SpeakerActivity) -> None:
        """One speaker started or stopped."""


class MeetingWatch:
    """Reads the meeting page and reports what changed.

    Args:
        adapter: The platform adapter (reads the page).
        bot_name: The bot's display name (excluded from participants; its chat is its own).
        timers: Told how many others are present (alone timers).
        media: Receives active-speaker changes (the meeting's transcription).
        speaker_sink: Optional extra consumer of active-speaker changes.
        audio: The capture's per-track statistics (remote audio tracks ending is one signal
            of being alone; no voiced audio while others are shown speaking is reported).
        quiet_log_after: Seconds without a sign of anyone, while the roster names someone,
            before the bot logs why it thinks someone is there (:data:`QUIET_LOG_S`, at least
            the left-alone timeout).
        unheard_after: Seconds of others shown speaking without any meeting audio before
            ``meeting_audio_missing`` (:data:`UNHEARD_AFTER_S`).
    """

    def __init__(
        self,
        adapter: PlatformAdapter,
        bot_name: str,
        timers: MeetingTimers,
        media: SpeakerListener,
        speaker_sink: SpeakerSink | None = None,
        audio: CaptureStats | None = None,
        quiet_log_after: float | None = None,
        unheard_after: float = UNHEARD_AFTER_S,
    ) -> None:
        self._adapter = adapter
        self._bot_name = bot_name
        self._timers = timers
        self._media = media
        self._speaker_sink = speaker_sink
        self._audio = audio
        self.participants: list[str] = []
        # The meeting's title as the page shows it (read on the first read after joining).
        self.meeting_name: str | None = None
        self._speaking: set[str] = set()
        self._chat_seen: set[str] = set()
        self._quiet = QuietSpell(
            quiet_log_after
            if quiet_log_after is not None
            else max(timers.timeouts.left_alone, QUIET_LOG_S)
        )
        self._unheard = UnheardSpeakers(unheard_after)

    def _remote_audio_gone(self) -> bool:
        if self._audio is None:
            return False
        tracks = self._audio.tracks.values()
        return bool(tracks) and all(track.ended for track in tracks)

    async def read_participants(
        self, page: Page, events: BotEvents, now: float, initial: bool = False
    ) -> None:
        """Read the participants; report joins and leaves (always on the ``initial`` read).

        The alone timers hear the cross-checked count (:meth:`Presence.others`: the page's
        "only you" text, else the platform's own count, else the names), and zero once every
        remote audio track the bot received has ended (the meeting's media is gone).
        A roster that empties at once is reported only while the page still shows the meeting:
        a meeting that ends takes its roster with it, and nobody left.
        """
        asked = time.monotonic()
        quiet_s = now - self._quiet.since if self._quiet.since is not None else 0.0
        presence = await self._adapter.presence(page, self._bot_name, quiet_s)
        # What the page said holds as of its answer: opening a participants list takes a
        # second, and an absence dated from before it would shorten the left-alone wait.
        now += time.monotonic() - asked
        names = presence.names
        if not names and self.participants and not initial and not await self._still_in(page):
            # The meeting's screen went between the loop's state probe and this read (the host
            # ended it, the bot was removed): its roster went with it, but nobody left. The
            # next probe sees the screen and ends the bot with its reason.
            return
        others = presence.others()
        if self._remote_audio_gone():
            others = 0
        self._timers.observe(others, now)
        voiced = self._audio.voiced_seconds if self._audio is not None else 0.0
        if self._quiet.observe(now, voiced, bool(self._speaking), others):
            self._log_quiet(presence, others, now)
        if self._audio is not None and self._unheard.observe(now, voiced, bool(self._speaking)):
            # Others are shown speaking but nothing reaches the bot: a notice holding the media
            # back, a capture that broke, a platform handing out no media (Vexa #1727).
            log.warning(
                "no meeting audio while others are shown speaking",
                extra={"shown_speaking_seconds": round(self._unheard.shown, 1)},
            )
            await events.meeting_audio_missing(self._unheard.shown)
        if names == self.participants and not initial:
            return
        joined = [n for n in names if n not in self.participants]
        left = [n for n in self.participants if n not in names]
        if not initial and not joined and not left:
            self.participants = names  # only the order changed
            return
        if joined:
            self._quiet.heard(now)
        self.participants = names
        if initial and self.meeting_name is None:
            self.meeting_name = await self._adapter.meeting_title(page)
        await events.participants(names, joined, left, self.meeting_name if initial else None)

    def _log_quiet(self, presence: Presence, others: int, now: float) -> None:
        """Say why the bot stays although nobody was seen speaking or heard for long."""
        since = self._quiet.since if self._quiet.since is not None else now
        log.warning(
            "seen nobody and heard nothing for long, but the roster names someone",
            extra={
                "quiet_seconds": round(now - since, 1),
                "others": others,
                "participants": len(presence.names),
                "platform_count": presence.count,
                "roster_source": presence.source,
                "only_you": presence.only_you,
            },
        )

    async def _still_in(self, page: Page) -> bool:
        """Whether the page still shows the meeting (a roster that emptied may mean it ended)."""
        return await self._adapter.state(page) is MeetingState.IN_MEETING

    async def speakers(self, page: Page) -> None:
        """Read the speaking indicators; pass changes to the transcription and the sink."""
        speaking = others_speaking(await self._adapter.speakers(page), self._bot_name)
        if speaking == self._speaking:
            return
        changes = speaker_changes(self._speaking, speaking)
        self._speaking = speaking
        for change in changes:
            self._media.speaker(change)
            if self._speaker_sink is not None:
                await self._speaker_sink(change)

    async def chat(self, page: Page, events: BotEvents) -> None:
        """Report chat lines not seen before (the bot's own were reported when sent)."""
        try:
            lines = await self._adapter.read_chat(page)
        except (PlaywrightError, BrowserError, CapabilityNotSupported):
            return  # a chat panel hiccup (or no chat at all) must not end the meeting
        own = {self._bot_name.lower(), "you"}
        for line in lines:
            if line.key in self._chat_seen or not line.text:
                continue
            self._chat_seen.add(line.key)
            # The bot's own messages were reported when it sent them (commands.py).
            if line.sender.lower() not in own:
                await events.chat(chat_event(line))


def others_speaking(names: set[str], bot_name: str) -> set[str]:
    """The lit speaking indicators that are not the bot's own.

    The bot's tile lights while it speaks (``POST …/speak``); its voice is nobody's speech to
    attribute, and the bot never captures its own microphone (``inject.js``).
    """
    own = {bot_name.lower(), "you"}
    return {name for name in names if name.lower() not in own and "(you)" not in name.lower()}


def speaker_changes(before: set[str], after: set[str]) -> list[SpeakerActivity]:
    """Speaker indicator changes as :class:`SpeakerActivity` records stamped now."""
    at = time.time()
    stopped = [SpeakerActivity(name, False, at) for name in sorted(before - after)]
    started = [SpeakerActivity(name, True, at) for name in sorted(after - before)]
    return stopped + started


def chat_event(line: ChatLine) -> ChatMessageEvent:
    """A chat line read from the page as a ``chat_message`` event."""
    return ChatMessageEvent(
        message_id=line.key, sender=line.sender, text=line.text, timestamp=utc_now()
    )
