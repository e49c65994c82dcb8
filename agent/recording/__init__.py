"""Meeting recording: capture to disk while active, encode with ffmpeg at stop, upload.

- :mod:`agent.recording.encode`: ffmpeg argument lists per format and running them.
- :mod:`agent.recording.recorder`: :class:`~agent.recording.recorder.MeetingRecorder`, which
  taps the audio capture and screenshots the bot's view, then encodes and uploads.
"""
