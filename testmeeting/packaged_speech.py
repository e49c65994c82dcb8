"""Real recorded speech that ships inside the package, for machines without the speech corpus.

``testmeeting/speech/`` holds a few minutes of public-domain and openly licensed recordings
(LJ Speech, LibriSpeech test-clean, Mozilla Common Voice, Multilingual LibriSpeech Spanish and
the JFK inaugural address) as Ogg Opus, with each clip's reference transcript (``.txt``) and a
``MANIFEST.tsv`` naming its source, licence, attribution and the changes made. They are the
same clips, under the same names, as in the real-speech corpus (``MEETBOT_SPEECH_DIR``), so
anything written for the corpus — ``speech / "jfk.wav"``, scenario files, ``MANIFEST.tsv``
readers — runs unchanged on :func:`materialise`'s folder.

The clips are re-encoded from the corpus's 16 kHz WAV by ``bench/packaged_speech.py build``;
``bench/packaged_speech.py wer`` shows that tiny.en's word error rate is the same on them as
on the originals (the bitrate and the figures are in that script's docstring).

``testmeeting/speech/conversational/`` is a second, separate set: spontaneous English speech
(a hoarse speaker, fillers, whisper, laughter, long pauses, three turns of an AMI meeting)
with human references and a speaker id per clip, built by ``bench/conversational_speech.py``.
:func:`conversational_clips` and :func:`packaged_clips` decode either set in memory with its
speaker ids, for ``testmeeting.stress``.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from testmeeting.media import read_pcm, wav_bytes

PACKAGED_DIR = Path(__file__).resolve().parent / "speech"
"""The packaged set: ``<stem>.opus`` + ``<stem>.txt`` per clip and ``MANIFEST.tsv``."""

CONVERSATIONAL_DIR = PACKAGED_DIR / "conversational"
"""Spontaneous speech: ``<stem>.opus`` + ``<stem>.txt`` per clip and its own ``MANIFEST.tsv``.

