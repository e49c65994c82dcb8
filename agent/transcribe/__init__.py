"""Transcription: faster-whisper on the CPU, realtime and deferred tiers (issue 5).

Importing this package loads nothing heavy; faster-whisper and onnxruntime are imported only
when a model or the VAD is loaded. With ``transcribe_enabled=false`` construct nothing.

Construct (the agent, once per bot)::

    from agent.transcribe.factory import open_transcriber
    from agent.transcribe.options import TranscribeOptions

    transcriber = await open_transcriber(
        config.settings,                      # BotSettings: transcribe_enabled, language, task,
                                              # transcription_tier
        TranscribeOptions(model="tiny.en", models_dir=data_dir / "models"),
        join_time=joined_at,                  # epoch s; segment start/end count from it
        work_dir=data_dir / "tracks",         # per-track WAVs of the deferred pass
        refine_after_meeting=settings.refine_after_meeting,
        track_speakers=None,                  # {track_id: name} if the platform tells
        id_prefix=str(config.bot_id),         # segment ids are unique per bot
    )                                         # → None when transcribe_enabled is false

``open_transcriber`` loads the model in a worker thread and returns a started
:class:`~agent.transcribe.base.Transcriber`: a ``RealtimeTranscriber`` (tier ``realtime``),
a ``DeferredTranscriber`` (tier ``deferred``: records per-track WAVs, decodes after the
meeting) or a ``RefiningTranscriber`` (realtime + deferred pass that replaces it). It raises
``UnsupportedTranscriptionOptions`` (``.code`` ``task_not_supported`` /
``language_not_supported`` / ``model_not_found``) when the model cannot serve the bot; the
control plane checks the same at creation with
``agent.contracts.whisper_models.check_model_supports(model, language, task)`` (no whisper
import) and answers 422. The direct constructors take a loaded ``WhisperEngine``
(``WhisperEngine.load(resolve_model(name, models_dir))``, blocking) when several bots or tests
share one model.

Feed::

    await transcriber.feed(frame)             # agent.capture.audio.AudioFrame, 16 kHz mono
                                              # int16, any block size, per track; waits when
                                              # the bounded queue is full (backpressure),
                                              # never drops
    transcriber.speaker_activity(activity)    # agent.capture.audio.SpeakerActivity (mixed tracks)

Each ``track_id`` gets its own VAD and segmenter, so overlapping speakers on separate tracks
become separate segments. A segment's speaker is, in order: ``track_speakers[track_id]``, the
frames' ``speaker``, else, in the realtime tier, the participant who held the floor longest
during it (the last to light up among those lit: a backchannel is its speaker's) or, with
``options.tracks_per_participant`` (Meet), the name the indicators tie to its track
(``speakers.TrackNames``); the deferred tier takes whose intervals overlap it most.
Endpointing runs on frame timestamps (a gap in a track's frames counts as silence).

Receive (run concurrently with feeding, until it ends)::

    async for segment in transcriber.segments():   # agent.contracts.link.Segment
        ...   # completed=False: partial → SSE only, replaced later by the same id;
              #   an empty text clears that id's partials (no final follows)
              # completed=True: final (never empty) → SSE + link TranscriptSegmentEvent

Segments carry ``start``/``end`` (s since join), absolute times, ``speaker``, ``language``
(detected per speaker when the bot's language is None, then kept stable; for translate it is
the source language), ``tier``. Ids: ``{id_prefix}-rt-{track}-{utterance}`` (realtime),
``{id_prefix}-df-{track}-{utterance}[.{part}]`` (deferred; ``.part`` when a mixed-track
utterance is split between speakers).

Close::

    await transcriber.close()   # flush: ends open utterances, decodes every pending final,
                                # (deferred/refine: runs the full pass), then segments() ends
    await transcriber.abort()   # on errors: cancel and await the tasks, drop pending work

Refine mode: after ``segments()`` ended, ``RefiningTranscriber.replacements`` maps each
realtime final id → deferred ids replacing it (``[]``: delete it); see
``agent.transcribe.deferred.replacement_map``. The deferred tier alone is also callable on
files: ``await transcribe_meeting(engine, [TrackAudio(track_id, start_epoch, path,
speaker)], join_time=..., language=..., task=..., activities=[...]) -> list[Segment]``
(WAVs, or any recording ffmpeg decodes).

Metrics: ``transcriber.metrics`` (``TranscribeMetrics``; ``.snapshot()`` is a flat dict):
frames_in, audio_seconds_in, utterances, finals, partials, partials_skipped, decodes_<kind>
(final / speculative / partial / deferred), decode_seconds, speculation_hits/misses,
dropped_<rule> (no_speech, low_confidence, repetition, known_hallucination, empty),
partial_interval_s (current) and partial_degradations (times it grew because the CPU fell
behind), final_delays_s (recent speech-end → final delays).

Modules: ``models`` (registry → local CTranslate2 dir; joins and sha256-checks ``base``),
``engine`` (one model, one decode at a time), ``vad`` (Silero / energy), ``segmenter``
(utterance cutting), ``filters`` (hallucination and loop guards), ``speakers`` (timeline),
``realtime`` (the realtime tier, composing ``ingest`` — frames, VAD, segmenter; ``decoding``
— the one-at-a-time decode scheduler, over ``jobs`` — the utterances and which decode goes
next, ``passes`` — each kind of decode's options and counts, and ``routing`` — which model
and language decode an utterance; ``pace`` — the partial rate; ``commit`` — results into
segments; ``utterance``; ``languages`` — per-speaker language memory), ``deferred``, ``audio_io``
(per-track WAVs), ``normalize`` (WER normaliser used by tests and ``bench/transcription.py``),
``factory``, ``options``, ``metrics``, ``errors``.
"""
