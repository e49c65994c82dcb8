"""The cloud launchers built from settings (``MEETBOT_LAUNCHER=ec2|kubernetes``), offline."""

from __future__ import annotations

import uuid

import pytest
from pydantic import ValidationError

from agent.contracts.bot_config import BotConfig, Platform
from control_plane.launchers import create_launcher
from control_plane.launchers.base import Bootstrapping, GrantKeeper, Listing, Reconciling
from control_plane.launchers.ec2 import Ec2Launcher
from control_plane.launchers.kubernetes import KubernetesLauncher
from control_plane.settings import Settings

pytestmark = pytest.mark.unit


async def test_settings_choose_and_configure_the_cloud_launchers() -> None:
    ec2 = create_launcher(
        Settings(
            launcher="ec2",
            ec2_ami="ami-0123456789abcdef0",
            ec2_instance_types="c7i.large, c6i.large",
            ec2_security_group_ids="sg-1,sg-2",
        )
    )
    assert isinstance(ec2, Ec2Launcher)
    assert isinstance(ec2, Bootstrapping) and isinstance(ec2, Listing)
    assert not isinstance(ec2, Reconciling | GrantKeeper)
    await ec2.aclose()
    pods = create_launcher(Settings(launcher="kubernetes", kubernetes_image="meetbot-bot:1"))
    assert isinstance(pods, KubernetesLauncher)
    assert isinstance(pods, Bootstrapping | Listing) and isinstance(pods, GrantKeeper)
    config = BotConfig(
        bot_id=uuid.uuid4(),
        meeting_id=1,
        platform=Platform.GOOGLE_MEET,
        meeting_url="https://meet.google.com/abc-defg-hij",
        native_meeting_id="abc-defg-hij",
    )
    spec = pods.pod_manifest(config)["spec"]  # built without asking the cluster anything
    assert "runtimeClassName" not in spec  # none set: the cluster's default runtime
    assert spec["containers"][0]["resources"] == {
        "requests": {"cpu": "1", "memory": "2Gi"},
        "limits": {"cpu": "2", "memory": "3Gi"},
    }
    await pods.aclose()


def test_a_cloud_launcher_without_its_image_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="MEETBOT_EC2_AMI"):
        create_launcher(Settings(launcher="ec2"))
    with pytest.raises(ValueError, match="MEETBOT_KUBERNETES_IMAGE"):
        create_launcher(Settings(launcher="kubernetes"))
    with pytest.raises(ValidationError):
        Settings(fleet_name="-not a label-")