Built by ``bench/conversational_speech.py`` (sources, licences and what was changed are in
that script's docstring and in the manifest). Not part of :func:`materialise`'s corpus layout.
"""

PACKAGED_SPEAKERS: dict[str, str] = {
    **{f"LJ001-{n:04d}.wav": "lj" for n in range(1, 13)},  # LJ Speech: one reader
    "ls_testclean_1089-134686-0001.wav": "ls-1089",  # LibriSpeech speaker 1089
    "ls_testclean_1995-1837-0001.wav": "ls-1995",
    "ls_testclean_61-70968-0000.wav": "ls-61",
    # The same recording as ls_testclean_61-70968-0000 (waveform correlation 0.99999).
    "fw_stereo_diarization_ch0.wav": "ls-61",
    # The other voice of faster-whisper's two-speaker test file; its speaker id is not given.
    "fw_stereo_diarization_ch1.wav": "fw-ch1",
    # Common Voice clips from one test folder, contributors not given: treated as one voice.
    "common_voice_en_22058264.wav": "cv",
    "common_voice_en_22058266.wav": "cv",
    "common_voice_en_22058267.wav": "cv",
    "jfk.wav": "jfk",
    "es_mls_13697_11991_000000.wav": "mls-13697",  # MLS Spanish speaker 13697
}
"""Packaged clip (its ``file``) → speaker id: clips with the same id may be the same voice."""

MARKER = ".packaged-speech"
"""File :func:`materialise` writes last into its folder: the hash of the set it decoded."""


def available() -> bool:
    """Whether the packaged set is installed (its ``MANIFEST.tsv`` is present)."""
    return (PACKAGED_DIR / "MANIFEST.tsv").is_file()


def packaged_rows() -> list[dict[str, str]]:
    """The packaged ``MANIFEST.tsv`` as rows (``file`` is the corpus's WAV name).

    Raises:
        OSError: The packaged set is not installed.
    """
    with (PACKAGED_DIR / "MANIFEST.tsv").open(encoding="utf-8") as manifest:
        return list(csv.DictReader(manifest, delimiter="\t"))


@dataclass(frozen=True, slots=True)
class Clip:
    """One packaged clip decoded.

    Attributes:
        name: The clip's stem (``jfk``, ``mfa_cold_corpus``).
        samples: 16 kHz mono int16 samples, shape ``(n,)``; a read-only view of the decoded
            bytes (not copied).
        text: Reference transcript as the source has it (normalise before comparing).
        speaker: Speaker id (:data:`PACKAGED_SPEAKERS`, or the conversational manifest's).
        language: ISO 639-1 code.
        what: What the clip is (``hoarse``, ``whispered``…); empty for the read-speech set.
    """

    name: str
    samples: npt.NDArray[np.int16]
    text: str
    speaker: str
    language: str
    what: str

    @property
    def duration(self) -> float:
        """Seconds of audio."""
        return len(self.samples) / 16_000


def _decode(path: Path) -> npt.NDArray[np.int16]:
    return np.frombuffer(read_pcm(path), dtype=np.int16)


def conversational_rows() -> list[dict[str, str]]:
    """The conversational set's ``MANIFEST.tsv`` as rows (``file`` is the ``.opus`` name).

    Raises:
        OSError: The conversational set is not installed.
    """
    with (CONVERSATIONAL_DIR / "MANIFEST.tsv").open(encoding="utf-8") as manifest:
        return list(csv.DictReader(manifest, delimiter="\t"))


def conversational_clips() -> list[Clip]:
    """Every clip of the conversational set, decoded (16 kHz mono int16), in manifest order.

    Blocking: ffmpeg decodes each clip (about 2 s for the set).

    Raises:
        OSError: The set is not installed.
        testmeeting.errors.ScenarioError: ffmpeg is missing or cannot decode a clip.
    """
    clips: list[Clip] = []
    for row in conversational_rows():
        path = CONVERSATIONAL_DIR / row["file"]
        text = path.with_suffix(".txt").read_text(encoding="utf-8").strip()
        clips.append(
            Clip(path.stem, _decode(path), text, row["speaker"], row["language"], row["what"])
        )
    return clips


def packaged_clips(language: str | None = None) -> list[Clip]:
    """The read-speech set's clips decoded, with their :data:`PACKAGED_SPEAKERS` ids.

    Args:
        language: Only clips in this language (``en``); all when ``None``.

    Raises:
        OSError: The packaged set is not installed.
        KeyError: A packaged clip has no entry in :data:`PACKAGED_SPEAKERS`.
        testmeeting.errors.ScenarioError: ffmpeg is missing or cannot decode a clip.
    """
    clips: list[Clip] = []
    for row in packaged_rows():
        if language is not None and row["language"] != language:
            continue
        path = PACKAGED_DIR / row["packaged"]
        text = path.with_suffix(".txt").read_text(encoding="utf-8").strip()
        speaker = PACKAGED_SPEAKERS[row["file"]]
        clips.append(Clip(path.stem, _decode(path), text, speaker, row["language"], ""))
    return clips


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in PACKAGED_DIR.iterdir() if p.is_file()):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def is_materialised(folder: Path) -> bool:
    """Whether ``folder`` is a complete :func:`materialise` output (of any packaged set)."""
    return (folder / MARKER).is_file()


def materialise(folder: Path) -> Path:
    """Decode the packaged clips into ``folder`` as the corpus has them; return ``folder``.

    Writes ``<stem>.wav`` (16 kHz mono 16-bit PCM, decoded with ffmpeg), ``<stem>.txt`` and
    ``MANIFEST.tsv`` for every packaged clip, then :data:`MARKER`. Blocking (about 1–2 s of
    ffmpeg); call it through ``asyncio.to_thread`` from async code. A folder that already
    holds this set (same marker) is returned as it is; the clips are written to a temporary
    folder beside it and moved in, so a reader never sees half a set.

    Raises:
        FileNotFoundError: The packaged set is not installed.
        testmeeting.errors.ScenarioError: ffmpeg is missing or cannot decode a clip.
        OSError: ``folder`` cannot be written.
    """
    if not available():
        raise FileNotFoundError(f"packaged speech not installed: {PACKAGED_DIR} is missing")
    fingerprint = _fingerprint()
    marker = folder / MARKER
    if marker.is_file() and marker.read_text(encoding="utf-8").strip() == fingerprint:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    rows = packaged_rows()
    with tempfile.TemporaryDirectory(prefix=".packaged-speech-", dir=folder) as staging:
        work = Path(staging)
        for row in rows:
            wav = Path(row["file"])
            pcm = read_pcm(PACKAGED_DIR / row["packaged"])
            (work / wav.name).write_bytes(wav_bytes(pcm))
            shutil.copyfile(PACKAGED_DIR / wav.with_suffix(".txt").name, work / f"{wav.stem}.txt")
        shutil.copyfile(PACKAGED_DIR / "MANIFEST.tsv", work / "MANIFEST.tsv")
        for path in work.iterdir():
            os.replace(path, folder / path.name)
    marker.write_text(fingerprint + "\n", encoding="utf-8")
    return folder


def corpus_or_packaged(corpus: Path) -> Path:
    """``corpus`` when it holds a ``MANIFEST.tsv``, else the packaged set decoded for reuse.

    The packaged set goes to ``<temp dir>/meetbot-packaged-speech`` (decoded on the first call,
    reused by later runs while the set is unchanged). For scripts such as the benchmarks;
    blocking.

    Raises:
        FileNotFoundError: No corpus, and the packaged set is not installed.
        testmeeting.errors.ScenarioError: ffmpeg is missing or cannot decode a clip.
    """
    if (corpus / "MANIFEST.tsv").is_file():
        return corpus
    return materialise(Path(tempfile.gettempdir()) / "meetbot-packaged-speech")
