"""Whether a detected action repeats one already stored for the meeting (docs/api.md 2.9).

Two actions are the same when their types are equal and their normalised texts (lowercase,
accents folded, punctuation dropped, spaces collapsed) are at least ``similarity`` alike by
:class:`difflib.SequenceMatcher`'s ratio.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from difflib import SequenceMatcher

_PUNCTUATION = re.compile(r"[^\w\s]")


def normalise_text(text: str) -> str:
    """``text`` lowercased, accents folded, punctuation removed, whitespace collapsed."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(char for char in folded if not unicodedata.combining(char))
    return " ".join(_PUNCTUATION.sub(" ", folded).split())


def is_repeat(kind: str, text: str, seen: Iterable[tuple[str, str]], similarity: float) -> bool:
    """Whether an action of ``kind`` and ``text`` repeats one of ``seen``.

    Args:
        kind: The action's type.
        text: Its text.
        seen: ``(type, normalised text)`` of the actions already kept.
        similarity: Ratio (0-1) at which two texts count as the same.
    """
    mine = normalise_text(text)
    return any(
        kind == seen_kind and SequenceMatcher(None, mine, seen_text).ratio() >= similarity
        for seen_kind, seen_text in seen
    )
