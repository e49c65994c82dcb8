"""The queue of finals a slow decoder has not reached keeps its audio's memory bounded.

Real corpus speech, scaled the way the ingest scales PCM, goes through the real backlog and a
real folder; what comes back out must be the same samples, in the same order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agent.capture.audio import SAMPLE_RATE
from agent.transcribe.backlog import FinalsBacklog
from agent.transcribe.metrics import TranscribeMetrics
from agent.transcribe.segmenter import Ended
from agent.transcribe.utterance import Utterance
from tests.transcribe.helpers import load_wav

pytestmark = pytest.mark.unit

CLIPS = ("LJ001-0001.wav", "LJ001-0002.wav", "LJ001-0003.wav", "jfk.wav", "LJ001-0004.wav")


def ended(number: int, pcm: npt.NDArray[np.int16], start: int) -> Utterance:
    audio = pcm.astype(np.float32) / 32768.0  # as agent.transcribe.ingest scales a frame
    utt = Utterance("track-a", number, f"rt-0-{number}", 1_700_000_000.0, start, "Ada")
    utt.ended = Ended(number, start, audio, speculated=False, voiced_s=len(pcm) / SAMPLE_RATE)
    return utt


def test_audio_past_the_limit_waits_on_disk_and_comes_back_exact(
    speech: Path, tmp_path: Path
) -> None:
    pcms = [load_wav(speech, name) for name in CLIPS]
    metrics = TranscribeMetrics()
    limit_s = 12.0
    backlog = FinalsBacklog(limit_s, metrics, tmp_path / "backlog")
    start = 0
    for number, pcm in enumerate(pcms):
        backlog.append(ended(number, pcm, start))
        start += len(pcm)
        in_memory = metrics.backlog_s - metrics.backlog_spilled_s
        # The head is never written out; beyond it, memory stays under the limit.
        head = len(pcms[0]) / SAMPLE_RATE
        assert in_memory <= max(limit_s, head) + 1e-6
    total_s = sum(len(p) for p in pcms) / SAMPLE_RATE
    assert total_s > 2 * limit_s  # the corpus clips are long enough to spill
    assert metrics.backlog_s == round(total_s, 3)
    assert metrics.backlog_spilled_s > 0
    assert metrics.finals_spilled >= 2
    spill_folder = next((tmp_path / "backlog").iterdir())
    assert len(list(spill_folder.iterdir())) == metrics.finals_spilled

    out = [backlog.popleft() for _ in range(len(backlog))]

    assert [u.number for u in out] == list(range(len(pcms)))
    for utt, pcm in zip(out, pcms, strict=True):
        assert utt.ended is not None
        assert utt.ended.audio.dtype == np.float32
        np.testing.assert_array_equal(utt.ended.audio, pcm.astype(np.float32) / 32768.0)
    assert metrics.backlog_s == 0 and metrics.backlog_spilled_s == 0
    assert list(spill_folder.iterdir()) == []  # each file goes once it is read back
    backlog.close()
    assert not spill_folder.exists()


def test_peek_reads_the_head_back_and_close_removes_what_waits(
    speech: Path, tmp_path: Path
) -> None:
    pcm = load_wav(speech, "jfk.wav")  # 11 s
    metrics = TranscribeMetrics()
    backlog = FinalsBacklog(5.0, metrics, tmp_path)
    for number in range(3):
        backlog.append(ended(number, pcm, number * len(pcm)))
    # The head stays in memory, both others went to disk.
    assert metrics.finals_spilled == 2
    assert metrics.backlog_spilled_s == round(2 * len(pcm) / SAMPLE_RATE, 3)
    first = backlog.popleft()
    second = backlog.peek()
    assert second is not None and second.number == 1
    assert second.ended is not None and len(second.ended.audio) == len(pcm)
    assert metrics.backlog_spilled_s == round(len(pcm) / SAMPLE_RATE, 3)
    assert first.number == 0 and len(backlog) == 2

    backlog.close()
    backlog.close()

    assert len(backlog) == 0 and not backlog
    assert list(tmp_path.iterdir()) == []
    assert metrics.backlog_s == 0


def test_a_decoder_that_keeps_up_never_touches_the_disk(speech: Path, tmp_path: Path) -> None:
    pcm = load_wav(speech, "LJ001-0001.wav")
    metrics = TranscribeMetrics()
    backlog = FinalsBacklog(120.0, metrics, tmp_path / "backlog")
    for number in range(20):
        backlog.append(ended(number, pcm, number * len(pcm)))
        assert backlog.popleft().number == number
    assert metrics.finals_spilled == 0
    assert not (tmp_path / "backlog").exists()
