"""What the bot shows in the meeting: screen share, its guarded egress, media fetched by URL.

``screen_share`` (the share control's image, page or video), ``egress`` (the shared page's
checked forward proxy) and ``remote_media`` (images and video the API names by URL, fetched
under the SSRF rules). The bot's voice is ``agent.voice``.
"""
