"""testmeeting: a local meeting simulator with Google Meet, Zoom and Teams skins."""
