"""The SSRF guard of webhook delivery; the rules live in :mod:`meetbot_common.ssrf`.

The agent fetches user-named media (avatar images, screen-share sources) under the same rules,
so they sit in ``meetbot_common``, which both sides import; this module keeps the webhook code's
imports.
"""

from meetbot_common.ssrf import (
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
