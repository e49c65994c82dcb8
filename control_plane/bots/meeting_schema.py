"""The per-platform meeting rules, stated in the OpenAPI document as the server enforces them.

``POST /api/v1/bots`` and ``POST /api/v1/bots/schedule`` take a ``platform`` and a
``meeting_url`` and/or ``native_meeting_id``; which id and URL are valid depends on the platform
(and, for URLs, on the deployment's ``extra_meeting_hosts``). The document states that as one
``oneOf`` branch per platform whose patterns are the very text
:mod:`agent.contracts.meeting_urls` checks with ``fullmatch``. A legacy Teams link's id is its
thread id, so the Teams branch lets the id be free when the URL is such a link.

The scheduled bot's ``PATCH`` has no platform in its body (it is the stored bot's): its
``meeting_url`` carries the union of the platforms' patterns, and a URL of another platform is
refused as at creation (400/422).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.contracts.bot_config import Platform
from agent.contracts.meeting_urls import id_pattern, legacy_teams_url_pattern, url_pattern

CREATE_BODIES = ("BotCreate", "ScheduledBotCreate")
"""Component schemas of the bodies that name a platform and a meeting."""
UPDATE_BODY = "ScheduledBotUpdate"
"""Component schema of the body that may change a stored bot's meeting URL."""


def _platform_branch(platform: Platform, extra_hosts: Sequence[str]) -> dict[str, Any]:
    branch: dict[str, Any] = {
        "properties": {
            "platform": {"const": platform.value},
            "meeting_url": {"pattern": url_pattern(platform, extra_hosts)},
        }
    }
    native = {"pattern": id_pattern(platform)}
    if platform is Platform.TEAMS:
        branch["anyOf"] = [
            {"properties": {"native_meeting_id": native}},
            {
                "required": ["meeting_url"],
                "properties": {"meeting_url": {"pattern": legacy_teams_url_pattern(extra_hosts)}},
            },
        ]
    else:
        branch["properties"]["native_meeting_id"] = native
    return branch


def any_platform_url_pattern(extra_hosts: Sequence[str]) -> str:
    """The union of every platform's :func:`url_pattern`, anchored."""
    # Each platform's pattern is ``^(…)$``: join the groups.
    return "^(" + "|".join(url_pattern(p, extra_hosts)[1:-1] for p in Platform) + ")$"


def state_meeting_rules(document: dict[str, Any], extra_hosts: Sequence[str]) -> None:
    """Add the per-platform id and URL patterns to the bot bodies of an OpenAPI ``document``.

    Args:
        document: The document of :func:`control_plane.api.routes.build_openapi`, changed in
            place.
        extra_hosts: The deployment's ``extra_meeting_hosts`` (accepted as the server accepts
            them).
    """
    schemas = document["components"]["schemas"]
    for name in CREATE_BODIES:
        schemas[name]["oneOf"] = [_platform_branch(p, extra_hosts) for p in Platform]
    union = any_platform_url_pattern(extra_hosts)
    for branch in schemas[UPDATE_BODY]["properties"]["meeting_url"]["anyOf"]:
        if branch.get("type") == "string":
            branch["pattern"] = union
