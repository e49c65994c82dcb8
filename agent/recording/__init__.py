"""Meeting recording: capture to disk while active, encode (per piece and at stop), upload.

- :mod:`agent.recording.job`: what an encode is given (:class:`~agent.recording.job.EncodeJob`).
- :mod:`agent.recording.encode`: picks the encoder; ffmpeg argument lists and running them.
- :mod:`agent.recording.audio_encode`: a recording without a picture, encoded in-process.
- :mod:`agent.recording.recorder`: :class:`~agent.recording.recorder.MeetingRecorder`, one
  meeting's recording from start to its last file: the page's or the screen's.
- :mod:`agent.recording.page`: the page's recording (tapped audio tracks and view frames, in
  pieces) and the encode of its pieces.
- :mod:`agent.recording.screen_recording`: the screen's recording (the ffmpeg capture of
  :mod:`agent.recording.screen`, its pieces rewrapped).
- :mod:`agent.recording.pieces`: a long recording shipped piece by piece during the meeting.
- :mod:`agent.recording.publish`: a finished file uploaded and reported as an ``artifact``.
"""
