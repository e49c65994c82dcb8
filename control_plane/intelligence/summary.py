"""The summary of a whole meeting: what the model is asked, and how its answer is checked.

Source: docs/api.md 2.14. The meeting's stored final segments are numbered ``[1]``, ``[2]`` …
with their speakers; the model answers ``{summary, decisions, action_items}`` in JSON of
:data:`PART_SCHEMA`, every decision and action item citing the numbers of the lines it comes
from. :func:`parse_part` maps the numbers back to segment ids, drops an item that cites no
line of its part, and grounds each action item's ``owner`` and ``due`` in its cited lines:
an ``owner`` is kept when the cited lines name it or it is the speaker of a cited line that
commits in the first person, else dropped (models name a plausible person, often whoever
spoke first), then live detection's grounding
(:func:`.action_prompt.ground`) gives an unowned item the speaker who says "I'll …" or the
participant asked by name, and drops a ``due`` none of whose words were said.

Long meetings (map, then reduce): the lines are cut into parts of at most ``chunk_chars``
characters of rendered transcript (one line never split; a line longer than that is cut to
it). The caller sizes ``chunk_chars`` to the model's context (setting
``MEETBOT_INTELLIGENCE_SUMMARY_CHUNK_CHARS``: 3 840 characters by default, about 1 300 tokens,
which fit the embedded model's 2 048-token context beside a 512-token answer; about 48 000 suit
a 128k-token model such as gpt-4o-mini). Each part is summarised on its own (map); its decisions and
action items are kept as they are, so each cites lines of its own part. When there was more
than one part, the parts' summaries, in order, are merged into one by :data:`MERGE_SCHEMA`
calls (reduce), in groups of at least two that fit ``chunk_chars`` where they can, until one
summary is left.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.contracts.link import ActionType
from control_plane.intelligence.action_model import DetectedAction, DetectionRequest, WindowLine
from control_plane.intelligence.action_prompt import ground, normalise_words
from control_plane.intelligence.chat import ChatAnswerInvalid, ChatMessage, ChatModel

SUMMARY_TEXT_MAX = 2000
"""Characters of ``summary`` kept at most."""
ITEM_TEXT_MAX = 500
"""Characters of a decision's or an action item's ``text`` kept at most."""
_ITEMS_PER_PART = 12
_NOBODY = frozenset({"", "null", "none", "n/a", "unknown", "unassigned", "tbd", "nobody"})
_LINES_PER_ITEM = 8

PART_PROMPT = """\
Summarise this part of a meeting transcript as JSON.
summary: three to six sentences on what was discussed and concluded, in plain words.
decisions: each thing the group settled; its text is a short sentence saying what was decided
(e.g. "Launch the website on March third"), never just a name.
action_items: each task someone will do; its text is a short sentence saying the task (e.g.
"Send the launch email to all customers"); owner: the person doing it as named in the lines (a
speaker saying "I'll" or "I will" owns it), else null; due: the deadline in the words said
(e.g. "Friday"), else null.
Every decision and action item gives lines: the numbers of the transcript lines it comes from.
Leave out small talk. Nothing settled or assigned: empty lists."""

MERGE_PROMPT = """\
These are summaries of consecutive parts of one meeting, in order. Write one summary of the
whole meeting as JSON {"summary": ...}: three to six sentences on what was discussed and
concluded, in plain words, without repeating yourself."""

_LINES = {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": _LINES_PER_ITEM}

PART_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "maxLength": SUMMARY_TEXT_MAX},
        "decisions": {
            "type": "array",
            "maxItems": _ITEMS_PER_PART,
            "items": {
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 300}, "lines": _LINES},
                "required": ["text", "lines"],
                "additionalProperties": False,
            },
        },
        "action_items": {
            "type": "array",
            "maxItems": _ITEMS_PER_PART,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "maxLength": 300},
                    "owner": {"type": ["string", "null"], "maxLength": 100},
                    "due": {"type": ["string", "null"], "maxLength": 100},
                    "lines": _LINES,
                },
                "required": ["text", "owner", "due", "lines"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["summary", "decisions", "action_items"],
    "additionalProperties": False,
}
"""JSON schema of one part's answer (``schema_name`` ``meeting_summary``)."""

MERGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string", "maxLength": SUMMARY_TEXT_MAX}},
    "required": ["summary"],
    "additionalProperties": False,
}
"""JSON schema of a merge's answer (``schema_name`` ``meeting_summary_merge``)."""


