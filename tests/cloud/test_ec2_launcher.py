"""The ec2 launcher against moto's EC2 server on loopback, inside the real app (SQLite, PostgreSQL).

moto is the AWS API emulator (real HTTP, real boto3 and botocore on the launcher's side). What
moto cannot do is run out of capacity: a small proxy in front of it answers ``RunInstances``
with AWS's error document (``InsufficientInstanceCapacity``, ``RequestLimitExceeded``) as many
times as a test queues, and forwards everything else. moto also ignores ``ClientToken``
(every call starts an instance) and does not filter on ``client-token``; the launcher's own
look-up of the bot's running instance is what keeps launches idempotent here.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from aiohttp import ClientSession, web
from moto.server import ThreadedMotoServer
from pytest_aiohttp import AiohttpServer
from sqlalchemy import select, text

from agent.contracts.bootstrap import BOOTSTRAP_GRANT_FILE, BootstrapGrant
from agent.contracts.wire import agent_bootstrap_path, bearer
from control_plane.agent_hub.agent_tokens import agent_token_digest
from control_plane.agent_hub.hub import AgentHub
from control_plane.agent_hub.keys import AGENT_HUB
from control_plane.agent_link.reconciler import SWEEP_LOCK, Reconciler
from control_plane.db.engine import DB
from control_plane.db.models.agent_link import AgentLink
from control_plane.db.models.bot import Meeting
from control_plane.hooks import STATUS_HOOKS
from control_plane.launchers.base import LaunchError, LaunchHandle
from control_plane.launchers.ec2 import BOT_TAG, FLEET_TAG, WORKSPACE_TAG, Ec2Launcher
from control_plane.settings import Settings
from tests.handed_settings import HANDED, SECRET, logged
from tests.plugins.agent_link import Client, LaunchBot
from tests.plugins.api_app import KEY_PREFIX, Caller

if TYPE_CHECKING:
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ec2.type_defs import TagSpecificationTypeDef, TagTypeDef

pytestmark = pytest.mark.api

CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
TYPES = ["c7i.large", "c6i.large"]
CAPACITY = "InsufficientInstanceCapacity"
THROTTLED = "RequestLimitExceeded"


@dataclass(frozen=True)
class Aws:
    """moto's endpoint and what an operator would have made: the AMI, network and profile."""

    endpoint: str
    ami: str
    subnet: str
    security_group: str
    profile: str

    def client(self) -> EC2Client:
        """A boto3 EC2 client of moto (what the test looks with, beside the launcher)."""
        return _ec2(self.endpoint)


def _ec2(endpoint: str) -> EC2Client:
    ec2: EC2Client = boto3.client(
        "ec2",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    return ec2


@pytest.fixture(scope="module")
def aws() -> Iterator[Aws]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    ec2 = _ec2(endpoint)
    iam = boto3.client(
        "iam",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    ami = ec2.register_image(Name="meetbot-bot", RootDeviceName="/dev/xvda")["ImageId"]
    subnet = ec2.describe_subnets()["Subnets"][0]["SubnetId"]
    group = ec2.create_security_group(GroupName="meetbot-bots", Description="bots")["GroupId"]
    iam.create_instance_profile(InstanceProfileName="meetbot-bot")
    yield Aws(endpoint, str(ami), subnet, group, "meetbot-bot")
    server.stop()


@dataclass
class FaultyProxy:
    """Forwards to moto; answers the next ``RunInstances`` calls with the queued error codes."""

    target: str
    faults: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)  # every call's parameters, as sent

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.bodies.append(body)
        if b"Action=RunInstances" in body and self.faults:
            code = self.faults.pop(0)
            self.refused.append(code)
            # The shape of EC2's error responses (AWS EC2 API reference, "Error codes").
            message = (
                "We currently do not have sufficient capacity in the Availability Zone you "
                "requested (us-east-1a)."
                if code == CAPACITY
                else "Request limit exceeded."
            )
            xml = (
                '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
                f"<Code>{code}</Code><Message>{message}</Message></Error></Errors>"
                f"<RequestID>{uuid.uuid4()}</RequestID></Response>"
            )
            return web.Response(
                status=500 if code == CAPACITY else 503, text=xml, content_type="text/xml"
            )
        headers = {
            key: value
            for key, value in request.headers.items()
            if key.lower() not in {"host", "content-length", "transfer-encoding"}
        }
        async with (
            ClientSession() as session,
            session.request(
                request.method, self.target + request.path_qs, data=body, headers=headers
            ) as answer,
        ):
            return web.Response(
                status=answer.status,
                body=await answer.read(),
                content_type=answer.content_type,
            )


@pytest.fixture
async def proxy(aws: Aws, aiohttp_server: AiohttpServer) -> AsyncIterator[tuple[FaultyProxy, str]]:
    faulty = FaultyProxy(aws.endpoint)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", faulty.handle)
    server = await aiohttp_server(app)
    yield faulty, str(server.make_url("")).rstrip("/")


@pytest.fixture
def fleet() -> str:
    """A fleet of this test's own (moto's server is shared by the module's tests)."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """The app reconciles every 0.2 s with no grace (moto lists what it launched at once)."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",  # replaced by the ec2 launcher passed to create_app
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:1",
        scheduler_interval_seconds=0.05,
        reconcile_interval_seconds=0.2,
        reconcile_grace_seconds=0.0,
        fleet_agent_settings=HANDED,
    )


