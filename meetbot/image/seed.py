"""The build VM's NoCloud seed: cloud-init creates a one-build SSH user for Packer.

The password is random per build and the user is removed by ``images/seal.sh`` before the
image is saved, so nothing of it survives in the image.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

BUILD_USER = "packer"


def write_seed(folder: Path, password: str, instance_id: str | None = None) -> None:
    """Write ``user-data`` and ``meta-data`` for a NoCloud ``cidata`` disk into ``folder``.

    Args:
        folder: Created if missing; readable by the owner only (it holds the password).
        password: The build user's SSH password.
        instance_id: cloud-init's instance id; random when omitted.
    """
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    user = {
        "name": BUILD_USER,
        "gecos": "image build user (removed by images/seal.sh)",
        "sudo": "ALL=(ALL) NOPASSWD:ALL",
        "shell": "/bin/bash",
        "lock_passwd": False,
        "plain_text_passwd": password,
    }
    # JSON is YAML: no quoting mistakes whatever the password holds.
    user_data = {"users": [user], "ssh_pwauth": True}
    (folder / "user-data").write_text("#cloud-config\n" + json.dumps(user_data, indent=2) + "\n")
    iid = instance_id or f"meetbot-build-{secrets.token_hex(4)}"
    (folder / "meta-data").write_text(f"instance-id: {iid}\nlocal-hostname: meetbot-build\n")


def new_password() -> str:
    """A random password for one build (URL-safe, 32 characters)."""
    return secrets.token_urlsafe(24)
