"""Settings of the control plane: one frozen object, read from ``MEETBOT_*`` variables.

Build it once in the process entry point (``Settings()``) and pass it to ``create_app``;
nothing reads the environment anywhere else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from aiohttp import web
from pydantic import Field, IPvAnyNetwork, SecretStr, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from agent.contracts.agent_settings import HandedOverSettings, handed_over


def _split_csv(value: object) -> object:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class _HandedOverAgentSettings(PydanticBaseSettingsSource):
    """``fleet_agent_settings``: the environment's ``MEETBOT_AGENT_*``.

    :func:`agent.contracts.agent_settings.handed_over` picks them.
    """

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        """Unused: :meth:`__call__` gives the one field this source fills."""
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found = handed_over(os.environ)
        if not found or "fleet_agent_settings" in self.current_state:
            return {}  # none declared, or given to the constructor (tests)
        return {"fleet_agent_settings": found}


class Settings(BaseSettings):
    """Control-plane configuration (environment prefix ``MEETBOT_``).

    Durations are seconds unless the name says otherwise.
    """

    model_config = SettingsConfigDict(env_prefix="MEETBOT_", frozen=True, extra="ignore")

    # Where files live: the SQLite database, artifacts, keys.
    data_dir: Path = Path("./data")
    # SQLAlchemy async URL; empty means SQLite at {data_dir}/meetbot.db.
    database_url: str = ""
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    # URL at which agents and API clients reach this control plane; empty means http://host:port.
    public_url: str = ""

    key_prefix: str = "mbk"
    rate_limit_per_second: float = Field(default=20.0, gt=0)
    rate_limit_burst: int = Field(default=100, ge=1)
    # Per client address, for requests with no key, a malformed or unknown key (before the
    # lookup), and unauthenticated writes (invitation acceptance); docs/api.md 2.1.
    address_rate_limit_per_second: float = Field(default=5.0, gt=0)
    address_rate_limit_burst: int = Field(default=50, ge=1)
    # The proxies (addresses or networks, comma-separated: "10.0.0.0/8,127.0.0.1") whose
    # Forwarded / X-Forwarded-For headers name the client (control_plane.api.client_address);
    # empty: the TCP peer is the client and those headers are ignored. Keep it to the load
    # balancers in front of the API: a listed address can claim to be any client.
    trusted_proxies: Annotated[list[IPvAnyNetwork], NoDecode] = Field(default_factory=list)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxy_list(cls, value: object) -> object:
        return _split_csv(value)

    # Quotas per workspace (docs/api.md 2.10): over one, creation answers 409 quota_exceeded.
    max_webhook_endpoints: int = Field(default=20, ge=1)
    max_api_keys: int = Field(default=100, ge=1)
    max_action_prompts: int = Field(default=1000, ge=1)
    max_pending_invitations: int = Field(default=100, ge=1)
    # Bots not yet final and not waiting for a scheduled start (requested … stopping).
    max_concurrent_bots: int = Field(default=100, ge=1)
    # List requests (GET /meetings, GET /bots) served at once per process; more wait their
    # turn, so writes are not starved by lists (control_plane.api.list_gate).
    list_concurrency: int = Field(default=2, ge=1)
    # ... and once no bot creation has been in flight for 0.25 s (lists alone run as before).
    list_concurrency_idle: int = Field(default=8, ge=1)
    # Largest artifact (recording, screenshot) an agent may upload through the control plane.
    max_upload_bytes: int = Field(default=4 * 1024**3, ge=1)
    # Seconds an API-key lookup is reused in-process (0 disables); see control_plane.auth.key_cache.
    auth_cache_ttl_seconds: float = Field(default=2.0, ge=0)
    stream_token_ttl_seconds: int = Field(default=900, ge=10)
    # How long a signing key replaced by `meetbot admin rotate-signing-key` still verifies the
    # stream tokens it signed and derives the agent tokens of bots launched with it (the key
    # ring lives in the database, sealed with token_encryption_key). Longer than a stream
    # token lives and than a bootstrap token waits; the default covers a bot's whole life.
    signing_key_retention_seconds: float = Field(default=172800.0, ge=60)
    presigned_url_ttl_seconds: int = Field(default=3600, ge=1)
    subscribe_wait_seconds: float = Field(default=30.0, ge=0)
    # The bot streams served here (docs/api.md 2.7): a ``: ping`` comment this often; each
    # replica keeps at most this much of each bot's newest events in memory (older ones are
    # fetched from the agent); a stream whose bot stayed final this long without an event ends
    # even when the agent's end never came (agent lost). A stream of a bot with enable_actions
    # open at the agent's end stays open up to stream_summary_wait_seconds for the meeting's
    # summary (`summary_ready`; 0: it ends with the agent's stream).
    stream_ping_seconds: float = Field(default=15.0, gt=0)
    stream_window_bytes: int = Field(default=256 * 1024, ge=1024)
    stream_end_check_seconds: float = Field(default=15.0, gt=0)
    stream_summary_wait_seconds: float = Field(default=600.0, ge=0)

    launcher: Literal["local", "memory", "qemu", "ec2", "kubernetes"] = "local"
    # Hosts accepted in meeting URLs beside the platforms' own (e.g. the testmeeting server).
    extra_meeting_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)

    scheduler_interval_seconds: float = Field(default=1.0, gt=0)
    # How long a scheduler's claim of a due bot holds: a bot still without a handle after it
    # (its claimer died mid-launch) is launched again. Longer than the slowest launch.
    launch_lease_seconds: float = Field(default=120.0, gt=0)
    # Launches in flight at once per scheduler (a burst of creations waits its turn; each
    # launcher call may be a cloud API request or a VM start).
    launch_concurrency: int = Field(default=16, ge=1)
    # The local launcher's agent program (comma-separated; "--config <file>" is appended).
    # Empty: this interpreter running "-m agent". Tests use a stand-in that starts no browser.
    local_agent_command: Annotated[list[str], NoDecode] = Field(default_factory=list)
    heartbeat_timeout_seconds: float = Field(default=30.0, gt=0)
    # The qemu launcher (one VM per bot): the bot image (`meetbot image path` prints it), each
    # VM's vCPUs and memory, the accelerator (auto: KVM where it boots the image's kernel), the
    # host's loopback as the VMs see it (user-mode networking), and the niceness of qemu.
    qemu_image: Path | None = None
    qemu_cpus: int = Field(default=1, ge=1)
    qemu_memory_mib: int = Field(default=2048, ge=256)
    qemu_accelerator: Literal["auto", "kvm", "tcg"] = "auto"
    qemu_host_address: str = "10.0.2.2"
    qemu_nice: int = Field(default=0, ge=0, le=19)
    # MEETBOT_AGENT_* settings for the agents in the VMs (a JSON object; in user-data, so
    # nothing secret), e.g. {"MEETBOT_AGENT_LOG_LEVEL": "DEBUG"}.
    qemu_agent_env: dict[str, str] = Field(default_factory=dict)
    # The ec2 launcher (one instance per bot; README "Running on EC2"): the bot image's AMI,
    # instance types tried in order when one has no capacity, the subnet, security groups, IAM
    # instance profile (name or ARN) and extra tags of every instance; the region and an
    # endpoint override (empty: AWS's). Credentials come from boto3's chain (instance role, env).
    # A launch makes up to ec2_launch_rounds passes over the types, backing off
    # ec2_backoff_seconds (doubling) after a throttled call or a pass without capacity.
    ec2_ami: str = ""
    ec2_instance_types: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["c7i.large", "c6i.large", "m7i.large"]
    )
    ec2_subnet_id: str = ""
    ec2_security_group_ids: Annotated[list[str], NoDecode] = Field(default_factory=list)
    ec2_iam_instance_profile: str = ""
    ec2_tags: dict[str, str] = Field(default_factory=dict)
    ec2_region: str = "us-east-1"
    ec2_endpoint_url: str = ""
    ec2_launch_rounds: int = Field(default=3, ge=1, le=20)
    ec2_backoff_seconds: float = Field(default=2.0, ge=0)
    # The kubernetes launcher (one Pod per bot; README "Running on Kubernetes"): the bot
    # container image (images/Containerfile), the namespace, the runtime class (e.g. kata for
    # VM isolation; empty: the cluster's default), requests and limits, the size of /dev/shm,
    # and the kubeconfig file outside a cluster (empty: ~/.kube/config; in a Pod: in-cluster).
    kubernetes_image: str = ""
    kubernetes_namespace: str = "meetbot"
    kubernetes_runtime_class: str = ""
    kubernetes_cpu_request: str = "1"
    kubernetes_cpu_limit: str = "2"
    kubernetes_memory_request: str = "2Gi"
    kubernetes_memory_limit: str = "3Gi"
    kubernetes_shm_size: str = "1Gi"
    kubernetes_kubeconfig: str = ""
    # Agent host settings every bot gets, declared with the agent's own names
    # (MEETBOT_AGENT_TTS_API_KEY=..., MEETBOT_AGENT_LOG_LEVEL=...; read from those variables,
    # agent/contracts/agent_settings.py): local agents inherit them, bots on their own machine
    # (qemu, ec2, kubernetes) get them in the bootstrap exchange's answer only. The machine's
    # own (paths, display) are left out; the secret ones are never logged.
    fleet_agent_settings: HandedOverSettings = Field(default_factory=dict)
    # The name of this deployment's fleet: cloud machines carry it (EC2 tag / Kubernetes label
    # meetbot:fleet) and reconciliation touches only machines of its own fleet.
    fleet_name: str = Field(
        default="default", pattern=r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$"
    )
    # Reconciliation (launchers that list their machines): every this many seconds, machines
    # without a live bot are terminated and live bots whose machine is gone fail (agent_lost);
    # a bot launched less than reconcile_grace_seconds ago is not judged (listings lag).
    reconcile_interval_seconds: float = Field(default=60.0, gt=0)
    reconcile_grace_seconds: float = Field(default=120.0, ge=0)
    # How long a bot machine's one-time bootstrap token (in its user-data) can be exchanged for
    # its BotConfig: a boot under emulation (TCG) on a loaded host takes minutes.
    bootstrap_token_ttl_seconds: float = Field(default=1800.0, gt=0)

    # Agent link: a launched agent that never connects within this is failed/launch_failed
    # (a VM boot plus Chromium start fits well inside it).
    agent_connect_timeout_seconds: float = Field(default=180.0, gt=0)
    # How long a live route waits for the agent's command_result before answering 504.
    agent_command_timeout_seconds: float = Field(default=20.0, gt=0)
    # Lifetime of an upload URL handed to an agent (screenshots, recordings).
    upload_url_ttl_seconds: int = Field(default=900, ge=10)
    # A finished bot whose VM/process still runs this long after its end is torn down.
    agent_teardown_grace_seconds: float = Field(default=120.0, gt=0)
    # Agent-link frames are stored many links per transaction (control_plane/agent_link/batch.py):
    # at most this many frames per transaction, this many transactions in flight at once, and
    # a batch waits at most this long for more frames before its transaction starts.
    link_batch_max_frames: int = Field(default=500, ge=1)
    link_batch_writers: int = Field(default=2, ge=1)
    link_batch_max_wait_seconds: float = Field(default=0.02, ge=0)

    # Artifact storage: "local" (files under data_dir, signed URLs served by this process) or
    # "s3" (presigned URLs of an S3-compatible bucket; empty credentials = boto3's chain).
    storage: Literal["local", "s3"] = "local"
    s3_bucket: str = ""
    s3_region: str = "us-east-1"
    s3_endpoint_url: str = ""
    s3_access_key_id: str = ""
    s3_secret_access_key: str = ""

    zoom_api_base_url: str = "https://api.zoom.us/v2"
    zoom_oauth_url: str = "https://zoom.us/oauth/token"
    zoom_client_id: str = ""
    zoom_client_secret: str = ""
    # Fernet key (urlsafe base64) sealing stored third-party tokens; empty means a key file
    # {data_dir}/token-encryption.key made on first start (replicas must share this setting).
    token_encryption_key: str = ""

    webhook_provider: Literal["embedded", "svix"] = "embedded"
    svix_api_key: str = ""
    svix_server_url: str = ""
    webhook_allow_http: bool = False
    webhook_allow_private: bool = False
    # Delays before each retry after the first failure (docs/api.md 2.8); tests shorten them.
    webhook_retry_schedule: Annotated[list[float], NoDecode] = Field(
        default_factory=lambda: [0.0, 5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0, 36000.0]
    )
    # How often an idle webhook worker looks for new events and due retries (seconds).
    webhook_poll_interval_seconds: float = Field(default=0.25, gt=0)

    # The summary at the end of a meeting (docs/api.md 2.14; control_plane/intelligence/
    # summary_worker.py), for bots with enable_actions: first due ..._SETTLE_SECONDS after the
    # bot is final, once the agent said its transcript is complete (transcription_ready, after
    # its last final) or, when it never says so, ..._TRANSCRIPT_WAIT_SECONDS after the end;
    # claimed under a lease of ..._LEASE_SECONDS; ..._MAX_ATTEMPTS tries, waiting
    # ..._RETRY_BASE_SECONDS doubling to ..._RETRY_MAX_SECONDS between them; the transcript goes
    # to the model in parts of ..._CHUNK_CHARS characters (map, then reduce), each answer at most
    # ..._MAX_TOKENS tokens (3840 characters, about 1300 tokens, fit the embedded model's 2048-token
    # context beside a 512-token answer; raise it for a larger model, e.g. 48000 for gpt-4o-mini);
    # an idle worker looks for due summaries every ..._POLL_SECONDS.
    intelligence_summary_settle_seconds: float = Field(default=30.0, ge=0)
    intelligence_summary_transcript_wait_seconds: float = Field(default=300.0, ge=0)
    intelligence_summary_lease_seconds: float = Field(default=600.0, gt=0)
    intelligence_summary_max_attempts: int = Field(default=5, ge=1, le=50)
    intelligence_summary_retry_base_seconds: float = Field(default=10.0, gt=0)
    intelligence_summary_retry_max_seconds: float = Field(default=600.0, gt=0)
    intelligence_summary_chunk_chars: int = Field(default=3840, ge=200)
    intelligence_summary_max_tokens: int = Field(default=512, ge=64, le=16384)
    intelligence_summary_poll_seconds: float = Field(default=5.0, gt=0)

    refine_after_meeting: bool = False
    # Whisper models the bots use (registry names of agent.contracts.whisper_models or local
    # CTranslate2 directories on the bot hosts); bot creation refuses options they cannot serve.
    transcription_model: str = "tiny.en"
    # Empty: the deferred pass picks the realtime model for English, the multilingual one otherwise.
    deferred_transcription_model: str = ""
    log_level: str = "INFO"

    # Live action detection in the control plane (docs/api.md 2.9; control_plane/intelligence/
    # worker.py), for bots with enable_actions: a window of a meeting's stored final segments
    # closes after a pause (no new segment for ..._WINDOW_PAUSE_SECONDS, or a gap that long
    # between two) or once it holds ..._WINDOW_MAX_SPEECH_SECONDS of speech. Each replica analyses
    # at most ..._MEETINGS_AT_ONCE meetings, holding each by a lease of ..._LEASE_SECONDS
    # (renewed as it runs), looking for new segments every ..._POLL_SECONDS. Budget per
    # workspace and replica: calls and tokens per rolling minute. A window's call is given
    # ..._WINDOW_TIMEOUT_SECONDS (queueing in the model included) and ..._WINDOW_ATTEMPTS tries on
    # transient errors, backing off from ..._RETRY_BASE_SECONDS doubling to ..._RETRY_MAX_SECONDS;
    # an action whose type and text (..._DEDUPE_SIMILARITY alike) were already stored is dropped.
    intelligence_window_pause_seconds: float = Field(default=4.0, gt=0)
    intelligence_window_max_speech_seconds: float = Field(default=30.0, gt=0)
    intelligence_poll_seconds: float = Field(default=1.0, gt=0)
    intelligence_lease_seconds: float = Field(default=30.0, gt=0)
    intelligence_meetings_at_once: int = Field(default=64, ge=1)
    intelligence_workspace_calls_per_minute: int = Field(default=120, ge=1)
    intelligence_workspace_tokens_per_minute: int = Field(default=400_000, ge=256)
    intelligence_window_timeout_seconds: float = Field(default=120.0, gt=0)
    intelligence_window_attempts: int = Field(default=3, ge=1, le=10)
    intelligence_retry_base_seconds: float = Field(default=1.0, gt=0)
    intelligence_retry_max_seconds: float = Field(default=30.0, gt=0)
    intelligence_action_max_tokens: int = Field(default=384, ge=32, le=8192)
    intelligence_dedupe_similarity: float = Field(default=0.8, gt=0, le=1)

    # The replica's one language model for action detection and summaries (control_plane/
    # intelligence/chat_wiring.py): PROVIDER "embedded" runs ..._EMBEDDED_MODEL (a packaged
    # model's name, control_plane/intelligence/models.py, or a GGUF path; joined once under
    # {data_dir}/models) in this process with ..._EMBEDDED_THREADS CPU threads and
    # ..._EMBEDDED_SLOTS sequences decoded at once (windows of several meetings batched), each
    # slot ..._EMBEDDED_CONTEXT_TOKENS long; it loads on first use. "openai" calls the OpenAI-
    # compatible chat-completions API at ..._BASE_URL (empty: api.openai.com) with ..._API_KEY
    # and ..._MODEL, allowing ..._CONNECT_TIMEOUT_SECONDS to connect and
    # ..._REQUEST_TIMEOUT_SECONDS for a call.
    intelligence_provider: Literal["embedded", "openai"] = "embedded"
    intelligence_base_url: str = ""
    intelligence_api_key: SecretStr = SecretStr("")
    intelligence_model: str = "gpt-4o-mini"
    intelligence_connect_timeout_seconds: float = Field(default=5.0, gt=0)
    intelligence_request_timeout_seconds: float = Field(default=120.0, gt=0)
    intelligence_embedded_model: str = "qwen2.5-coder-0.5b-instruct"
    intelligence_embedded_threads: int = Field(default=1, ge=1, le=64)
    intelligence_embedded_slots: int = Field(default=4, ge=1, le=64)
    intelligence_embedded_context_tokens: int = Field(default=2048, ge=256, le=131072)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """pydantic-settings' sources, with ``fleet_agent_settings`` read from the agent's names."""
        return (
            init_settings,
            _HandedOverAgentSettings(settings_cls),
            env_settings,
            dotenv_settings,
            file_secret_settings,
        )

    @field_validator(
        "extra_meeting_hosts",
        "webhook_retry_schedule",
        "local_agent_command",
        "ec2_instance_types",
        "ec2_security_group_ids",
        mode="before",
    )
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        return _split_csv(value)

    @property
    def effective_database_url(self) -> str:
        """The database URL in use (the SQLite default under ``data_dir`` when unset)."""
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'meetbot.db').resolve()}"

    @property
    def effective_public_url(self) -> str:
        """The base URL agents and clients use to reach this control plane."""
        return self.public_url.rstrip("/") or f"http://{self.host}:{self.port}"


SETTINGS = web.AppKey("settings", Settings)
"""The process's settings on the application."""