@pytest.fixture
async def launcher(  # the app's launcher (the API plugin's fixture gives a memory one)
    aws: Aws, proxy: tuple[FaultyProxy, str], fleet: str
) -> AsyncIterator[Ec2Launcher]:
    ec2 = Ec2Launcher(
        ami=aws.ami,
        instance_types=TYPES,
        region="us-east-1",
        fleet=fleet,
        subnet_id=aws.subnet,
        security_group_ids=[aws.security_group],
        iam_instance_profile=aws.profile,
        tags={"team": "bots"},
        endpoint_url=proxy[1],
        rounds=2,
        backoff_seconds=0.01,
        credentials=CREDENTIALS,
    )
    yield ec2
    await ec2.aclose()


def _instance(aws: Aws, instance_id: str) -> dict[str, Any]:
    found = aws.client().describe_instances(InstanceIds=[instance_id])
    instance: dict[str, Any] = dict(found["Reservations"][0]["Instances"][0])
    return instance


def _state(aws: Aws, instance_id: str) -> str:
    return str(_instance(aws, instance_id)["State"]["Name"])


def _user_data(aws: Aws, instance_id: str) -> str:
    answer = aws.client().describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    return base64.b64decode(answer["UserData"]["Value"]).decode()


async def _wait(check: Callable[[], Awaitable[bool]], what: str, limit: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not await check():
        assert loop.time() < deadline, f"not within {limit} s: {what}"
        await asyncio.sleep(0.05)


async def _status(client: Client, owner: Caller, bot_id: uuid.UUID) -> tuple[str, str | None]:
    got = await client.get(f"/api/v1/bots/{bot_id}", headers=owner.headers)
    body = await got.json()
    return str(body["status"]), body["status_reason"]


async def test_launch_boots_the_ami_with_the_grant_and_tags_and_terminate_ends_it(
    client: Client,
    launch_bot: LaunchBot,
    launcher: Ec2Launcher,
    aws: Aws,
    fleet: str,
    owner: Caller,
) -> None:
    bot = await launch_bot()
    async with client.app[DB].reads() as session:
        handle_id = await session.scalar(
            select(Meeting.bot_container_id).where(Meeting.id == bot.meeting_id)
        )
    assert handle_id is not None and handle_id.startswith("i-")
    instance = _instance(aws, handle_id)
    assert instance["ImageId"] == aws.ami
    assert instance["InstanceType"] == TYPES[0]
    assert instance["SubnetId"] == aws.subnet
    assert [group["GroupId"] for group in instance["SecurityGroups"]] == [aws.security_group]
    assert instance["IamInstanceProfile"]["Arn"].endswith("/meetbot-bot")
    tags = {tag["Key"]: tag["Value"] for tag in instance["Tags"]}
    assert tags[BOT_TAG] == str(bot.bot_id)
    assert tags[WORKSPACE_TAG] == str(owner.workspace_id)
    assert (tags[FLEET_TAG], tags["team"], tags["Name"]) == (fleet, "bots", f"meetbot-{bot.bot_id}")

    # User-data: a cloud-config whose only file is the grant; no agent token anywhere (there is
    # none yet: the exchange mints it).
    data = _user_data(aws, handle_id)
    assert data.startswith("#cloud-config\n")
    assert bot.config.agent_token is None
    files = json.loads(data.removeprefix("#cloud-config\n"))["write_files"]
    assert [(f["path"], f["permissions"]) for f in files] == [(BOOTSTRAP_GRANT_FILE, "0600")]
    grant = BootstrapGrant.model_validate_json(files[0]["content"])
    assert (grant.bot_id, grant.control_plane_url) == (bot.bot_id, "http://127.0.0.1:1")

    # The token buys the config once.
    path = agent_bootstrap_path(bot.bot_id)
    first = await client.post(path, headers=bearer(grant.bootstrap_token))
    assert first.status == 200
    agent_token = (await first.json())["agent_token"]
    assert agent_token not in data
    async with client.app[DB].reads() as session:  # the token the bot's link accepts
        digest = await session.scalar(
            select(AgentLink.token_digest).where(AgentLink.meeting_id == bot.meeting_id)
        )
    assert digest == agent_token_digest(agent_token)
    again = await client.post(path, headers=bearer(grant.bootstrap_token))
    assert (again.status, (await again.json())["code"]) == (409, "bootstrap_token_used")

    # Launching the bot again gives its running instance, not a second one.
    assert (await launcher.launch(bot.config)).id == handle_id
    assert await launcher.machines() == {handle_id: bot.bot_id}
    assert await launcher.is_alive(LaunchHandle(id=handle_id))

    await launcher.terminate(LaunchHandle(id=handle_id))
    assert _state(aws, handle_id) in {"shutting-down", "terminated"}
    assert not await launcher.is_alive(LaunchHandle(id=handle_id))
    assert await launcher.machines() == {}
    await launcher.terminate(LaunchHandle(id=handle_id))  # gone already: a no-op
    await launcher.terminate(LaunchHandle(id="i-0123456789abcdef0"))  # never existed


async def test_a_secret_agent_setting_reaches_the_machine_only_through_the_bootstrap_exchange(
    client: Client,
    launch_bot: LaunchBot,
    proxy: tuple[FaultyProxy, str],
    aws: Aws,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    bot = await launch_bot()
    async with client.app[DB].reads() as session:
        handle_id = await session.scalar(
            select(Meeting.bot_container_id).where(Meeting.id == bot.meeting_id)
        )
    assert handle_id is not None
    # Not in any EC2 call's parameters (RunInstances' user-data is base64 in there: decoded
    # too), the instance's tags or user-data, the log, or the row that holds the token.
    run = [body for body in proxy[0].bodies if b"Action=RunInstances" in body]
    assert run and not any(SECRET.encode() in body for body in proxy[0].bodies)
    data = _user_data(aws, handle_id)
    assert SECRET not in data and "TTS" not in data
    assert SECRET not in json.dumps(_instance(aws, handle_id), default=str)
    grant = BootstrapGrant.model_validate_json(
        json.loads(data.removeprefix("#cloud-config\n"))["write_files"][0]["content"]
    )
    async with client.app[DB].reads() as session:
        stored = await session.scalar(text("SELECT config FROM bootstrap_tokens"))
    assert stored is not None and SECRET not in stored

    answer = await client.post(
        agent_bootstrap_path(bot.bot_id), headers=bearer(grant.bootstrap_token)
    )
    assert answer.status == 200
    assert (await answer.json())["agent_settings"] == HANDED
    assert SECRET not in logged(caplog.records)


async def test_capacity_and_rate_limits_are_retried_across_types_then_the_launch_fails(
    client: Client,
    launch_bot: LaunchBot,
    launcher: Ec2Launcher,
    proxy: tuple[FaultyProxy, str],
    aws: Aws,
    owner: Caller,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="control_plane.bots.config_builder")
    faulty = proxy[0]
    faulty.faults = [CAPACITY]  # the first type has none: the second is used
    bot = await launch_bot()
    async with client.app[DB].reads() as session:
        handle_id = await session.scalar(
            select(Meeting.bot_container_id).where(Meeting.id == bot.meeting_id)
        )
    assert handle_id is not None
    assert _instance(aws, handle_id)["InstanceType"] == TYPES[1]
    assert faulty.refused == [CAPACITY]

    faulty.refused.clear()
    faulty.faults = [THROTTLED, CAPACITY, CAPACITY]  # throttled, then no capacity, then one
    other = await launch_bot()
    assert faulty.refused == [THROTTLED, CAPACITY, CAPACITY]
    async with client.app[DB].reads() as session:
        other_id = await session.scalar(
            select(Meeting.bot_container_id).where(Meeting.id == other.meeting_id)
        )
    assert other_id is not None and _instance(aws, other_id)["InstanceType"] == TYPES[1]

    # Every round of every type refused: the launch fails with the provider's reason.
    faulty.refused.clear()
    faulty.faults = [CAPACITY] * 4
    with pytest.raises(LaunchError, match=f"after 2 rounds: {CAPACITY}: We currently"):
        await launch_bot()
    assert faulty.refused == [CAPACITY] * 4

    # Through the API: the scheduler's launch fails and the bot is failed/launch_failed.
    faulty.refused.clear()
    faulty.faults = [CAPACITY] * 4
    body = {"platform": "google_meet", "native_meeting_id": "abc-defg-hij"}
    created = await client.post("/api/v1/bots", json=body, headers=owner.headers)
    assert created.status == 201, await created.text()
    created_body = await created.json()
    bot_id = uuid.UUID(created_body["bot_id"])

    async def failed() -> bool:
        return (await _status(client, owner, bot_id))[0] == "failed"

    await _wait(failed, "the bot failed")
    assert await _status(client, owner, bot_id) == ("failed", "launch_failed")
    reasons = [
        getattr(record, "reason", "")
        for record in caplog.records
        if getattr(record, "bot_id", None) == str(bot_id)
    ]
    provider = f"after 2 rounds: {CAPACITY}: We currently do not have sufficient capacity"
    assert any(provider in reason for reason in reasons), reasons
    # The API user reads the provider's reason on the bot record, not only the operator's log.
    record = await (await client.get(f"/api/v1/bots/{bot_id}", headers=owner.headers)).json()
    assert provider in record["status_detail"], record
    assert created_body["status_detail"] is None  # nothing to say at creation
    assert faulty.refused == [CAPACITY] * 4
    assert bot_id not in set((await launcher.machines()).values())


async def test_the_loop_terminates_orphans_and_fails_bots_whose_instance_vanished(
    client: Client,
    launch_bot: LaunchBot,
    launcher: Ec2Launcher,
    aws: Aws,
    fleet: str,
    owner: Caller,
) -> None:
    ec2 = aws.client()

    def run(fleet_name: str, bot_id: uuid.UUID) -> str:
        tags: list[TagTypeDef] = [
            {"Key": FLEET_TAG, "Value": fleet_name},
            {"Key": BOT_TAG, "Value": str(bot_id)},
        ]
        spec: TagSpecificationTypeDef = {"ResourceType": "instance", "Tags": tags}
        answer = ec2.run_instances(
            ImageId=aws.ami,
            InstanceType="c7i.large",
            MinCount=1,
            MaxCount=1,
            TagSpecifications=[spec],
        )
        return str(answer["Instances"][0]["InstanceId"])

    kept = await launch_bot()
    kept_id = next(iter(await launcher.machines()))
    orphan = run(fleet, uuid.uuid4())  # a bot the database does not know
    foreign = run("someone-else", uuid.uuid4())  # another deployment's: never touched
    vanishing = await launch_bot()
    vanishing_id = next(h for h, b in (await launcher.machines()).items() if b == vanishing.bot_id)
    ec2.terminate_instances(InstanceIds=[vanishing_id])  # from outside (console, spot, …)

    async def orphan_gone() -> bool:
        return _state(aws, orphan) in {"shutting-down", "terminated"}

    async def vanished_failed() -> bool:
        return (await _status(client, owner, vanishing.bot_id))[0] == "failed"

    await _wait(orphan_gone, "the orphan terminated")
    await _wait(vanished_failed, "the bot of the vanished instance failed")
    assert await _status(client, owner, vanishing.bot_id) == ("failed", "agent_lost")
    assert await _status(client, owner, kept.bot_id) == ("requested", None)
    assert _state(aws, kept_id) == "running"
    assert _state(aws, foreign) == "running"
    ec2.terminate_instances(InstanceIds=[foreign])


async def test_one_replica_at_a_time_reconciles(
    client: Client, launcher: Ec2Launcher, database_url: str
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("the advisory lock is PostgreSQL's; SQLite serves one process")
    hub: AgentHub = client.app[AGENT_HUB]
    reconciler = Reconciler(
        client.app[DB], launcher, hub, client.app[STATUS_HOOKS], interval=60.0, grace=0.0
    )
    database = client.app[DB]
    async with database.engine.connect() as other_replica:
        # Another replica sweeping holds the lock (taken between two of the app's own sweeps).
        lock = {"key": SWEEP_LOCK}

        async def taken() -> bool:
            got = await other_replica.scalar(text("SELECT pg_try_advisory_lock(:key)"), lock)
            await other_replica.commit()
            return bool(got)

        await _wait(taken, "the lock taken")
        assert not (await reconciler.sweep()).swept
        await other_replica.scalar(text("SELECT pg_advisory_unlock(:key)"), lock)
        await other_replica.commit()
    assert (await reconciler.sweep()).swept
