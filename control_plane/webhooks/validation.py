"""Checks every provider applies to endpoint input: known event types and an allowed URL."""

from __future__ import annotations

from control_plane.webhooks.errors import UnknownEventType, WebhookUrlNotAllowed
from control_plane.webhooks.events import EVENT_TYPE_NAMES
from meetbot_common.ssrf import TargetPolicy, TargetRefused, check_url, resolve_checked


def checked_filter_types(names: list[str] | None) -> list[str]:
    """``names`` without duplicates (first occurrence kept); None becomes ``[]`` (all events).

    Raises:
        UnknownEventType: A name outside the catalogue (422).
    """
    if not names:
        return []
    unknown = [(index, name) for index, name in enumerate(names) if name not in EVENT_TYPE_NAMES]
    if unknown:
        raise UnknownEventType([name for _, name in unknown], positions=[i for i, _ in unknown])
    return list(dict.fromkeys(names))


async def checked_url(url: str, policy: TargetPolicy) -> str:
    """Refuse a URL whose scheme or current addresses the policy forbids.

    A name that does not resolve yet is accepted: delivery resolves again on every attempt
    and refuses it then if it points inward.

    Raises:
        WebhookUrlNotAllowed: Wrong scheme, credentials in the URL, or a refused address (422).
    """
    try:
        parsed = check_url(url, policy)
        host = (parsed.host or "").strip("[]")
        try:
            await resolve_checked(host, parsed.port or 443, policy)
        except TargetRefused:
            raise
        except OSError:
            pass
    except TargetRefused as refused:
        raise WebhookUrlNotAllowed(str(refused)) from None
    except ValueError as invalid:
        raise WebhookUrlNotAllowed(f"not a URL ({invalid})") from None
    return url
