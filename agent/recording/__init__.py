"""Meeting recording: capture to disk while active, encode (per piece and at stop), upload.

- :mod:`agent.recording.job`: what an encode is given (:class:`~agent.recording.job.EncodeJob`).
- :mod:`agent.recording.encode`: picks the encoder; ffmpeg argument lists and running them.
- :mod:`agent.recording.audio_encode`: a recording without a picture, encoded in-process.
- :mod:`agent.recording.recorder`: :class:`~agent.recording.recorder.MeetingRecorder`, which
  taps the audio capture and screenshots the bot's view, then encodes and uploads.
"""
