"""The meeting's media coming in: capture wired to transcription and recording.

``meeting_media`` composes the work the subpackages do: ``agent.capture`` (the page's PCM),
``agent.transcribe`` (speech to segments) and ``agent.recording`` (audio and screen files).
"""
