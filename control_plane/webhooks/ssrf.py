"""The SSRF guard of webhook delivery; the rules live in :mod:`agent.contracts.ssrf`.

The agent fetches user-named media (avatar images, screen-share sources) under the same rules,
so they sit with the contracts both sides share; this module keeps the webhook code's imports.
"""

from agent.contracts.ssrf import (
    DELIVERY_TIMEOUT_SECONDS,
    GuardedResolver,
    TargetPolicy,
    TargetRefused,
    address_allowed,
    check_target,
    check_url,
    client_session,
    resolve_checked,
    valid_dns_name,
)

__all__ = [
    "DELIVERY_TIMEOUT_SECONDS",
    "GuardedResolver",
    "TargetPolicy",
    "TargetRefused",
    "address_allowed",
    "check_target",
    "check_url",
    "client_session",
    "resolve_checked",
    "valid_dns_name",
]
