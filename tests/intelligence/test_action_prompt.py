"""The action prompt, the validation of answers and the answer-text parsing (no model)."""

from __future__ import annotations

from typing import Any

import pytest

from agent.contracts.link import ActionType
from control_plane.intelligence.action_checks import ItemDrop
from control_plane.intelligence.action_prompt import ANSWER_SCHEMA, build_messages, parse_answer
from control_plane.intelligence.chat import ChatAnswerInvalid
from control_plane.intelligence.detection import DetectionRequest, WindowLine
from control_plane.intelligence.json_answer import parse_json_object
from control_plane.intelligence.openai_chat import response_format

pytestmark = pytest.mark.unit


def _request() -> DetectionRequest:
    lines = (
        WindowLine("seg-a", "Anna", "p1", 0.0, 2.0, "we ship the beta on friday"),
        WindowLine("seg-b", "Bob", None, 2.5, 4.0, "I'll write the release notes by thursday"),
    )
    context = (WindowLine("seg-0", None, None, -3.0, -1.0, "hello everyone"),)
    return DetectionRequest(lines, context, "Be terse.")


def test_messages_number_the_window_and_show_context_unnumbered() -> None:
    messages = build_messages(_request())
    system, user = messages[0], messages[-1]
    assert system.role == "system" and system.content.startswith("Be terse.")
    assert user.role == "user"
    # Worked examples sit between them, as user/assistant turns the model answers like.
    assert [m.role for m in messages[1:-1]] == ["user", "assistant"] * (len(messages) // 2 - 1)
    assert "Unknown: hello everyone" in user.content
    assert "[1] Anna: we ship the beta on friday" in user.content
    assert "[2] Bob: I'll write" in user.content
    assert "[0]" not in user.content


def test_answer_maps_line_numbers_to_segment_ids_and_drops_the_rest() -> None:
    answer: dict[str, Any] = {
        "actions": [
            {
                "type": "decision",
                "text": "Ship the beta  on Friday",
                "owner": None,
                "due": "Friday",
                "lines": [1],
            },
            {
                "type": "action_item",
                "text": "write release notes",
                "owner": "Bob",
                "due": "thursday",
                "lines": [2, 2, 7],
            },
            {"type": "action_item", "text": "rests on no line", "owner": None, "lines": [0, 9]},
            {"type": "risk", "text": "not a type we know", "owner": None, "lines": [1]},
            {
                "type": "Follow-Up",
                "text": "sync on the beta",
                "owner": "null",
                "due": "",
                "lines": ["[1]"],
            },
            {"text": "no type at all", "owner": "Dana", "lines": 1},
            {"type": "question", "text": "who reviews the release notes", "lines": 2},
        ]
    }
    actions, drops = parse_answer(answer, _request())
    assert drops == [
        ItemDrop("no_line", "rests on no line"),
        ItemDrop("malformed", "not a type we know"),
        ItemDrop("malformed", "no type at all"),
    ]
    assert [a.action_type for a in actions] == [
        ActionType.DECISION,
        ActionType.ACTION_ITEM,
        ActionType.FOLLOW_UP,
        ActionType.QUESTION,
    ]
    assert actions[0].text == "Ship the beta on Friday" and actions[0].due == "Friday"
    assert actions[1].segment_ids == ("seg-b",) and actions[1].owner == "Bob"
    assert actions[2].owner is None and actions[2].due is None
    assert actions[2].segment_ids == ("seg-a",)
    assert actions[3].segment_ids == ("seg-b",)


def test_answer_text_in_a_fence_or_prose_is_accepted() -> None:
    body = '{"actions": [{"type": "question", "text": "who checks the notes?", "lines": [2]}]}'
    for content in (f"```json\n{body}\n```", f"Sure! Here it is: {body} Hope it helps."):
        actions, _ = parse_answer(parse_json_object(content), _request())
        assert [a.text for a in actions] == ["who checks the notes?"]


@pytest.mark.parametrize("content", ["", "no json here", "[1, 2]", '"text"', "{broken"])
def test_answer_text_that_is_no_json_object_is_invalid(content: str) -> None:
    with pytest.raises(ChatAnswerInvalid):
        parse_json_object(content)


@pytest.mark.parametrize("answer", [{"items": 3}, {"actions": 5}, {"actions": [1]}])
def test_answer_of_the_wrong_shape_is_invalid(answer: dict[str, Any]) -> None:
    with pytest.raises(ChatAnswerInvalid):
        parse_answer(answer, _request())


def test_schema_and_response_formats() -> None:
    items = ANSWER_SCHEMA["properties"]["actions"]["items"]
    assert set(items["properties"]["type"]["enum"]) == {t.value for t in ActionType}
    strict = response_format("json_schema", ANSWER_SCHEMA, "meeting_actions")
    assert strict["type"] == "json_schema" and strict["json_schema"]["schema"] == ANSWER_SCHEMA
    assert strict["json_schema"]["name"] == "meeting_actions"
    assert response_format("json_object", ANSWER_SCHEMA, "x") == {"type": "json_object"}


def test_owner_and_due_are_grounded_in_the_cited_lines() -> None:
    lines = (
        WindowLine("s1", "Dana", None, 0.0, 2.0, "Okay, I will send the launch email by Friday."),
        WindowLine("s2", "Eli", None, 2.5, 4.0, "Dana, can you update the pricing page?"),
        WindowLine("s3", "Dana", None, 4.5, 6.0, "Somebody should fix the build."),
    )
    item = {"type": "action_item", "owner": None, "due": None}
    answer = {
        "actions": [
            {**item, "text": "Send the launch email", "due": "2023-03-05", "lines": [1]},
            {**item, "text": "Update the pricing page", "due": "Friday", "lines": [2]},
            {**item, "text": "Fix the build", "lines": [3]},
            {**item, "text": "Send the email", "owner": "Eli", "due": "by Friday", "lines": [1]},
            {**item, "text": "Fix the build", "owner": "Eli", "lines": [3]},
            {**item, "text": "Dana: write the notes", "owner": None, "lines": [4]},
        ]
    }
    asked = WindowLine("s4", "Eli", None, 6.5, 8.0, "great. so dana will write the notes?")
    actions, _ = parse_answer(answer, DetectionRequest((*lines, asked)))
    # The invented date goes, the said one stays; "I will" is the speaker's even when the
    # model named someone else, "Dana, can you" and "dana will" are Dana's; an owner the
    # model named is kept when the lines name nobody; nobody owns the build.
    assert [(a.owner, a.due) for a in actions] == [
        ("Dana", None),
        ("Dana", None),
        (None, None),
        ("Dana", "by Friday"),
        ("Eli", None),
        ("Dana", None),
    ]
    # A speaker's name copied in front of the text is not part of the action.
    assert actions[5].text == "write the notes"


def test_items_that_are_no_action_of_the_window_are_dropped_with_why() -> None:
    """Questions typed as tasks (and tasks as questions), fragments and items of the context
    are not actions."""
    lines = (
        WindowLine("s1", "Sam", None, 0.0, 2.0, "how many tickets a week do you get"),
        WindowLine("s2", "Kim", None, 2.5, 4.0, "around three hundred, I'll send the numbers"),
        WindowLine("s3", "Sam", None, 4.5, 6.0, "okay do that"),
    )
    context = (WindowLine("s0", "Kim", None, -3.0, -1.0, "I'll fix the checkout bug"),)
    item = {"owner": None, "due": None}
    answer = {
        "actions": [
            {**item, "type": "action_item", "text": "how many tickets a week", "lines": [1]},
            {**item, "type": "decision", "text": "Tickets per week?", "lines": [1]},
            {**item, "type": "question", "text": "how many tickets a week", "lines": [1]},
            {**item, "type": "question", "text": "I'll send the numbers", "lines": [2]},
            {**item, "type": "action_item", "text": "do that", "lines": [3]},
            {**item, "type": "action_item", "text": "fix the checkout bug", "lines": [2]},
            {**item, "type": "action_item", "text": "send the ticket numbers", "lines": [2]},
        ]
    }
    actions, drops = parse_answer(answer, DetectionRequest(lines, context))
    assert [(a.action_type, a.text) for a in actions] == [
        (ActionType.QUESTION, "how many tickets a week"),
        (ActionType.ACTION_ITEM, "send the ticket numbers"),
    ]
    assert drops == [
        ItemDrop("asked", "how many tickets a week"),
        ItemDrop("asked", "Tickets per week?"),
        ItemDrop("unasked", "I'll send the numbers"),
        ItemDrop("too_short", "do that"),
        ItemDrop("ungrounded", "fix the checkout bug"),  # said in the context only
    ]


def test_a_task_needs_a_line_that_commits_to_it_or_asks_for_it() -> None:
    """An action item of a window where nobody commits or asks is dropped; a request by name
    ("Carol, share …") asks."""
    status = (
        WindowLine("s1", "Ivan", None, 0.0, 2.0, "the disk filled up around midnight"),
        WindowLine("s2", "Ben", None, 2.5, 4.0, "most of it was finding the cause"),
    )
    asked = (WindowLine("s3", "Ada", None, 0.0, 2.0, "Carol, share the agenda."),)
    task = {"type": "action_item", "owner": None, "due": None, "lines": [1]}
    decision = {**task, "type": "decision", "text": "the disk filled up"}
    actions, drops = parse_answer(
        {"actions": [{**task, "text": "check the disk"}, decision]}, DetectionRequest(status)
    )
    assert [a.action_type for a in actions] == [ActionType.DECISION]  # only tasks need one
    assert drops == [ItemDrop("uncommitted", "check the disk")]
    actions, drops = parse_answer(
        {"actions": [{**task, "text": "share the agenda"}]}, DetectionRequest(asked)
    )
    assert [a.text for a in actions] == ["share the agenda"] and drops == []
