"""One utterance of the realtime tier, from the segmenter's start to its final segment."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from agent.transcribe.agreement import Agreement
from agent.transcribe.engine import DecodeResult, WordTiming
from agent.transcribe.segmenter import Ended


@dataclass(slots=True)
class Utterance:
    """Where one utterance stands.

    Attributes:
        track: Track id.
        number: Utterance number on the track (0, 1, …).
        segment_id: Id of its partial and final segments.
        start_epoch: Epoch seconds of its first sample (pre-roll included).
        start_sample: Track sample of its first sample.
        speaker_hint: Participant name the platform gives the track, if any.
        spec_state: Speculative decode: ``none``, ``queued``, ``running``, ``done``.
        spec_gen: Bumped by every Speculate/Resume/unspeculated end: a speculative decode
            whose generation is no longer current is only a partial.
        spec_audio: Audio of the queued speculative decode.
        spec_result: Result of the speculative decode (``done``).
        ended: The segmenter's end event, once it ended.
        end_wall: ``time.monotonic()`` when its last voiced sample arrived (for delays).
        ended_wall: ``time.monotonic()`` when the segmenter ended it (for the debug log).
        ended_lag_s: The ending batch's capture → analysis seconds (``Batch.lag_s``).
        final_wall: ``time.monotonic()`` when its final decode started (None: the
            speculative decode's result became the final).
        partial_text: Text of the last partial emitted.
        partial_samples: Samples the last partial decode covered.
        hypothesis: Words (with times from ``start_sample``) of its last hypothesis decoded
            with word timestamps, for the agreement of the next (``agent.transcribe.agreement``).
        agreed: Words agreed on whose cut was asked for, with the hypothesis they came from
            and the track samples where the cut may fall; their final when the cut comes.
        repeated: The normalised last words committed before it, when it is the rest of an
            agreement cut (it starts a little before the cut); its texts drop them.
        by_level: The level opened it, not the VAD (``agent.transcribe.segmenter.Started``):
            its partials and final are kept only when the model is sure of them.
    """

    track: str
    number: int
    segment_id: str
    start_epoch: float
    start_sample: int
    speaker_hint: str | None
    spec_state: Literal["none", "queued", "running", "done"] = "none"
    spec_gen: int = 0
    spec_audio: npt.NDArray[np.float32] | None = None
    spec_result: DecodeResult | None = None
    ended: Ended | None = None
    end_wall: float | None = None
    ended_wall: float | None = None
    ended_lag_s: float | None = None
    final_wall: float | None = None
    partial_text: str | None = None
    partial_samples: int = 0
    hypothesis: tuple[WordTiming, ...] = ()
    agreed: tuple[Agreement, DecodeResult, int, int] | None = None
    repeated: tuple[str, ...] = ()
    by_level: bool = False
