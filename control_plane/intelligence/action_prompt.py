"""What the model is asked for action detection and how its answer becomes actions.

The window's segments are numbered ``[1]``, ``[2]``… in the prompt and the model cites those
numbers; :func:`parse_answer` maps them back to segment ids and drops any number outside the
window, so an action can only rest on segments of the window (never on the context); an item
that fails the checks of :mod:`.action_checks` (a question typed as a task, a fragment, words
not said in the window) is dropped too, with its reason. Two worked windows
(:data:`EXAMPLES`) go before the real one as earlier turns: the small default model follows
an example far better than a definition, and one of them is small talk answered with
nothing. With a longer list of items in one example it tends to repeat that list's
sequence of types; examples with one item each did worse on bench/actions.py (issue 34).

Owner and due are then grounded in the lines the action rests on (:func:`ground`): small
models name the wrong speaker as owner and invent deadlines ("2023-03-05" for "by Friday").
An ``action_item`` gets the speaker of a cited line that commits in the first person ("I'll",
"I will", "let me" …), else the participant a cited line asks by name ("Bob, can you …",
"so Bob will …"), else the owner the model named; a ``due`` none of whose words occur in the
cited lines is dropped. A speaker's name copied in front of the text is removed.

Moved from the agent's ``agent/actions/prompt.py`` (issue 34); the answer now arrives as a
decoded JSON object from a :class:`.chat.ChatModel`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.contracts.link import ActionType
from control_plane.intelligence.action_checks import drop_reason
from control_plane.intelligence.action_model import (
    DetectedAction,
    DetectionRequest,
    ItemDrop,
    WindowLine,
)
from control_plane.intelligence.chat import ChatAnswerInvalid, ChatMessage

SYSTEM_PROMPT = """\
List what this meeting transcript produced, as JSON. Types:
action_item = someone says they will do a task ("I'll send it") or accepts one they are asked for.
decision = the group agrees on a choice ("let's go with X", "agreed").
question = a question that nobody answers in these lines; an answered one is not listed.
follow_up = a topic or meeting to come back to later ("let's revisit it next week").
Greetings, small talk, status reports and opinions are not listed. Most windows hold 0 to 2
items, never more than 5. text: the item in a few words, without the speaker's name. owner:
who does the action_item (the speaker saying "I'll", or the person asked), else null. due:
the deadline as said, else null. lines: numbers of the lines it comes from. Nothing found:
{"actions": []}"""

_EXAMPLE_LINES = """\
Transcript lines:
[1] Sam: morning all, how was the weekend
[2] Kim: good, bit rainy. so the invoice export is still broken
[3] Sam: I'll look at the export tonight and ping you when it works
[4] Kim: great. do we keep the csv format or move to excel?
[5] Sam: keep csv, customers load it into everything
[6] Kim: agreed, csv stays. Ana, can you ask finance if they need the tax column by friday
[7] Ana: sure
[8] Kim: and who presents at the all-hands next month?"""

_EXAMPLE_ANSWER = (
    '{"actions": ['
    '{"type": "action_item", "text": "fix the invoice export", "owner": "Sam", '
    '"due": "tonight", "lines": [3]}, '
    '{"type": "decision", "text": "keep the csv format", "owner": null, "due": null, '
    '"lines": [5, 6]}, '
    '{"type": "action_item", "text": "ask finance if they need the tax column", '
    '"owner": "Ana", "due": "by friday", "lines": [6, 7]}, '
    '{"type": "question", "text": "who presents at the all-hands next month", '
    '"owner": null, "due": null, "lines": [8]}]}'
)

_EXAMPLE_SMALL_TALK = """\
Transcript lines:
[1] Lee: can you see my screen?
[2] Max: yes, all good. that demo yesterday was great by the way
[3] Lee: thanks, it took a while. the numbers look better this month"""

EXAMPLES: tuple[ChatMessage, ...] = (
    ChatMessage("user", _EXAMPLE_LINES),
    ChatMessage("assistant", _EXAMPLE_ANSWER),
    ChatMessage("user", _EXAMPLE_SMALL_TALK),
    ChatMessage("assistant", '{"actions": []}'),
)
"""Two worked windows sent before the real one: what is listed, and small talk that is not."""

SCHEMA_NAME = "meeting_actions"
"""``schema_name`` of :data:`ANSWER_SCHEMA` (OpenAI's ``json_schema.name``)."""

_MAX_ITEMS = 5

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "actions": {
            "type": "array",
            "maxItems": _MAX_ITEMS,
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": [t.value for t in ActionType]},
                    "text": {"type": "string", "maxLength": 100},
                    "owner": {"type": ["string", "null"], "maxLength": 60},
                    "due": {"type": ["string", "null"], "maxLength": 60},
                    "lines": {
                        "type": "array",
                        "items": {"type": "integer", "minimum": 1},
                        "maxItems": 6,
                    },
                },
                "required": ["type", "text", "owner", "due", "lines"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["actions"],
    "additionalProperties": False,
}
"""JSON schema of the answer: ``{"actions": [{type, text, owner, due, lines}]}``, at most
5 actions (``_MAX_ITEMS``), ``lines`` being 1-based numbers of the window's lines."""


class _AnswerItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: str
    text: str = ""
    owner: str | None = None
    due: str | None = None
    lines: list[int | str] = Field(default_factory=list)

    @field_validator("lines", mode="before")
    @classmethod
    def _one_line_is_a_list(cls, value: Any) -> Any:
        # Unconstrained models often write "lines": 2 for a single line.
        return [value] if isinstance(value, int | str) else value


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    actions: list[dict[str, Any]]


def _line(line: WindowLine, number: int | None) -> str:
    speaker = line.speaker or "Unknown"
    prefix = f"[{number}] " if number is not None else ""
    return f"{prefix}{speaker}: {line.text.strip()}"


def build_messages(request: DetectionRequest) -> list[ChatMessage]:
    """The chat messages of one call.

    Returns:
        A system message (the bot's instructions when given, followed by the fixed answer
        format) and a user message (the context, then the numbered window).
    """
    system = SYSTEM_PROMPT
    if request.instructions:
        system = f"{request.instructions.strip()}\n\n{SYSTEM_PROMPT}"
    parts: list[str] = []
    if request.context:
        earlier = "\n".join(_line(line, None) for line in request.context)
        parts.append(f"Earlier in the meeting (context only, do not list):\n{earlier}\n")
    numbered = "\n".join(_line(line, i) for i, line in enumerate(request.lines, start=1))
    parts.append(f"Transcript lines:\n{numbered}")
    return [ChatMessage("system", system), *EXAMPLES, ChatMessage("user", "\n".join(parts))]


def _clean(value: str | None, limit: int = 100) -> str | None:
    if value is None:
        return None
    value = " ".join(value.split())
    if value.lower() in {"", "null", "none", "n/a", "unknown", "unassigned", "tbd"}:
        return None
    return value[:limit]


def _line_number(value: int | str) -> int | None:
    if isinstance(value, int):
        return value
    digits = re.sub(r"\D", "", value)
    return int(digits) if digits else None


_FIRST_PERSON = re.compile(
    r"\b(i'll|i will|i can|i'm going to|i am going to|i'll take|let me|i'll do|i'll handle)\b",
    re.IGNORECASE,
)
_ADDRESSED = re.compile(r"\b([\w'-]+),?\s+(?:can|could|would|will|please)\b", re.IGNORECASE)


def _owner_from_lines(lines: list[WindowLine], speakers: set[str]) -> str | None:
    """Who the cited lines say takes the task, when they say it plainly.

    The speaker of a line that commits in the first person, else a participant a line
    addresses by name with a request ("Lena, can you …", "… so Raj will …").
    """
    for line in lines:
        if line.speaker and _FIRST_PERSON.search(line.text):
            return line.speaker
    by_name = {speaker.casefold(): speaker for speaker in speakers}
    for line in lines:
        for addressed in _ADDRESSED.finditer(line.text):
            name = by_name.get(addressed.group(1).casefold())
            if name is not None and name != line.speaker:
                return name
    return None


def normalise_words(text: str) -> list[str]:
    """Lowercased words of ``text`` (letters and digits), for grounding checks."""
    return re.findall(r"[a-z0-9]+", text.casefold())


def _said(due: str, lines: list[WindowLine]) -> bool:
    words = set(normalise_words(" ".join(line.text for line in lines)))
    return any(word in words for word in normalise_words(due))


def ground(action: DetectedAction, request: DetectionRequest) -> DetectedAction:
    """``action`` with its owner and due grounded in its lines (see the module docstring)."""
    cited = [line for line in request.lines if line.segment_id in action.segment_ids]
    owner, due = action.owner, action.due
    if action.action_type is ActionType.ACTION_ITEM:
        speakers = {line.speaker for line in (*request.context, *request.lines) if line.speaker}
        owner = _owner_from_lines(cited, speakers) or owner
    if due is not None and not _said(due, cited):
        due = None
    if (owner, due) == (action.owner, action.due):
        return action
    return action.model_copy(update={"owner": owner, "due": due})


def _without_speaker(text: str, request: DetectionRequest) -> str:
    """``text`` without a leading ``Speaker:`` copied from the transcript's lines."""
    head, colon, rest = text.partition(":")
    speakers = {line.speaker for line in (*request.context, *request.lines) if line.speaker}
    return rest.strip() if colon and head.strip() in speakers and rest.strip() else text


def parse_answer(
    payload: Mapping[str, Any], request: DetectionRequest
) -> tuple[list[DetectedAction], list[ItemDrop]]:
    """Validate the model's answer against the window.

    Args:
        payload: The decoded answer (``ChatAnswer.content``), ``{"actions": [...]}``.
        request: The request it answers; line numbers refer to ``request.lines``.

    Returns:
        The valid actions (owner and due grounded, :func:`ground`) and the items dropped, each
        with why: ``malformed`` (no known type, no text), ``no_line`` (no line number inside
        the window), or a failed check of :func:`.action_checks.drop_reason`.

    Raises:
        ChatAnswerInvalid: The object has no ``actions`` list.
    """
    try:
        answer = _Answer.model_validate(payload)
    except ValidationError as exc:
        raise ChatAnswerInvalid(f"answer has the wrong shape: {exc.errors()[:2]}") from exc
    valid_types = {t.value for t in ActionType}
    actions: list[DetectedAction] = []
    drops: list[ItemDrop] = []
    for raw in answer.actions:
        try:
            item = _AnswerItem.model_validate(raw)
        except ValidationError:
            drops.append(ItemDrop("malformed", str(raw.get("text") or "")[:100]))
            continue
        kind = item.type.strip().lower().replace(" ", "_").replace("-", "_")
        numbers = [_line_number(n) for n in item.lines]
        ids = tuple(
            dict.fromkeys(
                request.lines[n - 1].segment_id
                for n in numbers
                if n is not None and 1 <= n <= len(request.lines)
            )
        )
        text = _without_speaker(" ".join(item.text.split()), request)
        if kind not in valid_types or not text:
            drops.append(ItemDrop("malformed", text[:100]))
            continue
        if not ids:
            drops.append(ItemDrop("no_line", text[:100]))
            continue
        action = DetectedAction(
            action_type=ActionType(kind),
            text=text[:500],
            owner=_clean(item.owner),
            due=_clean(item.due),
            segment_ids=ids,
        )
        reason = drop_reason(action, request)
        if reason is not None:
            drops.append(ItemDrop(reason, text[:100]))
            continue
        actions.append(ground(action, request))
    return actions, drops
