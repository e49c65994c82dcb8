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
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from testmeeting.media import read_pcm, wav_bytes

PACKAGED_DIR = Path(__file__).resolve().parent / "speech"
"""The packaged set: ``<stem>.opus`` + ``<stem>.txt`` per clip and ``MANIFEST.tsv``."""

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
