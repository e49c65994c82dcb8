"""The ``ec2`` launcher: each bot runs on its own EC2 instance booted from the bot image's AMI.

The AMI is the ``amazon-ebs`` build of ``packer/meetbot.pkr.hcl`` (the same image as the
``qemu`` launcher's). An instance's user-data is the same cloud-config as a qemu VM's
(:func:`control_plane.launchers.qemu.user_data`): only the bootstrap grant — the control-plane
URL, the bot id and a one-time, expiring token — which ``meetbot-agent.service`` trades for
the ``BotConfig``. The operator's agent settings (``Settings.fleet_agent_settings``: the TTS
provider and its key, log level, …) come with that answer only, never in user-data, tags or
this launcher's log. The handle id (the bot's ``bot_container_id``) is the instance id.

Every instance is tagged ``meetbot:bot_id``, ``meetbot:workspace_id``, ``meetbot:fleet``
(``Settings.fleet_name``), ``Name`` and the configured extra tags; :meth:`machines` lists the
fleet's instances by those tags for the reconciliation loop.

Launches are idempotent: an instance of the bot that is pending or running is returned as is,
and ``RunInstances`` carries ``ClientToken`` = the bot id, so a retried call (a lost answer,
another replica relaunching after a lapsed claim) never starts a second instance.
``InsufficientInstanceCapacity`` (and the other capacity codes) moves on to the next configured
instance type; ``RequestLimitExceeded`` backs off and tries again; after ``rounds`` passes the
launch fails with the provider's code and message (the bot becomes ``failed/launch_failed``).

boto3 is synchronous: every call runs in a worker thread (``asyncio.to_thread``); botocore's own
retries are off so that the backoff above is the only one.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from agent.contracts.bootstrap import BootstrapGrant
from agent.contracts.bot_config import BotConfig
from control_plane.launchers.base import BootstrapIssuer, LaunchError, LaunchHandle
from control_plane.launchers.qemu import user_data
from control_plane.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ec2.type_defs import FilterTypeDef, TagTypeDef

logger = logging.getLogger(__name__)

BOT_TAG = "meetbot:bot_id"
WORKSPACE_TAG = "meetbot:workspace_id"
FLEET_TAG = "meetbot:fleet"

CAPACITY_CODES = frozenset(
    {
        "InsufficientInstanceCapacity",
        "InsufficientHostCapacity",
        "InsufficientCapacity",
        "Unsupported",  # the type is not offered in the subnet's availability zone
    }
)
"""Codes after which the next instance type is tried."""

THROTTLE_CODES = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException"})
"""Codes after which the same call is tried again after a backoff."""

_NOT_GONE = ["pending", "running"]
_MAX_BACKOFF_S = 60.0


def _code_and_message(exc: ClientError) -> tuple[str, str]:
    error = exc.response.get("Error", {})
    return str(error.get("Code", "Unknown")), str(error.get("Message", ""))


class Ec2Launcher:
    """Starts one EC2 instance per bot and terminates it.

    Args:
        ami: The bot image's AMI id.
        instance_types: Instance types, tried in order when one has no capacity (at least one).
        region: The AWS region.
        fleet: This deployment's fleet name (tag ``meetbot:fleet``).
        subnet_id: The subnet of the instances (empty: the default VPC's).
        security_group_ids: Their security groups (empty: the VPC's default group).
        iam_instance_profile: Their instance profile, a name or an ARN (empty: none).
        tags: Extra tags of every instance and its volumes.
        endpoint_url: The EC2 endpoint (empty: AWS's; tests give moto's).
        rounds: Passes over ``instance_types`` before a launch fails.
        backoff_seconds: First backoff after a throttled call or a pass without capacity
            (doubled each time, at most 60 s).
        credentials: boto3 client keyword arguments (``aws_access_key_id``, …); None uses
            boto3's credential chain.
        bootstrap: Mints each instance's bootstrap token (else set by :meth:`use_bootstrap`).

    Raises:
        ValueError: No AMI or no instance type.
    """

    def __init__(
        self,
        *,
        ami: str,
        instance_types: Sequence[str],
        region: str,
        fleet: str = "default",
        subnet_id: str = "",
        security_group_ids: Sequence[str] = (),
        iam_instance_profile: str = "",
        tags: Mapping[str, str] | None = None,
        endpoint_url: str = "",
        rounds: int = 3,
        backoff_seconds: float = 2.0,
        credentials: Mapping[str, str] | None = None,
        bootstrap: BootstrapIssuer | None = None,
    ) -> None:
        if not ami:
            raise ValueError("MEETBOT_EC2_AMI is not set (the amazon-ebs build's AMI id)")
        if not instance_types:
            raise ValueError("MEETBOT_EC2_INSTANCE_TYPES names no instance type")
        self._ami = ami
        self._types = list(instance_types)
        self._region = region
        self._fleet = fleet
        self._subnet_id = subnet_id
        self._security_group_ids = list(security_group_ids)
        self._profile = iam_instance_profile
        self._tags = dict(tags or {})
        self._endpoint_url = endpoint_url
        self._rounds = rounds
        self._backoff = backoff_seconds
        self._credentials = dict(credentials or {})
        self._bootstrap = bootstrap
        self._client: EC2Client | None = None
        self._client_lock = asyncio.Lock()

    def use_bootstrap(self, issue: BootstrapIssuer) -> None:
        """Mint the instances' bootstrap tokens with ``issue`` (the control plane's issuer)."""
        self._bootstrap = issue

    async def _ec2(self) -> EC2Client:
        async with self._client_lock:
            if self._client is None:
                self._client = await asyncio.to_thread(self._make_client)
            return self._client

    def _make_client(self) -> EC2Client:
        kwargs: dict[str, Any] = dict(self._credentials)
        if self._endpoint_url:
            kwargs["endpoint_url"] = self._endpoint_url
        config = Config(
            retries={"mode": "standard", "total_max_attempts": 1}
        )  # no retry of its own
        client: EC2Client = boto3.client("ec2", region_name=self._region, config=config, **kwargs)
        return client

    def _fleet_filters(self) -> list[FilterTypeDef]:
        return [
            {"Name": f"tag:{FLEET_TAG}", "Values": [self._fleet]},
            {"Name": "tag-key", "Values": [BOT_TAG]},
            {"Name": "instance-state-name", "Values": _NOT_GONE},
        ]

    async def _describe(self, filters: list[FilterTypeDef]) -> list[dict[str, Any]]:
        ec2 = await self._ec2()

        def call() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = []
            for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
                for reservation in page.get("Reservations", []):
                    found.extend(dict(item) for item in reservation.get("Instances", []))
            return found

        try:
            return await asyncio.to_thread(call)
        except (ClientError, BotoCoreError) as exc:
            raise LaunchError(f"EC2 DescribeInstances failed: {exc}") from exc

    def _tag_specifications(self, config: BotConfig) -> list[TagTypeDef]:
        tags = {
            **self._tags,
            "Name": f"meetbot-{config.bot_id}",
            BOT_TAG: str(config.bot_id),
            FLEET_TAG: self._fleet,
        }
        if config.workspace_id is not None:
            tags[WORKSPACE_TAG] = str(config.workspace_id)
        return [{"Key": key, "Value": value} for key, value in sorted(tags.items())]

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Start an instance for ``config``'s bot; the handle id is its instance id.

        Idempotent: a pending or running instance of the bot is returned, and the call's
        ``ClientToken`` is the bot id.

        Raises:
            LaunchError: No bootstrap issuer or control-plane URL, capacity or rate limits
                through every round (the message is the provider's code and message), or
                another refusal of the provider.
        """
        if self._bootstrap is None:
            raise LaunchError("the ec2 launcher has no bootstrap token issuer")
        if not config.control_plane_url:
            raise LaunchError("an instance's bot needs a control_plane_url to bootstrap from")
        running = await self._describe(
            [*self._fleet_filters(), {"Name": f"tag:{BOT_TAG}", "Values": [str(config.bot_id)]}]
        )
        if running:
            instance_id = str(running[0]["InstanceId"])
            logger.info(
                "instance already running",
                extra={"bot_id": str(config.bot_id), "instance": instance_id},
            )
            return LaunchHandle(id=instance_id)
        try:
            token = await self._bootstrap(config)
        except LookupError as exc:
            raise LaunchError(f"no bootstrap token for bot {config.bot_id}: {exc}") from exc
        grant = BootstrapGrant(
            control_plane_url=config.control_plane_url, bot_id=config.bot_id, bootstrap_token=token
        )
        cloud_config = "#cloud-config\n" + json.dumps(user_data(grant)) + "\n"
        instance_id = await self._run(config, cloud_config)
        logger.info(
            "instance started", extra={"bot_id": str(config.bot_id), "instance": instance_id}
        )
        return LaunchHandle(id=instance_id)

    async def _run(self, config: BotConfig, cloud_config: str) -> str:
        """``RunInstances`` across the types and rounds; the new instance's id."""
        last = "no attempt"
        delay = self._backoff
        for round_no in range(self._rounds):
            for instance_type in self._types:
                try:
                    return await self._run_one(config, cloud_config, instance_type)
                except ClientError as exc:
                    code, message = _code_and_message(exc)
                    last = f"{code}: {message}" if message else code
                    if code == "IdempotentParameterMismatch":
                        return await self._by_client_token(config, last)
                    if code not in CAPACITY_CODES | THROTTLE_CODES:
                        raise LaunchError(f"EC2 refused the instance: {last}") from exc
                    logger.warning(
                        "EC2 launch retried",
                        extra={
                            "bot_id": str(config.bot_id),
                            "instance_type": instance_type,
                            "code": code,
                            "round": round_no,
                        },
                    )
                    if code in THROTTLE_CODES:
                        await asyncio.sleep(delay)
                        delay = min(delay * 2, _MAX_BACKOFF_S)
                except BotoCoreError as exc:
                    raise LaunchError(f"EC2 could not be reached: {exc}") from exc
            if round_no + 1 < self._rounds:
                await asyncio.sleep(delay)
                delay = min(delay * 2, _MAX_BACKOFF_S)
        raise LaunchError(f"EC2 gave no instance after {self._rounds} rounds: {last}")

    async def _run_one(self, config: BotConfig, cloud_config: str, instance_type: str) -> str:
        ec2 = await self._ec2()
        tags = self._tag_specifications(config)
        request: dict[str, Any] = {
            "ImageId": self._ami,
            "InstanceType": instance_type,
            "MinCount": 1,
            "MaxCount": 1,
            "UserData": cloud_config,  # botocore base64-encodes it
            "ClientToken": str(config.bot_id),
            "InstanceInitiatedShutdownBehavior": "terminate",
            "TagSpecifications": [
                {"ResourceType": "instance", "Tags": tags},
                {"ResourceType": "volume", "Tags": tags},
            ],
            "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled"},
        }
        if self._subnet_id:
            request["SubnetId"] = self._subnet_id
        if self._security_group_ids:
            request["SecurityGroupIds"] = self._security_group_ids
        if self._profile:
            key = "Arn" if self._profile.startswith("arn:") else "Name"
            request["IamInstanceProfile"] = {key: self._profile}
        answer = await asyncio.to_thread(lambda: ec2.run_instances(**request))
        return str(answer["Instances"][0]["InstanceId"])

    async def _by_client_token(self, config: BotConfig, reason: str) -> str:
        """The instance an earlier call with this bot's ``ClientToken`` started, if alive."""
        found = await self._describe(
            [
                {"Name": "client-token", "Values": [str(config.bot_id)]},
                {"Name": "instance-state-name", "Values": _NOT_GONE},
            ]
        )
        if not found:
            raise LaunchError(f"EC2 refused the instance: {reason}")
        return str(found[0]["InstanceId"])

    async def terminate(self, handle: LaunchHandle) -> None:
        """Terminate the instance ``handle`` names; a no-op when it is already gone.

        Raises:
            LaunchError: EC2 refused or could not be reached.
        """
        if not handle.id.startswith("i-"):
            return
        ec2 = await self._ec2()
        try:
            await asyncio.to_thread(lambda: ec2.terminate_instances(InstanceIds=[handle.id]))
        except ClientError as exc:
            code, _ = _code_and_message(exc)
            if code in {"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"}:
                return
            raise LaunchError(f"EC2 could not terminate {handle.id}: {exc}") from exc
        except BotoCoreError as exc:
            raise LaunchError(f"EC2 could not be reached: {exc}") from exc
        logger.info("instance terminated", extra={"instance": handle.id})

    async def is_alive(self, handle: LaunchHandle) -> bool:
        """Whether the instance ``handle`` names is pending or running.

        Raises:
            LaunchError: EC2 could not be asked.
        """
        if not handle.id.startswith("i-"):
            return False
        found = await self._describe(
            [
                {"Name": "instance-id", "Values": [handle.id]},
                {"Name": "instance-state-name", "Values": _NOT_GONE},
            ]
        )
        return bool(found)

    async def machines(self) -> dict[str, UUID]:
        """This fleet's pending and running instances: instance id → bot id.

        Raises:
            LaunchError: EC2 could not be asked.
        """
        listed: dict[str, UUID] = {}
        for instance in await self._describe(self._fleet_filters()):
            tags = {tag["Key"]: tag["Value"] for tag in instance.get("Tags", [])}
            try:
                listed[str(instance["InstanceId"])] = UUID(tags[BOT_TAG])
            except (KeyError, ValueError):
                continue  # not one of ours after all (a hand-made instance with our tags)
        return listed

    async def aclose(self) -> None:
        """Close the EC2 client; the instances keep running (they belong to their bots)."""
        client, self._client = self._client, None
        if client is not None:
            await asyncio.to_thread(client.close)


def create(settings: Settings) -> Ec2Launcher:
    """Factory used by ``Settings.launcher = "ec2"`` (README "Running on EC2").

    Raises:
        ValueError: ``MEETBOT_EC2_AMI`` is not set or no instance type is.
    """
    return Ec2Launcher(
        ami=settings.ec2_ami,
        instance_types=settings.ec2_instance_types,
        region=settings.ec2_region,
        fleet=settings.fleet_name,
        subnet_id=settings.ec2_subnet_id,
        security_group_ids=settings.ec2_security_group_ids,
        iam_instance_profile=settings.ec2_iam_instance_profile,
        tags=settings.ec2_tags,
        endpoint_url=settings.ec2_endpoint_url,
        rounds=settings.ec2_launch_rounds,
        backoff_seconds=settings.ec2_backoff_seconds,
    )
