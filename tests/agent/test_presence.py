"""Left-alone cross-check: the page's "only you" text, then the platform's count, then names."""

from __future__ import annotations

import pytest

from agent.platforms.base import Presence

pytestmark = pytest.mark.unit


def test_names_decide_only_without_a_count_or_text() -> None:
    assert Presence(["Alice", "Bob"]).others() == 2
    assert Presence([]).others() == 0


def test_the_platform_count_overrides_a_stale_list_both_ways() -> None:
    # A tile left behind by someone who left: the count (the bot alone) wins.
    assert Presence(["Alice"], count=1).others() == 0
    # A closed or lagging list: the count says someone is there.
    assert Presence([], count=3).others() == 2


def test_only_you_text_wins_over_everything() -> None:
    assert Presence(["Alice"], count=2, only_you=True).others() == 0
