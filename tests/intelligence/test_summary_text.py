"""The meeting summary's prompt and checks (docs/api.md 2.14) against a real OpenAI-compatible
server: grounding of owners and dues, dropped items, and map-reduce over a long transcript.
"""

from __future__ import annotations

from typing import Any

import pytest

from control_plane.intelligence.chat import ChatAnswerInvalid
from control_plane.intelligence.summary import Line, chunk, parse_part, render, summarise
from tests.intelligence.summary_llm import chat_of, is_merge, scripted_server, user_text

pytestmark = pytest.mark.unit

LINES = [
    Line("s1", "Ada", None, 0.0, 2.0, "We agreed to ship the beta on Monday."),
    Line("s2", "Ada", None, 2.0, 4.0, "Bob, can you write the release notes by Friday?"),
    Line("s3", "Bob", None, 4.0, 6.0, "Sure."),
    Line("s4", "Grace", None, 6.0, 8.0, "I'll book the room for the demo."),
]


def test_invented_owners_and_dues_are_dropped_and_said_ones_kept() -> None:
    answer = {
        "summary": "  The team planned   the beta. ",
        "decisions": [{"text": "Ship the beta on Monday", "lines": [1]}],
        "action_items": [
            # said: the owner is asked by name, the due is said
            {"text": "Write release notes", "owner": "Bob", "due": "by Friday", "lines": [2, 3]},
            # invented: nobody called Carol, no date of that kind in the line
            {"text": "Book the room", "owner": "Carol", "due": "2026-12-04", "lines": [4]},
            # no owner given: the speaker of "I'll" takes it
            {"text": "Book a demo room", "owner": None, "due": "TBD", "lines": [4]},
            # the speaker of a cited line who committed to nothing: the one asked takes it
            {"text": "Release notes", "owner": "Ada", "due": None, "lines": [2]},
        ],
    }
    part = parse_part(answer, LINES)
    assert part.summary == "The team planned the beta."
    assert [(d.text, d.segment_ids) for d in part.decisions] == [
        ("Ship the beta on Monday", ("s1",))
    ]
    items = [(a.text, a.owner, a.due, a.segment_ids) for a in part.action_items]
    assert items == [
        ("Write release notes", "Bob", "by Friday", ("s2", "s3")),
        ("Book the room", "Grace", None, ("s4",)),
        ("Book a demo room", "Grace", None, ("s4",)),
        ("Release notes", "Bob", None, ("s2",)),
    ]
    assert part.dropped == 0


def test_items_citing_no_line_of_the_part_are_dropped_and_counted() -> None:
    answer = {
        "summary": "x",
        "decisions": [{"text": "Out of range", "lines": [9]}, {"text": "  ", "lines": [1]}],
        "action_items": [{"text": "Nothing cited", "owner": None, "due": None, "lines": []}],
    }
    part = parse_part(answer, LINES)
    assert (part.decisions, part.action_items, part.dropped) == ((), (), 3)
    with pytest.raises(ChatAnswerInvalid):
        parse_part({"summary": "no lists"}, LINES)


def test_chunks_keep_lines_whole_and_within_the_budget() -> None:
    lines = [Line(f"s{i}", "Ada", None, i, i + 1, "word " * 40) for i in range(30)]
    parts = chunk(lines, 1000)
    assert [line for part in parts for line in part] == lines
    assert all(len(render(part)) <= 1000 for part in parts)
    assert len(parts) > 1
    long = chunk([Line("big", "Ada", None, 0, 1, "x" * 5000)], 1000)
    assert len(long) == 1 and len(render(long[0])) <= 1000


async def test_a_long_meeting_is_summarised_part_by_part_then_merged() -> None:
    lines = [
        Line(f"s{i}", "Ada" if i % 2 else "Bob", None, i, i + 1, f"Topic {i}: I'll do task {i}.")
        for i in range(40)
    ]

    def script(body: dict[str, Any]) -> dict[str, Any]:
        if is_merge(body):
            return {"summary": "Whole meeting: " + str(user_text(body).count("Part "))}
        first = user_text(body).splitlines()[0]
        return {
            "summary": f"Part starting {first[:12]}",
            "decisions": [],
            "action_items": [{"text": first[4:], "owner": None, "due": None, "lines": [1]}],
        }

    async with scripted_server(script) as server:
        chat = chat_of(server)
        try:
            result = await summarise(chat, lines, chunk_chars=400, max_tokens=256)
        finally:
            await chat.aclose()
    parts = [body for body in server.requests if not is_merge(body)]
    merges = [body for body in server.requests if is_merge(body)]
    assert len(parts) == len(chunk(lines, 400)) > 2
    assert merges and result.calls == len(server.requests)
    assert result.summary.startswith("Whole meeting: ")
    # each part's first line became an action item citing that line, owned by its speaker
    assert len(result.action_items) == len(parts)
    assert all(len(item.segment_ids) == 1 and item.owner for item in result.action_items)
    assert result.prompt_tokens == 100 * result.calls


async def test_an_empty_transcript_needs_no_call() -> None:
    async with scripted_server(lambda body: {}) as server:
        chat = chat_of(server)
        try:
            result = await summarise(chat, [], chunk_chars=1000, max_tokens=256)
        finally:
            await chat.aclose()
    assert (result.summary, result.calls, server.requests) == ("", 0, [])
