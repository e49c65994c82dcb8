"""Settings of the agent process: one frozen object read from ``MEETBOT_AGENT_*`` variables.

Per-bot options (meeting, timeouts, features) travel in
:class:`agent.contracts.bot_config.BotConfig`; these settings describe the machine the agent
runs on (browser, ports, files, intervals). Build one in the entry point and pass it down;
nothing else reads the environment.

``timeout_scale`` is for tests only: it multiplies the admission, startup-alone and left-alone
timeouts of the ``BotConfig`` so end-to-end tests need not wait the API's minimums (30 s, 60 s,
10 s). It is an environment setting of the agent host, so an API client cannot set it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# Chromium flags that keep it quiet on a closed network and let media play without a gesture
# (findings.md §3: without the autoplay flag the capture AudioContext stays suspended).
QUIET_CHROMIUM_ARGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--autoplay-policy=no-user-gesture-required",
)

# Flags that shrink Chromium for one trusted tab (measured with bench/join.py; see the commit
# that added them for figures). One renderer is enough for one meeting page; the zygotes only
# exist to fork sandboxed children (the sandbox is off); with the GPU disabled, the GPU process
# only composites in software and can live in the browser process.
#
# Low-end device mode keeps Chromium's caches at the size of a small machine, which a bot's
# 1 vCPU / 2 GB VM is. Without it every video frame a page draws into a canvas (a platform's
# self-view or effects pipeline; the testmeeting's 1 Hz camera grab) stayed in a software
# rendering cache of ~450 MB: the renderer grew by ~0.9 MB per 640x360 frame until that was
# full (issue 19; tests/agent/test_long_meeting.py holds it flat).
#
# Three minutes after any start Chromium (156 here) launches its on-device AI model service
# (``OnDeviceModelService``, ~110 MB PSS, and it stays) to rate the machine for on-device
# models, unless it knows the machine's performance class: a fresh profile, as Playwright's,
# never does. Feature switches do not stop it; this switch gives the class (2: very low, which
# is true of a bot VM), so nothing is measured (components/optimization_guide/core/
# model_execution/performance_class.cc, ``optimization-guide-performance-class``).
LEAN_CHROMIUM_ARGS: tuple[str, ...] = (
    "--enable-low-end-device-mode",
    "--renderer-process-limit=1",
    "--no-zygote",
    "--in-process-gpu",
    "--disable-site-isolation-trials",
    "--optimization-guide-performance-class=2",
)

# Chromium keeps only the last ``--disable-features`` and the last ``--enable-features``
# switch, and Playwright passes its own lists before ours, so ours must repeat Playwright's
# (playwright-core src/server/chromium/chromiumSwitches.ts, 1.65;
# tests/agent/test_lean_browser.py checks the installed driver against these lists).
PLAYWRIGHT_DISABLED_FEATURES: tuple[str, ...] = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
PLAYWRIGHT_ENABLED_FEATURES: tuple[str, ...] = (
    "CDPScreenshotNewSurface",
    "SkipListAccountsWithoutGaiaCookies",
)
# Subsystems a meeting bot never uses. The omnibox popups are WebUI pages Chromium 151+
# pre-renders at start, headless too, in a renderer of their own (~75 MB; puppeteer PR 15278,
# gotenberg issue 1656); site isolation is pointless for one trusted tab and costs processes.
# The audio and network services run inside the browser process instead of utility processes
# of their own (about 25 MB PSS each, measured with bench/join.py); the page's audio still
# reaches the capture worklet the same way.
LEAN_DISABLED_FEATURES: tuple[str, ...] = (
    "WebUIOmniboxPopup",
    "WebUIOmniboxAimPopup",
    "IsolateOrigins",
    "site-per-process",
    "Translate",
    "BackForwardCache",
    "DialMediaRouteProvider",
    "GlobalMediaControls",
    "OptimizationGuideModelDownloading",
    "AutofillServerCommunication",
    "CertificateTransparencyComponentUpdater",
    "InterestFeedContentSuggestions",
    "AudioServiceOutOfProcess",
)
LEAN_ENABLED_FEATURES: tuple[str, ...] = ("NetworkServiceInProcess2",)
_DISABLE_FEATURES = "--disable-features="
_ENABLE_FEATURES = "--enable-features="


def merge_feature_switches(
    args: list[str], disabled: tuple[str, ...], enabled: tuple[str, ...] = ()
) -> list[str]:
    """``args`` with each features switch folded into one, together with the given names.

    All ``--disable-features`` (and ``--enable-features``) switches become one switch each, together
    with ``disabled`` (``enabled``).

    Chromium honours only the last of each switch, so two would silently drop the first list.
    The merged switches come last; names keep their first-seen order; a switch with no names
    is left out.
    """
    names: dict[str, list[str]] = {
        _DISABLE_FEATURES: list(disabled),
        _ENABLE_FEATURES: list(enabled),
    }
    rest: list[str] = []
    for arg in args:
        prefix = next((p for p in names if arg.startswith(p)), None)
        if prefix is None:
            rest.append(arg)
        else:
            names[prefix].extend(n for n in arg.removeprefix(prefix).split(",") if n)
    merged = [p + ",".join(dict.fromkeys(listed)) for p, listed in names.items() if listed]
    return [*rest, *merged]


def default_cpu_threads(wanted: int) -> int:
    """``wanted`` threads, capped at the number of CPUs this process may run on (at least 1)."""
    return max(1, min(wanted, len(os.sched_getaffinity(0))))


class AgentSettings(BaseSettings):
    """Agent host configuration (environment prefix ``MEETBOT_AGENT_``).

    Durations are seconds. List values are JSON in the environment, e.g.
    ``MEETBOT_AGENT_EXTRA_BROWSER_ARGS='["--host-resolver-rules=MAP meet.google.com 127.0.0.1:9"]'``
    (one ``MAP`` rule per host, findings.md "Real meeting URLs against a local server").
    """

    model_config = SettingsConfigDict(env_prefix="MEETBOT_AGENT_", frozen=True, extra="ignore")

    chromium_path: Path = Path("/usr/bin/chromium")
    # Headful needs an X server (Xvfb on the bot VM); headless is the developer default.
    headless: bool = True
    extra_browser_args: list[str] = Field(default_factory=list)
    ignore_https_errors: bool = False
    viewport_width: int = Field(default=1280, ge=320)
    viewport_height: int = Field(default=720, ge=240)
    # The bot's own display and sound server (images/runtime/): set by the VM's agent unit, or
    # by ``--display`` from the runtime it starts (agent/process/runtime.py). With a display and
    # headless off, Chromium draws on it, its window covering the screen, and a video recording
    # grabs the screen (ffmpeg x11grab). With a PulseAudio server (``unix:/path/to/native``),
    # Chromium plays the meeting into its ``meeting`` sink, a video recording takes its sound
    # from ``meeting.monitor`` and the silence check listens there. Empty: none (headless).
    display: str = ""
    pulse_server: str = ""
    # Where images/runtime/*.sh are (``--display``); None: this checkout's images/runtime, else
    # /opt/meetbot/runtime where the bot image installs them.
    runtime_scripts_dir: Path | None = None

    # Outbox database and local artifacts (screenshots when no control plane is configured).
    data_dir: Path = Path("./agent-data")

    heartbeat_interval_seconds: float = Field(default=5.0, gt=0)
    reconnect_min_seconds: float = Field(default=0.5, gt=0)
    reconnect_max_seconds: float = Field(default=10.0, gt=0)
    # How long the agent keeps trying to deliver its outbox after the meeting before exiting.
    drain_timeout_seconds: float = Field(default=60.0, ge=0)

    # How often the page is probed for meeting state, participants and chat.
    poll_interval_seconds: float = Field(default=0.25, gt=0)
    # How often the speaking indicators are read on a mixed-audio platform (Zoom, Teams), where
    # a turn said without a pause ends when the next speaker's indicator is seen (issue 12).
    speaker_poll_seconds: float = Field(default=0.1, gt=0)
    # Time allowed to load the meeting page and reach its join button.
    join_timeout_seconds: float = Field(default=60.0, gt=0)
    # How often the watchdog checks the page for end, denial and not-found screens (the bot
    # ends within this plus one page probe of such a screen appearing), and how long the page
    # may show no screen the adapter knows (or a page off the meeting's host) before the bot
    # leaves with ``page_lost``.
    watchdog_interval_seconds: float = Field(default=0.5, gt=0, le=2.0)
    lost_page_seconds: float = Field(default=60.0, gt=0)
    # Longest one page evaluation (a probe of the screen, participants, chat) may take before
    # it counts as unanswered. A bot VM under software emulation (TCG) needs far more than a
    # host with KVM; a probe that times out is logged and retried, and only a page silent for
    # lost_page_seconds ends the bot.
    page_timeout_seconds: float = Field(default=20.0, gt=0, le=600)
    # Test-only multiplier of the BotConfig timeouts (see the module docstring).
    timeout_scale: float = Field(default=1.0, gt=0, le=1.0)

    # Transcription (agent/transcribe): the realtime model, its CPU threads, where assembled
    # models are cached, and how long the end of a meeting may take to transcribe. Threads
    # default to 2 but never more than the CPUs this process may run on: on a 1-vCPU bot VM
    # a second decoding thread only spins against the first and starves the event loop.
    transcribe_model: str = "tiny.en"
    transcribe_cpu_threads: int = Field(default_factory=lambda: default_cpu_threads(2), ge=1, le=64)
    models_dir: Path = Path("./data/models")
    finalize_timeout_seconds: float = Field(default=600.0, gt=0)
    # A bot with no language releases its multilingual model after this many seconds of an
    # English meeting without use, and loads it again when needed (agent/transcribe/standby.py);
    # 0 keeps it loaded (about 180 MB) for meetings where people join often in any language.
    multilingual_idle_seconds: float = Field(default=60.0, ge=0)
    # A decoder that falls behind (a VM without KVM) queues the ended utterances' audio; past
    # this many seconds of it the rest waits on disk under data_dir (agent/transcribe/backlog.py).
    transcribe_backlog_memory_seconds: float = Field(default=120.0, gt=0)
    # Beam of the realtime finals; unset: 5 when the decoder probes fast enough at start, else
    # greedy, and greedy while it is slower than the audio (agent/transcribe/passes.py).
    transcribe_final_beam_size: int | None = Field(default=None, ge=1, le=10)

    # Recording (agent/recording): screenshots per second of the bot's view when the bot
    # captures video (JPEG quality 0-100); identical consecutive views are stored once.
    recording_video_fps: float = Field(default=1.0, gt=0, le=10)
    recording_jpeg_quality: int = Field(default=70, ge=10, le=100)
    # A recording longer than this many seconds of meeting is cut into pieces, each encoded
    # and uploaded as soon as it ends (agent/recording/pieces.py), so a crash late in a long
    # meeting keeps all but the last piece. 0: one file, encoded after the meeting.
    recording_piece_seconds: float = Field(default=600.0, ge=0)
    # With a display and a PulseAudio server (above) a video recording is the screen instead:
    # ffmpeg grabs it at this constant frame rate with the meeting's 48 kHz sound
    # (agent/recording/screen.py).
    recording_screen_fps: int = Field(default=15, ge=1, le=60)

    # Media the API names by URL (avatar images, screen-share images and pages) is fetched under
    # the webhook SSRF rules (meetbot_common/ssrf.py): https to global addresses only, unless
    # these allow plain http or private, loopback and link-local addresses (tests, a LAN).
    media_allow_http: bool = False
    media_allow_private: bool = False
    # Speech output (agent/voice): ``piper`` speaks with the packaged offline voice on
    # ``tts_cpu_threads`` ONNX threads; ``openai`` posts to an OpenAI-compatible
    # ``{tts_url}/v1/audio/speech`` with ``tts_api_key``, ``tts_model`` and, when a speak
    # command names no voice, ``tts_voice``.
    tts_provider: Literal["piper", "openai"] = "piper"
    tts_cpu_threads: int = Field(default=1, ge=1, le=16)
    tts_url: str = ""
    tts_api_key: str = ""
    tts_model: str = "tts-1"
    tts_voice: str = "alloy"
    # The offline voice is loaded on the first ``speak`` (114–153 MB of the agent's memory,
    # issue 19), so a bot that never speaks never holds it; the first speech then waits for the
    # load (about 1 s on an idle 2-core machine, several on a busy one; bench/voice.py
    # ``first_audio_cold_s``). True loads it in the background at admission instead.
    voice_preload: bool = False

    # Memory guard rails (agent/memory): every ``memory_interval_seconds`` the agent reads the
    # PSS of its own process tree (Python, Playwright's node driver, Chromium and its
    # renderers). Above ``memory_warn_mb`` it logs and reports a ``memory`` link frame; above
    # ``memory_limit_mb`` it also frees what can be freed without leaving the meeting
    # (Chromium's caches through a critical memory-pressure signal, an idle voice model,
    # Python's free heap), at most once per ``memory_relief_cooldown_seconds``. Unset (the
    # default), the thresholds follow the machine (agent/memory/budget.py): 75% and 85% of
    # the smaller of MemTotal and the agent's cgroup limit, so about 1460 / 1660 MB in a 2 GiB
    # bot VM, where the tree measured 1.1-1.35 GB PSS at its peak with language detection
    # (bench/soak.py). Set them when several agents share one host (the local launcher):
    # each would otherwise count the whole host as its own. 0 turns a threshold off.
    # Every ``memory_tidy_interval_seconds``, whatever the level, the cheap reliefs run anyway
    # (Chromium's caches and garbage, Python's free heap; not the voice): about 100 MB of a
    # bot's tree is memory freed but kept, which this gives back (agent/memory/guard.py). 0 off.
    memory_interval_seconds: float = Field(default=15.0, gt=0)
    memory_warn_mb: float | None = Field(default=None, ge=0)
    memory_limit_mb: float | None = Field(default=None, ge=0)
    memory_relief_cooldown_seconds: float = Field(default=120.0, ge=0)
    memory_tidy_interval_seconds: float = Field(default=60.0, ge=0)

    log_level: str = "INFO"

    @property
    def screen(self) -> bool:
        """Whether the bot runs headful on its own display and sound server (the VM runtime)."""
        return not self.headless and bool(self.display) and bool(self.pulse_server)

    def browser_args(self) -> list[str]:
        """Chromium command-line flags: the quiet and lean sets plus ``extra_browser_args``.

        One ``--disable-features`` and one ``--enable-features`` switch hold Playwright's, the lean
        and the extra names.
        """
        return merge_feature_switches(
            [*QUIET_CHROMIUM_ARGS, *LEAN_CHROMIUM_ARGS, *self.extra_browser_args],
            (*PLAYWRIGHT_DISABLED_FEATURES, *LEAN_DISABLED_FEATURES),
            (*PLAYWRIGHT_ENABLED_FEATURES, *LEAN_ENABLED_FEATURES),
        )
