"""Checks an answer item must pass to become an action: why an item is dropped, if it is.

The small default model lists many things that are not actions, most of all on realtime
transcripts (lowercase, no punctuation, recognition errors): fragments of a line ("print",
"do that"), questions it typed as tasks ("how many tickets a week"), items copied from the
context or from its worked examples. :func:`drop_reason` rejects an item that

- ``no_line``: cites no line of the window (the context and numbers outside it do not count);
- ``asked``: is not a ``question`` but is phrased as one (it ends with "?" or opens with
  "how", "what", "do you" …): a question is not a task, decision or follow-up;
- ``unasked``: is a ``question`` not phrased as one (no "?", and it opens with no question
  word or auxiliary: "we should bring it to the sync" is not a question);
- ``too_short``: says fewer than two words of substance (:func:`content_words`);
- ``ungrounded``: shares none of its words of substance with the window's lines;
- ``uncommitted``: is an ``action_item`` of a window where nobody commits or is asked to do
  anything (no line says "I'll", "will", "can you", "please", "need to", "should" …, or
  opens with a name and a comma: "Carol, share the agenda").

Every dropped item is counted by its reason (``meetbot_action_items_dropped_total``) and
logged by the detection worker; ``malformed`` is the reason of an item that is not an action
at all (no known type, no text). Chosen on the ``written`` windows of ``bench/actions.py``
and measured on its ``transcript`` windows as held out (``bench/data/
action_figures_2026-11-29-s43.jsonl``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agent.contracts.link import ActionType
from control_plane.intelligence.action_model import (
    DROP_REASONS,
    DetectedAction,
    DetectionRequest,
    DropReason,
    ItemDrop,
)

__all__ = ["DROP_REASONS", "DropReason", "ItemDrop", "content_words", "drop_reason"]

_FILLER = frozenset(
    """a an the to of for and or on in at by with is are be was were been we i it its it's
    that that's this these those let's lets our us you your me my will can do does did
    i'll i'm we'll you'll so just yeah ok okay um uh like have has had what how when who
    which if then there their they them yes no not all get got go going also about from up
    out as but need should would could one some any""".split()
)
"""Words that carry no substance of their own (articles, pronouns, auxiliaries, fillers)."""

_ASKED = re.compile(
    r"^(how|what|why|who|when|where|which|do you|does|did|is there|are you|are we|"
    r"can you|could you)\b",
    re.IGNORECASE,
)

_QUESTION = re.compile(
    r"^(how|what|what's|why|who|whom|whose|when|where|which|do|does|did|is|are|was|were|can|"
    r"could|should|would|will|have|has|shall|may|might|any|anyone|anybody)\b",
    re.IGNORECASE,
)

_COMMITS = re.compile(
    r"\b(i'll|i will|we'll|we will|let me|can you|could you|would you|will you|please|i can|"
    r"going to|gonna|need to|needs to|should|must|have to|has to|will)\b",
    re.IGNORECASE,
)

_ADDRESSED = re.compile(r"^\s*([A-Z][\w'-]*),\s+\w")


def content_words(text: str) -> set[str]:
    """The words of substance of ``text``: lowercased words, fillers (``_FILLER``) left out.

    Returns:
        Words of letters, digits and apostrophes, at least 2 characters long.
    """
    return {
        word
        for word in re.findall(r"[a-z0-9']+", text.casefold())
        if len(word) > 1 and word.strip("'") not in _FILLER
    }


def _said(lines: Iterable[str]) -> set[str]:
    return content_words(" ".join(lines))


def drop_reason(action: DetectedAction, request: DetectionRequest) -> DropReason | None:
    """Why ``action`` (an answer item of ``request``'s window) is not kept; None: it is.

    Args:
        action: The item as parsed (:func:`.action_prompt.parse_answer` drops an item that is
            ``malformed`` or cites ``no_line`` before this check).
        request: The window it answers.

    Returns:
        ``asked``, ``unasked``, ``too_short``, ``ungrounded`` or ``uncommitted``, the first
        that applies, or None.
    """
    text = action.text.strip()
    asked = text.endswith("?")
    if action.action_type is ActionType.QUESTION:
        if not (asked or _QUESTION.match(text)):
            return "unasked"
    elif asked or _ASKED.match(text):
        return "asked"
    words = content_words(text)
    if len(words) < 2:
        return "too_short"
    if not words & _said(line.text for line in request.lines):
        return "ungrounded"
    if action.action_type is ActionType.ACTION_ITEM and not any(
        _commits(line.text) for line in request.lines
    ):
        return "uncommitted"
    return None


def _commits(text: str) -> bool:
    """Whether a line commits to a task or asks for one ("I'll", "can you", "Carol, share …")."""
    if _COMMITS.search(text):
        return True
    addressed = _ADDRESSED.match(text)  # a request by name: "Carol, share the agenda"
    return addressed is not None and addressed[1].casefold() not in _FILLER
