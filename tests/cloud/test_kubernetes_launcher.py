"""The kubernetes launcher inside the real app (SQLite, PostgreSQL) against a local API server.

The server (``tests.cloud.kube_api``) serves the Pod and Secret endpoints the launcher uses and
refuses any body that does not fit the Kubernetes schema of the installed client; the launcher
talks to it through ``kubernetes_asyncio`` over real HTTP.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s
from pytest_aiohttp import AiohttpServer

from agent.contracts.bootstrap import BOOTSTRAP_GRANT_FILE, BootstrapGrant
from agent.contracts.wire import agent_bootstrap_path, bearer
from control_plane.launchers.base import LaunchHandle
from control_plane.launchers.kubernetes import (
    APP_LABEL,
    APP_NAME,
    BOT_LABEL,
    FLEET_LABEL,
    WORKSPACE_LABEL,
    KubernetesLauncher,
    pod_name,
    secret_name,
)
from control_plane.settings import Settings
from tests.cloud.kube_api import KubeApi, SchemaError, build
from tests.handed_settings import HANDED, SECRET, logged
from tests.plugins.agent_link import Client, LaunchBot
from tests.plugins.api_app import KEY_PREFIX, Caller

pytestmark = pytest.mark.api

NS = "bots"
FLEET = "blue"


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """The app reconciles every 0.2 s with no grace."""
    return Settings(
        database_url=database_url,
        data_dir=tmp_path / "data",
        launcher="memory",  # replaced by the kubernetes launcher passed to create_app
        key_prefix=KEY_PREFIX,
        public_url="http://127.0.0.1:1",
        scheduler_interval_seconds=0.05,
        reconcile_interval_seconds=0.2,
        reconcile_grace_seconds=0.0,
        fleet_agent_settings=HANDED,
    )


@pytest.fixture
async def kube(aiohttp_server: AiohttpServer) -> tuple[KubeApi, str]:
    api = KubeApi()
    server = await aiohttp_server(api.app())
    return api, str(server.make_url("")).rstrip("/")


@pytest.fixture
async def launcher(kube: tuple[KubeApi, str]) -> AsyncIterator[KubernetesLauncher]:
    api = k8s.ApiClient(k8s.Configuration(host=kube[1]))
    pods = KubernetesLauncher(
        image="registry.example/meetbot-bot:1",
        namespace=NS,
        api=api,
        fleet=FLEET,
        runtime_class="kata",
        requests={"cpu": "1", "memory": "2Gi"},
        limits={"cpu": "2", "memory": "3Gi"},
        shm_size="1Gi",
        grace_seconds=30,
    )
    yield pods
    await pods.aclose()
    await api.close()


async def _wait(check: Callable[[], Awaitable[bool]], what: str, limit: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not await check():
        assert loop.time() < deadline, f"not within {limit} s: {what}"
        await asyncio.sleep(0.05)


async def _status(client: Client, owner: Caller, bot_id: uuid.UUID) -> tuple[str, str | None]:
    body = await (await client.get(f"/api/v1/bots/{bot_id}", headers=owner.headers)).json()
    return str(body["status"]), body["status_reason"]


def test_the_schema_check_refuses_what_the_api_server_would() -> None:
    pod: dict[str, Any] = {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "i"}]},
    }
    build(pod, "V1Pod")
    with pytest.raises(SchemaError, match=r"\$.spec: V1PodSpec has no field runtimeClass"):
        build({**pod, "spec": {**pod["spec"], "runtimeClass": "kata"}}, "V1Pod")
    with pytest.raises(SchemaError, match=r"containers\[0\].name: expected str"):
        build({**pod, "spec": {"containers": [{"name": 3, "image": "i"}]}}, "V1Pod")
    with pytest.raises(SchemaError, match="containers"):  # a required field missing
        build({**pod, "spec": {"restartPolicy": "Never"}}, "V1Pod")


async def test_a_pod_per_bot_with_its_grant_secret_deleted_once_the_token_is_used(
    client: Client,
    launch_bot: LaunchBot,
    launcher: KubernetesLauncher,
    kube: tuple[KubeApi, str],
    owner: Caller,
) -> None:
    api = kube[0]
    bot = await launch_bot()
    name = pod_name(bot.bot_id)
    pod = api.pods[(NS, name)]
    assert pod["metadata"]["labels"] == {
        APP_LABEL: APP_NAME,
        FLEET_LABEL: FLEET,
        BOT_LABEL: str(bot.bot_id),
        WORKSPACE_LABEL: str(owner.workspace_id),
    }
    spec = pod["spec"]
    assert spec["runtimeClassName"] == "kata"
    assert (spec["restartPolicy"], spec["automountServiceAccountToken"]) == ("Never", False)
    (container,) = spec["containers"]
    assert container["image"] == "registry.example/meetbot-bot:1"
    assert container["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"cpu": "2", "memory": "3Gi"},
    }
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    assert volumes["shm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Gi"}
    assert volumes["grant"]["secret"]["secretName"] == secret_name(name)
    mounts = {mount["name"]: mount for mount in container["volumeMounts"]}
    assert mounts["shm"]["mountPath"] == "/dev/shm"  # noqa: S108 - Chromium's
    assert (mounts["grant"]["mountPath"], mounts["grant"]["subPath"]) == (
        BOOTSTRAP_GRANT_FILE,
        "bootstrap.json",
    )
    assert bot.config.agent_token is None  # none yet: the exchange mints it

    secret = api.secrets[(NS, secret_name(name))]
    assert secret["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": pod["metadata"]["uid"]}
    ]
    grant = BootstrapGrant.model_validate_json(secret["stringData"]["bootstrap.json"])
    assert (grant.bot_id, grant.control_plane_url) == (bot.bot_id, "http://127.0.0.1:1")

    # Launching again gives the same Pod (no new token, no second Pod).
    assert (await launcher.launch(bot.config)).id == name
    assert list(api.pods) == [(NS, name)]

    path = agent_bootstrap_path(bot.bot_id)
    first = await client.post(path, headers=bearer(grant.bootstrap_token))
    assert first.status == 200
    agent_token = (await first.json())["agent_token"]
    assert agent_token not in json.dumps(pod) and agent_token not in json.dumps(secret)
    assert (NS, secret_name(name)) not in api.secrets  # deleted on the exchange
    again = await client.post(path, headers=bearer(grant.bootstrap_token))
    assert (again.status, (await again.json())["code"]) == (409, "bootstrap_token_used")

    assert await launcher.machines() == {name: bot.bot_id}
    assert await launcher.is_alive(LaunchHandle(id=name))
    await launcher.terminate(LaunchHandle(id=name))
    assert (NS, name) not in api.pods
    assert not await launcher.is_alive(LaunchHandle(id=name))
    assert await launcher.machines() == {}
    await launcher.terminate(LaunchHandle(id=name))  # gone already: a no-op
    assert ("DELETE", f"/api/v1/namespaces/{NS}/pods/{name}") in api.requests


async def test_a_secret_agent_setting_reaches_the_pod_only_through_the_bootstrap_exchange(
    client: Client,
    launch_bot: LaunchBot,
    kube: tuple[KubeApi, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    api = kube[0]
    bot = await launch_bot()
    name = pod_name(bot.bot_id)
    pod, secret = api.pods[(NS, name)], api.secrets[(NS, secret_name(name))]
    assert SECRET not in json.dumps(pod) and "TTS" not in json.dumps(pod)
    assert SECRET not in json.dumps(secret)  # the grant's Secret holds the grant only
    grant = BootstrapGrant.model_validate_json(secret["stringData"]["bootstrap.json"])

    answer = await client.post(
        agent_bootstrap_path(bot.bot_id), headers=bearer(grant.bootstrap_token)
    )
    assert answer.status == 200
    assert (await answer.json())["agent_settings"] == HANDED
    assert SECRET not in logged(caplog.records)


async def test_a_terminated_pod_takes_its_unused_grant_along(
    launch_bot: LaunchBot, launcher: KubernetesLauncher, kube: tuple[KubeApi, str]
) -> None:
    api = kube[0]
    bot = await launch_bot()
    name = pod_name(bot.bot_id)
    assert (NS, secret_name(name)) in api.secrets
    await launcher.terminate(LaunchHandle(id=name))
    assert api.secrets == {} and api.pods == {}


async def test_the_loop_deletes_orphan_pods_and_fails_bots_whose_pod_vanished(
    client: Client,
    launch_bot: LaunchBot,
    launcher: KubernetesLauncher,
    kube: tuple[KubeApi, str],
    owner: Caller,
) -> None:
    api = kube[0]

    def add_pod(fleet: str, bot_id: uuid.UUID, phase: str = "Running") -> tuple[str, str]:
        key = (NS, pod_name(bot_id))
        labels = {APP_LABEL: APP_NAME, FLEET_LABEL: fleet, BOT_LABEL: str(bot_id)}
        api.pods[key] = {
            "metadata": {
                "name": key[1],
                "namespace": NS,
                "uid": str(uuid.uuid4()),
                "labels": labels,
            },
            "spec": {"containers": [{"name": "agent", "image": "x"}]},
            "status": {"phase": phase},
        }
        return key

    kept = await launch_bot()
    orphan = add_pod(FLEET, uuid.uuid4())
    foreign = add_pod("green", uuid.uuid4())
    ended = add_pod(FLEET, uuid.uuid4(), phase="Succeeded")
    assert set(await launcher.machines()) == {pod_name(kept.bot_id), orphan[1]}
    vanishing = await launch_bot()
    del api.pods[(NS, pod_name(vanishing.bot_id))]  # deleted from outside (kubectl, eviction)

    async def orphan_gone() -> bool:
        return orphan not in api.pods

    async def vanished_failed() -> bool:
        return (await _status(client, owner, vanishing.bot_id))[0] == "failed"

    await _wait(orphan_gone, "the orphan deleted")
    await _wait(vanished_failed, "the bot of the vanished Pod failed")
    assert await _status(client, owner, vanishing.bot_id) == ("failed", "agent_lost")
    assert await _status(client, owner, kept.bot_id) == ("requested", None)
    assert (NS, pod_name(kept.bot_id)) in api.pods
    assert foreign in api.pods and ended in api.pods
