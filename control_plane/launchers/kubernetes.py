"""The ``kubernetes`` launcher: each bot runs in its own Pod (``restartPolicy: Never``).

The Pod ``meetbot-{bot_id}`` (the handle id, the bot's ``bot_container_id``) runs the bot
container image (``images/Containerfile``, built from the same ``images/`` scripts as the VM
image) with:

- ``runtimeClassName`` from the settings (e.g. ``kata`` for VM isolation; empty: the default);
- CPU and memory requests and limits from the settings;
- ``/dev/shm`` as a memory-backed ``emptyDir`` of ``shm_size`` (Chromium's shared memory: a
  container's default 64 MiB crashes renderers);
- the labels ``app.kubernetes.io/name=meetbot-bot``, ``meetbot/fleet``, ``meetbot/bot-id`` and
  ``meetbot/workspace-id``, by which :meth:`machines` finds the fleet's Pods again (after a
  control-plane restart too);
- the bootstrap grant (:class:`agent.contracts.bootstrap.BootstrapGrant`: URL, bot id, one-time
  token) from the Secret ``meetbot-{bot_id}-grant`` mounted read-only at
  ``/etc/meetbot/bootstrap.json``; no service-account token, no service links, no environment
  of the operator's: the agent settings (``Settings.fleet_agent_settings``, secrets among them)
  come with the bootstrap exchange's answer, never in the Pod spec, the Secret or a log.

The Secret names the Pod as its owner (``ownerReferences``), so Kubernetes deletes it with the
Pod; the control plane deletes it as soon as the token is exchanged
(:meth:`grant_used`, called by the bootstrap route), so a used grant does not linger.

Auth: in-cluster (the service account of the control plane's Pod) when
``KUBERNETES_SERVICE_HOST`` is set, else the kubeconfig file (``kubeconfig`` or
``~/.kube/config``); tests pass an ``ApiClient`` of their own.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any
from uuid import UUID

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client.exceptions import ApiException

from agent.contracts.bootstrap import BOOTSTRAP_GRANT_FILE, BootstrapGrant
from agent.contracts.bot_config import BotConfig
from control_plane.launchers.base import BootstrapIssuer, LaunchError, LaunchHandle
from control_plane.settings import Settings

logger = logging.getLogger(__name__)

NAME_PREFIX = "meetbot-"
APP_LABEL = "app.kubernetes.io/name"
APP_NAME = "meetbot-bot"
FLEET_LABEL = "meetbot/fleet"
BOT_LABEL = "meetbot/bot-id"
WORKSPACE_LABEL = "meetbot/workspace-id"
GRANT_KEY = "bootstrap.json"
_ENDED_PHASES = frozenset({"Succeeded", "Failed"})


def pod_name(bot_id: UUID) -> str:
    """The Pod of ``bot_id`` (also the handle id)."""
    return f"{NAME_PREFIX}{bot_id}"


def secret_name(pod: str) -> str:
    """The grant Secret of the Pod ``pod``."""
    return f"{pod}-grant"


class KubernetesLauncher:
    """Starts one Pod per bot and deletes it.

    Args:
        api: An ``ApiClient`` of the cluster; None loads in-cluster or kubeconfig auth at the
            first use (and this launcher closes it).
        namespace: The namespace of the bots' Pods and Secrets.
        image: The bot container image.
        fleet: This deployment's fleet name (label ``meetbot/fleet``).
        runtime_class: ``runtimeClassName`` (empty: the cluster's default runtime).
        requests: Resource requests, e.g. ``{"cpu": "1", "memory": "2Gi"}``.
        limits: Resource limits, e.g. ``{"cpu": "2", "memory": "3Gi"}``.
        shm_size: Size of the memory-backed ``/dev/shm`` (a quantity, e.g. ``1Gi``).
        kubeconfig: The kubeconfig file when not in a cluster (empty: ``~/.kube/config``).
        grace_seconds: The Pod's ``terminationGracePeriodSeconds`` (the agent leaves the
            meeting on SIGTERM).
        bootstrap: Mints each Pod's bootstrap token (else set by :meth:`use_bootstrap`).

    Raises:
        ValueError: No image.
    """

    def __init__(
        self,
        *,
        image: str,
        namespace: str = "meetbot",
        api: k8s.ApiClient | None = None,
        fleet: str = "default",
        runtime_class: str = "",
        requests: Mapping[str, str] | None = None,
        limits: Mapping[str, str] | None = None,
        shm_size: str = "1Gi",
        kubeconfig: str = "",
        grace_seconds: int = 60,
        bootstrap: BootstrapIssuer | None = None,
    ) -> None:
        if not image:
            raise ValueError("MEETBOT_KUBERNETES_IMAGE is not set (the bot container image)")
        self._image = image
        self._namespace = namespace
        self._api = api
        self._owned = api is None
        self._fleet = fleet
        self._runtime_class = runtime_class
        self._requests = dict(requests or {})
        self._limits = dict(limits or {})
        self._shm_size = shm_size
        self._kubeconfig = kubeconfig
        self._grace = grace_seconds
        self._bootstrap = bootstrap
        self._lock = asyncio.Lock()

    def use_bootstrap(self, issue: BootstrapIssuer) -> None:
        """Mint the Pods' bootstrap tokens with ``issue`` (the control plane's issuer)."""
        self._bootstrap = issue

    async def _core(self) -> Any:  # the generated client is untyped
        async with self._lock:
            if self._api is None:
                configuration = k8s.Configuration()
                if os.environ.get("KUBERNETES_SERVICE_HOST"):
                    k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
                else:
                    await k8s_config.load_kube_config(
                        config_file=self._kubeconfig or None, client_configuration=configuration
                    )
                self._api = k8s.ApiClient(configuration)
            return k8s.CoreV1Api(self._api)

    def _labels(self, config: BotConfig) -> dict[str, str]:
        labels = {APP_LABEL: APP_NAME, FLEET_LABEL: self._fleet, BOT_LABEL: str(config.bot_id)}
        if config.workspace_id is not None:
            labels[WORKSPACE_LABEL] = str(config.workspace_id)
        return labels

    def pod_manifest(self, config: BotConfig) -> dict[str, Any]:
        """The Pod of ``config``'s bot (a ``v1.Pod`` as JSON)."""
        name = pod_name(config.bot_id)
        resources: dict[str, Any] = {}
        if self._requests:
            resources["requests"] = self._requests
        if self._limits:
            resources["limits"] = self._limits
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": self._grace,
            "containers": [
                {
                    "name": "agent",
                    "image": self._image,
                    "resources": resources,
                    "volumeMounts": [
                        {"name": "shm", "mountPath": "/dev/shm"},  # noqa: S108 - Chromium's
                        {
                            "name": "grant",
                            "mountPath": BOOTSTRAP_GRANT_FILE,
                            "subPath": GRANT_KEY,
                            "readOnly": True,
                        },
                    ],
                }
            ],
            "volumes": [
                {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": self._shm_size}},
                {
                    "name": "grant",
                    "secret": {"secretName": secret_name(name), "defaultMode": 0o400},
                },
            ],
        }
        if self._runtime_class:
            spec["runtimeClassName"] = self._runtime_class
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": self._labels(config)},
            "spec": spec,
        }

    async def launch(self, config: BotConfig) -> LaunchHandle:
        """Create the bot's Pod and its grant Secret; the handle id is the Pod's name.

        Idempotent: a Pod of the bot that has not ended is returned as it is.

        Raises:
            LaunchError: No bootstrap issuer or control-plane URL, or the API refused.
        """
        if self._bootstrap is None:
            raise LaunchError("the kubernetes launcher has no bootstrap token issuer")
        if not config.control_plane_url:
            raise LaunchError("a Pod's bot needs a control_plane_url to bootstrap from")
        core = await self._core()
        name = pod_name(config.bot_id)
        existing = await self._read(core, name)
        if existing is not None:
            if self._running(existing):
                return LaunchHandle(id=name)
            await self.terminate(LaunchHandle(id=name))  # an ended Pod: start afresh
        try:
            token = await self._bootstrap(config)
        except LookupError as exc:
            raise LaunchError(f"no bootstrap token for {name}: {exc}") from exc
        grant = BootstrapGrant(
            control_plane_url=config.control_plane_url, bot_id=config.bot_id, bootstrap_token=token
        )
        try:
            pod = await core.create_namespaced_pod(self._namespace, self.pod_manifest(config))
        except ApiException as exc:
            if exc.status == 409:  # another launch came first
                return LaunchHandle(id=name)
            raise LaunchError(f"Kubernetes refused Pod {name}: {exc.status} {exc.reason}") from exc
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": secret_name(name),
                "labels": self._labels(config),
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": pod.metadata.uid}
                ],
            },
            "type": "Opaque",
            "stringData": {GRANT_KEY: grant.model_dump_json()},
        }
        try:
            await core.create_namespaced_secret(self._namespace, secret)
        except ApiException as exc:
            await self.terminate(LaunchHandle(id=name))
            raise LaunchError(
                f"Kubernetes refused the grant of {name}: {exc.status} {exc.reason}"
            ) from exc
        logger.info("pod created", extra={"bot_id": str(config.bot_id), "pod": name})
        return LaunchHandle(id=name)

    async def _read(self, core: Any, name: str) -> Any:
        try:
            return await core.read_namespaced_pod(name, self._namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise LaunchError(f"Kubernetes could not read Pod {name}: {exc.status}") from exc

    @staticmethod
    def _running(pod: Any) -> bool:
        phase = pod.status.phase if pod.status is not None else None
        return pod.metadata.deletion_timestamp is None and phase not in _ENDED_PHASES

    async def grant_used(self, bot_id: UUID) -> None:
        """Delete the bot's grant Secret (its token was exchanged; a no-op when gone).

        Raises:
            LaunchError: The API refused.
        """
        core = await self._core()
        await self._delete(core.delete_namespaced_secret, secret_name(pod_name(bot_id)))

    async def _delete(self, call: Any, name: str, **options: Any) -> None:
        try:
            await call(name, self._namespace, **options)
        except ApiException as exc:
            if exc.status != 404:
                raise LaunchError(f"Kubernetes could not delete {name}: {exc.status}") from exc

    async def terminate(self, handle: LaunchHandle) -> None:
        """Delete the Pod (the agent gets SIGTERM and the grace period) and its Secret.

        Raises:
            LaunchError: The API refused.
        """
        if not handle.id.startswith(NAME_PREFIX):
            return
        core = await self._core()
        body = {"gracePeriodSeconds": self._grace, "propagationPolicy": "Background"}
        await self._delete(core.delete_namespaced_pod, handle.id, body=body)
        await self._delete(core.delete_namespaced_secret, secret_name(handle.id))
        logger.info("pod deleted", extra={"pod": handle.id})

    async def is_alive(self, handle: LaunchHandle) -> bool:
        """Whether the Pod exists, is not being deleted and has not ended.

        Raises:
            LaunchError: The API could not be asked.
        """
        if not handle.id.startswith(NAME_PREFIX):
            return False
        pod = await self._read(await self._core(), handle.id)
        return pod is not None and self._running(pod)

    async def machines(self) -> dict[str, UUID]:
        """The fleet's Pods that have not ended: Pod name → bot id.

        Raises:
            LaunchError: The API could not be asked.
        """
        core = await self._core()
        selector = f"{APP_LABEL}={APP_NAME},{FLEET_LABEL}={self._fleet}"
        try:
            pods = await core.list_namespaced_pod(self._namespace, label_selector=selector)
        except ApiException as exc:
            raise LaunchError(f"Kubernetes could not list Pods: {exc.status}") from exc
        listed: dict[str, UUID] = {}
        for pod in pods.items:
            try:
                bot_id = UUID((pod.metadata.labels or {})[BOT_LABEL])
            except (KeyError, ValueError):
                continue
            if self._running(pod):
                listed[pod.metadata.name] = bot_id
        return listed

    async def aclose(self) -> None:
        """Close the API client if this launcher made it; the Pods keep running."""
        api = self._api
        if api is not None and self._owned:
            self._api = None
            await api.close()


def create(settings: Settings) -> KubernetesLauncher:
    """Factory used by ``Settings.launcher = "kubernetes"`` (README "Running on Kubernetes").

    Raises:
        ValueError: ``MEETBOT_KUBERNETES_IMAGE`` is not set.
    """
    return KubernetesLauncher(
        image=settings.kubernetes_image,
        namespace=settings.kubernetes_namespace,
        fleet=settings.fleet_name,
        runtime_class=settings.kubernetes_runtime_class,
        requests={
            "cpu": settings.kubernetes_cpu_request,
            "memory": settings.kubernetes_memory_request,
        },
        limits={"cpu": settings.kubernetes_cpu_limit, "memory": settings.kubernetes_memory_limit},
        shm_size=settings.kubernetes_shm_size,
        kubeconfig=settings.kubernetes_kubeconfig,
    )
