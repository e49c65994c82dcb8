"""Left-alone cross-check: the page's "only you" text, then the platform's count, then names;
the quiet spell after which a bot that still sees someone named says why; and others shown
speaking while no meeting audio reaches the bot."""

from __future__ import annotations

import pytest

from agent.meeting.watch import QuietSpell, UnheardSpeakers
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


def test_a_quiet_spell_is_told_once_after_its_time_while_someone_is_named() -> None:
    quiet = QuietSpell(after=600.0)
    assert not quiet.observe(0.0, voiced=5.0, speaking=False, others=1)  # the spell starts
    assert not quiet.observe(599.0, voiced=5.0, speaking=False, others=1)
    assert quiet.observe(600.0, voiced=5.0, speaking=False, others=1)
    assert not quiet.observe(900.0, voiced=5.0, speaking=False, others=1)  # told once


def test_sound_a_lit_speaker_or_a_join_starts_the_quiet_spell_again() -> None:
    quiet = QuietSpell(after=10.0)
    quiet.observe(0.0, voiced=1.0, speaking=False, others=2)
    assert not quiet.observe(9.0, voiced=1.5, speaking=False, others=2)  # heard something
    assert not quiet.observe(18.0, voiced=1.5, speaking=True, others=2)  # a speaker lit
    quiet.heard(20.0)  # someone joined
    assert not quiet.observe(29.0, voiced=1.5, speaking=False, others=2)
    assert quiet.observe(30.0, voiced=1.5, speaking=False, others=2)


def test_a_quiet_meeting_nobody_is_named_in_is_not_told() -> None:
    quiet = QuietSpell(after=10.0)
    quiet.observe(0.0, voiced=0.0, speaking=False, others=0)
    assert not quiet.observe(60.0, voiced=0.0, speaking=False, others=0)


def test_others_shown_speaking_with_no_audio_is_told_once_and_audio_starts_it_again() -> None:
    unheard = UnheardSpeakers(after=5.0)
    assert not unheard.observe(0.0, voiced=0.0, speaking=True)
    assert not unheard.observe(4.0, voiced=0.0, speaking=True)
    assert not unheard.observe(6.0, voiced=0.0, speaking=False)  # only the lit seconds count
    assert unheard.observe(7.0, voiced=0.0, speaking=True)
    assert not unheard.observe(20.0, voiced=0.0, speaking=True)  # told once
    assert not unheard.observe(21.0, voiced=0.5, speaking=True)  # audio came: all is well
    assert not unheard.observe(25.0, voiced=0.5, speaking=True)
    assert unheard.observe(27.0, voiced=0.5, speaking=True)  # and then went again


def test_silence_with_nobody_shown_speaking_is_not_missing_audio() -> None:
    unheard = UnheardSpeakers(after=5.0)
    assert not any(unheard.observe(float(t), voiced=0.0, speaking=False) for t in range(60))
