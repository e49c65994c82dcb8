"""The agent's composition root: one bot's parts built from its config and the host's settings.

:func:`assemble` builds every collaborator of one bot and ties them together (who reports to
whom, who may stop the bot, what the memory guard may free) and hands them to
:class:`~agent.meeting.bot.Bot`, which is left the state machine of one meeting. Entry points
(``python -m agent``, ``meetbot agent``), tests and benches build bots here.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from agent.browser.session import BrowserSession
from agent.capture.pcm import AudioCapture
from agent.contracts.bot_config import BotConfig
from agent.contracts.timestamps import format_utc
from agent.link.artifacts import ArtifactUploader
from agent.link.client import LinkTiming
from agent.link.events import BotEvents, Observer
from agent.link.uplink import Uplink
from agent.media_in.meeting_media import MeetingMedia
from agent.media_out.remote_media import fetch_policy
from agent.meeting.bot import Bot, BotParts
from agent.meeting.commands import CommandHandler
from agent.meeting.lifecycle import MeetingTimers, StatusMachine, Timeouts
from agent.meeting.live_settings import SettingsApplier
from agent.meeting.passcode import PasscodeAnswer
from agent.meeting.stop import StopSignal
from agent.meeting.unknown_screens import UnknownScreens
from agent.meeting.watch import QUIET_LOG_S, MeetingWatch, SpeakerSink
from agent.meeting.watchdog import PageWatchdog
from agent.memory.budget import read_budget, thresholds_mb
from agent.memory.guard import MemoryGuard, Relief, Thresholds
from agent.memory.relief import trim_heap
from agent.platforms import adapter_for
from agent.platforms.base import PlatformAdapter
from agent.process.settings import AgentSettings
from agent.sse.log import EventLog
from agent.transcribe.options import TranscribeOptions
from agent.voice.factory import synthesizer_for
from agent.voice.microphone import PageMicrophone
from agent.voice.speaker import Speaker


def assemble(
    config: BotConfig,
    settings: AgentSettings,
    observer: Observer | None = None,
    speaker_sink: SpeakerSink | None = None,
) -> Bot:
    """Build one bot, ready to :meth:`~agent.meeting.bot.Bot.run`.

    Nothing starts here: the browser, the link (its outbox file too), the capture and the
    memory guard start when the bot runs.

    Args:
        config: The bot's config from the launcher (or built by ``meetbot agent``).
        settings: The agent host's settings.
        observer: Optional consumer of every event (the CLI prints them).
        speaker_sink: Optional consumer of active-speaker changes.
    """
    bot_id = str(config.bot_id)
    stream = EventLog()
    capture = AudioCapture()
    adapter = adapter_for(config.platform, settings.page_timeout_seconds)
    browser = BrowserSession(settings, config.settings.bot_name, capture)
    timers = MeetingTimers(Timeouts.from_settings(config.settings, settings.timeout_scale))
    link = _uplink(config, settings, bot_id, stream)
    events = BotEvents(stream, link.send if link is not None else None, observer)
    machine = StatusMachine(events)
    stop = StopSignal()
    media = MeetingMedia(
        capture,
        browser,
        events,
        config.settings,
        settings,
        _transcribe_options(config, settings, adapter),
        bot_id,
        refine_after_meeting=config.refine_after_meeting,
    )
    uploader = ArtifactUploader(config.agent_token, settings.data_dir / "artifacts")
    media.ship_pieces_to(uploader, config.control_plane_url)
    speaker = Speaker(
        synthesizer_for(settings),
        PageMicrophone(browser, adapter),
        events.speech,
        now=_now_iso,
        media_policy=fetch_policy(settings),
    )
    commands = CommandHandler(
        browser,
        adapter,
        events,
        uploader,
        status=machine.current,
        request_stop=stop.request,
        settings=SettingsApplier(media, machine.current),
        bot_name=config.settings.bot_name,
        default_avatar_url=config.settings.default_avatar_url,
        media_policy=fetch_policy(settings),
        speaker=speaker,
        voice_enabled=media.voice_enabled,
    )
    screens = UnknownScreens(
        browser,
        commands,
        uploader,
        config.control_plane_url if link is not None else None,
        bot_id,
    )
    watch = MeetingWatch(
        adapter,
        config.settings.bot_name,
        timers,
        media,
        speaker_sink,
        audio=capture.stats,
        # 10 minutes (scaled like the bot's timeouts), at least the left-alone timeout.
        quiet_log_after=max(timers.timeouts.left_alone, QUIET_LOG_S * settings.timeout_scale),
    )
    parts = BotParts(
        stream=stream,
        capture=capture,
        adapter=adapter,
        browser=browser,
        timers=timers,
        events=events,
        machine=machine,
        stop=stop,
        media=media,
        watch=watch,
        uploader=uploader,
        speaker=speaker,
        commands=commands,
        passcode=PasscodeAnswer(adapter, config),
        watchdog=PageWatchdog(
            adapter,
            admitted=timers.is_admitted,
            on_exit=stop.end,
            interval=settings.watchdog_interval_seconds,
            lost_after=settings.lost_page_seconds,
            grace=2 * settings.poll_interval_seconds,
            on_unknown=screens.report,
        ),
        memory=_memory_guard(settings, events, browser, speaker),
        link=link,
    )
    return Bot(config, settings, parts)


def _now_iso() -> str:
    """Now, in the API's timestamp format."""
    return format_utc(datetime.now(UTC))


