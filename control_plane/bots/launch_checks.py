"""Every check of a bot's options that needs more than the request's schema (docs/api.md 2.3).

Run at creation, scheduling and PATCH, on the options in effect after the request (defaults and
stored values filled in), from the facts the agent itself uses (``agent.contracts``): the
languages and tasks of the transcription models (:mod:`control_plane.bots.transcription`) and
the capture combinations (:mod:`agent.contracts.capture_options`). A request that passes makes
no bot fail later for a reason the API could have known.
"""

from __future__ import annotations

from collections.abc import Collection

from agent.contracts.bot_config import BotSettings
from agent.contracts.capture_options import CaptureOptionsRefused, check_capture_options
from control_plane.bots.transcription import check_transcription
from control_plane.errors import Validation
from control_plane.settings import Settings


def check_bot_options(settings: Settings, bot: BotSettings, given: Collection[str]) -> None:
    """Refuse ``bot``'s options (the request set the fields ``given``) that cannot be served.

    Raises:
        Validation: 422 ``language_not_supported``, ``task_not_supported``, ``model_not_found``
            (see :func:`~control_plane.bots.transcription.check_transcription`),
            ``capture_needs_audio``, ``video_needs_recording`` or ``format_has_no_video``
            (see :mod:`agent.contracts.capture_options`); ``errors[0].loc`` names the field.
    """
    check_transcription(settings, bot, given)
    try:
        check_capture_options(bot, given)
    except CaptureOptionsRefused as exc:
        raise Validation.of_field(exc.field, str(exc), code=exc.code) from exc
