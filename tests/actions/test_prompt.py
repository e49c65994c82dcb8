"""The prompt and the validation of answers (no model)."""

from __future__ import annotations

import json

import pytest

from agent.actions.errors import AnswerInvalid
from agent.actions.model import DetectionRequest, WindowLine
from agent.actions.prompt import ANSWER_SCHEMA, build_messages, parse_answer, response_format
from agent.contracts.link import ActionType

pytestmark = pytest.mark.unit


def _request() -> DetectionRequest:
    lines = (
        WindowLine("seg-a", "Anna", "p1", 0.0, 2.0, "we ship the beta on friday"),
        WindowLine("seg-b", "Bob", None, 2.5, 4.0, "I'll write the release notes by thursday"),
    )
    context = (WindowLine("seg-0", None, None, -3.0, -1.0, "hello everyone"),)
    return DetectionRequest(lines, context, "Be terse.")


def test_messages_number_the_window_and_show_context_unnumbered() -> None:
    system, user = build_messages(_request())
    assert system["role"] == "system" and system["content"].startswith("Be terse.")
    assert "Unknown: hello everyone" in user["content"]
    assert "[1] Anna: we ship the beta on friday" in user["content"]
    assert "[2] Bob: I'll write" in user["content"]
    assert "[0]" not in user["content"]


def test_answer_maps_line_numbers_to_segment_ids_and_drops_the_rest() -> None:
    content = json.dumps(
        {
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
                {
                    "type": "action_item",
                    "text": "rests on no line of the window",
                    "owner": None,
                    "due": None,
                    "lines": [0, 9],
                },
                {
                    "type": "risk",
                    "text": "not a type we know",
                    "owner": None,
                    "due": None,
                    "lines": [1],
                },
                {
                    "type": "Follow-Up",
                    "text": "sync with legal",
                    "owner": "null",
                    "due": "",
                    "lines": ["[1]"],
                },
                {"text": "no type at all", "owner": "Dana", "lines": 1},
                {"type": "question", "text": "a single line number", "lines": 2},
            ]
        }
    )
    actions, dropped = parse_answer(content, _request())
    assert dropped == 3
    assert [a.action_type for a in actions] == [
        ActionType.DECISION,
        ActionType.ACTION_ITEM,
        ActionType.FOLLOW_UP,
        ActionType.QUESTION,
    ]
    assert actions[3].segment_ids == ("seg-b",)
    assert actions[0].text == "Ship the beta on Friday" and actions[0].due == "Friday"
    assert actions[1].segment_ids == ("seg-b",) and actions[1].owner == "Bob"
    assert actions[2].owner is None and actions[2].due is None
    assert actions[2].segment_ids == ("seg-a",)


def test_answer_in_a_fence_or_prose_is_accepted() -> None:
    body = '{"actions": [{"type": "question", "text": "who owns QA?", "lines": [2]}]}'
    for content in (f"```json\n{body}\n```", f"Sure! Here it is: {body} Hope it helps."):
        actions, _ = parse_answer(content, _request())
        assert [a.text for a in actions] == ["who owns QA?"]


@pytest.mark.parametrize(
    "content", ["", "no json here", '{"items": 3}', '{"actions": 5}', '{"actions": [1]}']
)
def test_answer_of_the_wrong_shape_is_invalid(content: str) -> None:
    with pytest.raises(AnswerInvalid):
        parse_answer(content, _request())


def test_schema_and_response_formats() -> None:
    items = ANSWER_SCHEMA["properties"]["actions"]["items"]
    assert set(items["properties"]["type"]["enum"]) == {t.value for t in ActionType}
    strict = response_format("json_schema")
    assert strict["type"] == "json_schema" and strict["json_schema"]["schema"] is ANSWER_SCHEMA
    assert response_format("json_object") == {"type": "json_object"}


def test_owner_and_due_are_grounded_in_the_cited_lines() -> None:
    lines = (
        WindowLine("s1", "Dana", None, 0.0, 2.0, "Okay, I will send the launch email by Friday."),
        WindowLine("s2", "Eli", None, 2.5, 4.0, "Dana, can you update the pricing page?"),
        WindowLine("s3", "Dana", None, 4.5, 6.0, "Somebody should fix the build."),
    )
    request = DetectionRequest(lines)
    item = {"type": "action_item", "owner": None, "due": None}
    content = json.dumps(
        {
            "actions": [
                {**item, "text": "Send the launch email", "due": "2023-03-05", "lines": [1]},
                {**item, "text": "Update the pricing page", "due": "Friday", "lines": [2]},
                {**item, "text": "Fix the build", "lines": [3]},
                {**item, "text": "Send it", "owner": "Eli", "due": "by Friday", "lines": [1]},
            ]
        }
    )
    actions, _ = parse_answer(content, request)
    # The invented date goes, the said one stays; "I will" is the speaker's, "Dana, can you"
    # is Dana's; an owner the model named is kept; nobody owns the build.
    assert [(a.owner, a.due) for a in actions] == [
        ("Dana", None),
        ("Dana", None),
        (None, None),
        ("Eli", "by Friday"),
    ]
