"""The WER normaliser shared by tests and the benchmark."""

from __future__ import annotations

import pytest

from agent.transcribe.normalize import normalize_text, number_to_words, word_error_rate

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "STUFF IT INTO YOU, his belly counselled him!",
            "stuff it into you his belly counselled him",
        ),
        (
            'the "forty-two line Bible" of about fourteen fifty-five,',
            "the forty two line bible of about fourteen fifty five",
        ),
        (
            "the 42-line Bible of about 1455",
            "the forty two line bible of about fourteen fifty five",
        ),
        (
            "in 2024 we paid 1,200 dollars",
            "in twenty twenty four we paid one thousand two hundred dollars",
        ),
        ("by 2005", "by two thousand five"),
        ("the 21st of May, 3.5%", "the twenty first of may three point five percent"),
        ("um I don't know uh", "i dont know"),
        ("Essaye la dictée numéro un.", "essaye la dictée numéro un"),
    ],
)
def test_normalize(text: str, expected: str) -> None:
    assert normalize_text(text) == expected


def test_numbers() -> None:
    assert number_to_words(0) == ["zero"]
    assert " ".join(number_to_words(1_000_015)) == "one million fifteen"
    assert " ".join(number_to_words(2000)) == "two thousand"


def test_word_error_rate() -> None:
    assert word_error_rate("Ask not, what 4 you.", "ask not what four you") == 0.0
    assert word_error_rate("a b c d", "a b x d") == pytest.approx(0.25)
    assert word_error_rate("", "") == 0.0
    assert word_error_rate("", "hello") == 1.0