def _uplink(
    config: BotConfig, settings: AgentSettings, bot_id: str, stream: EventLog
) -> Uplink | None:
    """The bot's link to the control plane; None when the config names none (``meetbot agent``)."""
    if not (config.control_plane_url and config.agent_token):
        return None
    return Uplink(
        config.control_plane_url,
        bot_id,
        config.agent_token,
        settings.data_dir / f"outbox-{bot_id}.sqlite3",
        stream,
        LinkTiming(
            settings.heartbeat_interval_seconds,
            settings.reconnect_min_seconds,
            settings.reconnect_max_seconds,
        ),
    )


def _transcribe_options(
    config: BotConfig, settings: AgentSettings, adapter: PlatformAdapter
) -> TranscribeOptions:
    """The transcriber's options: the host's, with the models the control plane named."""
    return TranscribeOptions(
        # The control plane names the models it validated the bot's options against.
        model=config.transcription_model or settings.transcribe_model,
        deferred_model=config.deferred_transcription_model,
        cpu_threads=settings.transcribe_cpu_threads,
        models_dir=settings.models_dir,
        tracks_per_participant=adapter.audio_per_participant,
        multilingual_idle_s=settings.multilingual_idle_seconds or None,
        backlog_memory_s=settings.transcribe_backlog_memory_seconds,
        final_beam_size=settings.transcribe_final_beam_size,
        backlog_dir=settings.data_dir / "backlog",
    )


def _memory_guard(
    settings: AgentSettings, events: BotEvents, browser: BrowserSession, speaker: Speaker
) -> MemoryGuard:
    """The memory guard with its thresholds (the host's, else the machine's budget's)."""
    warn_mb, limit_mb = thresholds_mb(
        settings.memory_warn_mb, settings.memory_limit_mb, read_budget()
    )
    return MemoryGuard(
        Thresholds(
            warn_mb=warn_mb,
            limit_mb=limit_mb,
            interval=settings.memory_interval_seconds,
            cooldown=settings.memory_relief_cooldown_seconds,
            tidy_interval=settings.memory_tidy_interval_seconds,
        ),
        events.memory,
        _reliefs(browser, speaker),
    )


def _reliefs(browser: BrowserSession, speaker: Speaker) -> list[Relief]:
    """What the memory guard may free without leaving the meeting, cheapest loss first."""

    async def voice() -> bool:
        return speaker.release_voice()

    async def heap() -> bool:
        return await asyncio.to_thread(trim_heap)

    return [
        Relief("browser_caches", browser.relieve_memory, routine=True),
        Relief("voice", voice),
        Relief("agent_heap", heap, routine=True),
    ]