Line = WindowLine
"""One stored final segment as the model sees it (live detection's window line)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """Something the group settled, and the ids of the segments that say so (never empty)."""

    text: str
    segment_ids: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        """``{"text", "segment_ids"}`` as stored and served."""
        return {"text": self.text, "segment_ids": list(self.segment_ids)}


@dataclass(frozen=True, slots=True)
class ActionItem:
    """A task someone will do; ``owner``/``due`` as the cited segments say them, else None."""

    text: str
    owner: str | None
    due: str | None
    segment_ids: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        """``{"text", "owner", "due", "segment_ids"}`` as stored and served."""
        return {
            "text": self.text,
            "owner": self.owner,
            "due": self.due,
            "segment_ids": list(self.segment_ids),
        }


@dataclass(frozen=True, slots=True)
class Part:
    """One part's checked answer; ``dropped`` counts items that cited no line of the part."""

    summary: str
    decisions: tuple[Decision, ...]
    action_items: tuple[ActionItem, ...]
    dropped: int = 0


@dataclass(slots=True)
class MeetingSummaryResult:
    """The whole meeting's summary and what making it cost.

    Attributes:
        summary: The summary text (empty for a meeting without segments).
        decisions: Decisions of every part, in order, the same text once.
        action_items: Action items of every part, in order, the same text once.
        calls: Model calls made (parts, then merges).
        prompt_tokens: Prompt tokens over all calls (the provider's count).
        completion_tokens: Completion tokens over all calls.
        dropped: Items dropped for citing no line of their part.
    """

    summary: str = ""
    decisions: list[Decision] = field(default_factory=list)
    action_items: list[ActionItem] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    dropped: int = 0


class _Item(BaseModel):
    model_config = ConfigDict(extra="ignore")

    text: str
    owner: str | None = None
    due: str | None = None
    lines: list[int] = Field(default_factory=list)


class _PartAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str
    decisions: list[_Item]
    action_items: list[_Item]


class _MergeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    summary: str


def render(lines: Sequence[Line]) -> str:
    """The lines as the prompt shows them: ``[n] Speaker: text``, one a line, from 1."""
    return "\n".join(
        f"[{number}] {line.speaker or 'Unknown'}: {line.text}"
        for number, line in enumerate(lines, start=1)
    )


def chunk(lines: Sequence[Line], chunk_chars: int) -> list[list[Line]]:
    """``lines`` cut, in order, into parts of at most ``chunk_chars`` rendered characters.

    A line is never split between parts; one longer than ``chunk_chars`` on its own is cut
    to fit. Raises ValueError when ``chunk_chars`` is below 200.
    """
    if chunk_chars < 200:
        raise ValueError("chunk_chars must be at least 200")
    parts: list[list[Line]] = []
    current: list[Line] = []
    size = 0
    for line in lines:
        # "[nnnn] Speaker: " plus the newline: numbers restart in each part, so 8 digits is ample.
        overhead = 14 + len(line.speaker or "Unknown")
        room = chunk_chars - overhead
        if len(line.text) > room:
            line = replace(line, text=line.text[: max(room, 1)])
        cost = overhead + len(line.text)
        if current and size + cost > chunk_chars:
            parts.append(current)
            current, size = [], 0
        current.append(line)
        size += cost
    if current:
        parts.append(current)
    return parts


def _one_line(text: str, limit: int) -> str:
    return " ".join(text.split())[:limit]


def _clean(value: str | None) -> str | None:
    """The model's owner or due on one line, up to 100 characters; None for "nobody"."""
    if value is None:
        return None
    value = _one_line(value, 100)
    return None if value.casefold() in _NOBODY else value


def _spoken(owner: str, cited: Sequence[WindowLine]) -> bool:
    """Whether the cited lines give the task to ``owner``.

    Every word of ``owner`` is a word of a cited line's text, or ``owner`` is the speaker of a
    cited line that commits in the first person (live grounding's rule: that line alone gives
    its speaker an unowned task).
    """
    wanted = normalise_words(owner)
    said = {word for line in cited for word in normalise_words(line.text)}
    if wanted and all(word in said for word in wanted):
        return True
    for line in cited:
        if line.speaker and normalise_words(line.speaker) == wanted:
            alone = DetectedAction(
                action_type=ActionType.ACTION_ITEM, text="-", segment_ids=(line.segment_id,)
            )
            if ground(alone, DetectionRequest(lines=(line,))).owner == line.speaker:
                return True
    return False


