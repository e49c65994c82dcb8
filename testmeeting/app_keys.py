"""Typed keys of the simulator's shared application state."""

from __future__ import annotations

from aiohttp import web

from testmeeting.platforms import Platform
from testmeeting.room import Rooms
from testmeeting.settings import TestMeetingSettings

SETTINGS = web.AppKey("settings", TestMeetingSettings)
ROOMS = web.AppKey("rooms", Rooms)
SKINS = web.AppKey("skins", dict[Platform, str])
STATIC = web.AppKey("static", dict[str, bytes])