def parse_part(content: Mapping[str, Any], lines: Sequence[Line]) -> Part:
    """Check one part's answer against the part's ``lines`` (numbered from 1).

    Returns:
        The part: items whose text is empty or that cite no line of the part dropped (and
        counted), cited numbers mapped to segment ids, owners and dues grounded.

    Raises:
        ChatAnswerInvalid: ``content`` is not an answer of :data:`PART_SCHEMA`'s shape.
    """
    try:
        answer = _PartAnswer.model_validate(content)
    except ValidationError as exc:
        raise ChatAnswerInvalid(f"summary answer has the wrong shape: {exc.errors()[:2]}") from exc
    request = DetectionRequest(lines=tuple(lines))

    def kept(items: Sequence[_Item]) -> list[tuple[_Item, str, list[Line]]]:
        """The items with text that cite a line of the part: each, its one-line text, its lines."""
        found = []
        for item in items:
            numbers = dict.fromkeys(n for n in item.lines if 1 <= n <= len(lines))
            text = _one_line(item.text, ITEM_TEXT_MAX)
            if numbers and text:
                found.append((item, text, [lines[n - 1] for n in numbers]))
        return found

    decided, assigned = kept(answer.decisions), kept(answer.action_items)
    dropped = len(answer.decisions) + len(answer.action_items) - len(decided) - len(assigned)
    decisions = [
        Decision(text, tuple(line.segment_id for line in said)) for _, text, said in decided
    ]
    actions: list[ActionItem] = []
    for item, text, said in assigned:
        owner = _clean(item.owner)
        if owner is not None and not _spoken(owner, said):
            owner = None
        action = ground(
            DetectedAction(
                action_type=ActionType.ACTION_ITEM,
                text=text,
                owner=owner,
                due=_clean(item.due),
                segment_ids=tuple(line.segment_id for line in said),
            ),
            request,
        )
        actions.append(ActionItem(text, action.owner, action.due, action.segment_ids))
    return Part(
        _one_line(answer.summary, SUMMARY_TEXT_MAX), tuple(decisions), tuple(actions), dropped
    )


async def summarise(
    chat: ChatModel, lines: Sequence[Line], *, chunk_chars: int, max_tokens: int
) -> MeetingSummaryResult:
    """Summarise a meeting's ``lines`` (map over parts, then reduce; see the module).

    Args:
        chat: The replica's model.
        lines: The stored final segments, in time order.
        chunk_chars: Most rendered transcript characters in one call (at least 200).
        max_tokens: Longest answer of one call, in tokens.

    Returns:
        The summary; an empty one, without any call, when ``lines`` is empty.

    Raises:
        ChatUnavailable: A call failed transiently (the whole summary may be tried again).
        ChatAnswerInvalid: An answer is not of the schema's shape.
        ChatError: A call failed for good.
    """
    result = MeetingSummaryResult()
    if not lines:
        return result
    summaries: list[str] = []
    seen_decisions: set[str] = set()
    seen_actions: set[str] = set()
    for part_lines in chunk(lines, chunk_chars):
        content = await _call(
            chat,
            result,
            PART_PROMPT,
            render(part_lines),
            PART_SCHEMA,
            "meeting_summary",
            max_tokens,
        )
        part = parse_part(content, part_lines)
        result.dropped += part.dropped
        summaries.append(part.summary)
        for decision in part.decisions:
            if decision.text.casefold() not in seen_decisions:
                seen_decisions.add(decision.text.casefold())
                result.decisions.append(decision)
        for action in part.action_items:
            if action.text.casefold() not in seen_actions:
                seen_actions.add(action.text.casefold())
                result.action_items.append(action)
    while len(summaries) > 1:
        summaries = await _merge_round(chat, summaries, result, chunk_chars, max_tokens)
    result.summary = summaries[0]
    return result


async def _call(
    chat: ChatModel,
    result: MeetingSummaryResult,
    instructions: str,
    text: str,
    schema: dict[str, Any],
    schema_name: str,
    max_tokens: int,
) -> Mapping[str, Any]:
    """The parsed answer of one model call, counted in ``result``.

    ``instructions`` go as the system message, ``text`` as the user's.
    """
    answer = await chat.complete_json(
        [ChatMessage("system", instructions), ChatMessage("user", text)],
        schema,
        schema_name=schema_name,
        max_tokens=max_tokens,
    )
    result.calls += 1
    result.prompt_tokens += answer.prompt_tokens
    result.completion_tokens += answer.completion_tokens
    return answer.content


async def _merge_round(
    chat: ChatModel,
    summaries: list[str],
    result: MeetingSummaryResult,
    chunk_chars: int,
    max_tokens: int,
) -> list[str]:
    """One reduce round: consecutive summaries merged in groups of ``chunk_chars`` characters.

    Every group holds at least two summaries, so each round shortens the list.
    """
    groups: list[list[str]] = []
    for text in summaries:
        if groups and (
            len(groups[-1]) < 2 or sum(len(t) + 12 for t in groups[-1]) + len(text) <= chunk_chars
        ):
            groups[-1].append(text)
        else:
            groups.append([text])
    if len(groups) > 1 and len(groups[-1]) == 1:
        groups[-2].extend(groups.pop())
    merged: list[str] = []
    for group in groups:
        numbered = "\n\n".join(f"Part {n}: {text}" for n, text in enumerate(group, start=1))
        content = await _call(
            chat, result, MERGE_PROMPT, numbered, MERGE_SCHEMA, "meeting_summary_merge", max_tokens
        )
        try:
            merged.append(_one_line(_MergeAnswer.model_validate(content).summary, SUMMARY_TEXT_MAX))
        except ValidationError as exc:
            raise ChatAnswerInvalid(
                f"merge answer has the wrong shape: {exc.errors()[:2]}"
            ) from exc
    return merged
