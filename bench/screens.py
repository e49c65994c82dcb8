"""How fast the bot knows where it stands, on every variant of every testmeeting skin (issue 33).

Runs the real agent (``agent.meeting.bot.Bot`` in this process, Chromium through Playwright, no
control plane) against the simulator, one room per case, and prints one JSON line per run and one
per class with the seconds from the event to the bot's ``stopping`` and to its final status:

- ``everyone_left``: every skin and variant the bot can be in; Alice speaks and leaves, Bob
  leaves later. Event: Bob's departure. Goal: ``completed/left_alone`` within
  ``left_alone_timeout_seconds`` + 5 s (here 10 s × ``--scale``, so 0.5 s + 5 s).
- ``end_screen``: the host ends the meeting or removes the bot, on the plain skins and the
  variants whose end screens differ (``end_dialog``, ``post_call_pages``). Event: the page shows
  the screen. Goal: ``meeting_ended`` / ``removed_by_host`` within 5 s.
- ``refused``: screens that refuse the bot before it is in (sign-in, captcha, anti-bot wall,
  invalid id, Meet's denial of a joiner it judged risky after a lobby). Event: the page shows the
  screen. Goal: within 5 s.
- ``held``: Teams holds a detected bot in the lobby whatever the meeting's settings
  (``bot_approval``) and nobody approves it. Event: the page shows the lobby. Goal: the bot
  reports ``awaiting_admission`` within 5 s and ends ``admission_timeout`` when its admission
  timeout (30 s × ``--scale``) runs out, not later.
- ``passcode``: a passcode prompt answered from the link's ``pwd=`` / ``p=``. Event: the page
  shows the prompt; the bot must reach ``active`` (the seconds are prompt → ``active``).

Usage: ``python -m bench.screens [--classes everyone_left,end_screen,refused,held,passcode]
[--scale 0.05]``. Each run takes 5–10 s of a shared 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.contracts.bot_config import BotConfig, BotSettings
from agent.process.settings import AgentSettings
from agent.wiring import assemble
from testmeeting import TestMeetingServer, parse_scenario
from testmeeting.scenario import VARIANTS

PASSCODE = "314159"
LEFT_ALONE_S = 10.0
GOAL_S = 5.0
NEVER_IN = {
    "cant_join",
    "sign_in",
    "invalid_id_modal",
    "bot_wall",
    "sign_in_redirect",
    "captcha",
    "bot_blocked",
}
REFUSED_SCREEN = {
    "cant_join": "cantjoin",
    "sign_in": "signin",
    "invalid_id_modal": "invalid",
    "bot_wall": "botwall",
    "sign_in_redirect": "signin",
    "captcha": "captcha",
    "bot_blocked": "botblocked",
}
# Walls met in the lobby: (platform, variant) → (scenario, screen that starts the clock, reason).
LOBBY_WALLS = {
    ("google_meet", "risky_queue"): (
        "lobby: true\nadmission: {decision: deny, after_s: 1.0}\nparticipants: [{name: Alice}]\n",
        "denied",
        "join_refused_by_platform",
    ),
}
HELD = {
    ("teams", "bot_approval"): (
        "admission: {decision: ignore}\nparticipants: [{name: Alice}]\n",
        "lobby",
        "admission_timeout",
    ),
}
ADMISSION_S = 30.0
PROMPTS = {
    ("zoom", "passcode_beside_name"): "prejoin",
    ("zoom", "passcode_prompt"): "passcode",
    ("teams", "id_passcode_form"): "idform",
}
TWO_LEAVE = (
    "participants: [{name: Alice, leave_at: 2.5, utterances: [{at: 0.5, text: 'Alice here'}]},"
    " {name: Bob, leave_at: 4.0}]\n"
)


@dataclass
class Case:
    """One run: its class, skin, variant, scenario, and which timeline event starts the clock."""

    kind: str
    platform: str
    variant: str | None
    scenario: str
    event: tuple[str, str]  # (timeline type, text or name)
    want: str  # the status reason expected (or "active" for passcode runs)


@dataclass
class Seen:
    """Status changes the bot reported, with their wall-clock times."""

    statuses: list[tuple[str, str | None, float]] = field(default_factory=list)

    def observe(self, name: str, payload: dict[str, Any]) -> None:
        if name == "bot_status":
            self.statuses.append((payload["status"], payload.get("status_reason"), time.time()))

    def first(self, status: str) -> float | None:
        return next((t for s, _, t in self.statuses if s == status), None)


def cases(classes: set[str]) -> list[Case]:
    """Every case of the wanted classes, over every skin and variant."""
    found: list[Case] = []
    for platform, variants in sorted(VARIANTS.items()):
        p = platform.value
        if "everyone_left" in classes:
            for variant in [None, *sorted(variants - NEVER_IN)]:
                found.append(
                    Case("everyone_left", p, variant, TWO_LEAVE, ("left", "Bob"), "left_alone")
                )
        if "end_screen" in classes:
            for variant in [None, *sorted(variants & {"end_dialog", "post_call_pages"})]:
                alice = "participants: [{name: Alice}]\n"
                found.append(
                    Case(
                        "end_screen",
                        p,
                        variant,
                        alice + "end_at: 1.5\n",
                        ("page_screen", "ended"),
                        "meeting_ended",
                    )
                )
                if variant != "end_dialog":
                    found.append(
                        Case(
                            "end_screen",
                            p,
                            variant,
                            alice + "removals: [{at: 1.5}]\n",
                            ("page_screen", "removed"),
                            "removed_by_host",
                        )
                    )
        if "refused" in classes:
            for variant in sorted(variants & NEVER_IN):
                reason = {
                    "sign_in": "login_required",
                    "sign_in_redirect": "login_required",
                    "invalid_id_modal": "meeting_not_found",
                    "bot_wall": "zoom_requires_rtms",
                    "bot_blocked": "bots_blocked_by_policy",
                }.get(variant, "join_refused_by_platform")
                screen = ("page_screen", REFUSED_SCREEN[variant])
                found.append(Case("refused", p, variant, "", screen, reason))
            for (pp, variant), (scenario, shown, reason) in sorted(LOBBY_WALLS.items()):
                if pp == p:
                    found.append(
                        Case("refused", p, variant, scenario, ("page_screen", shown), reason)
                    )
        if "held" in classes:
            for (pp, variant), (scenario, shown, reason) in sorted(HELD.items()):
                if pp == p:
                    found.append(Case("held", p, variant, scenario, ("page_screen", shown), reason))
        if "passcode" in classes:
            for (pp, variant), prompt in sorted(PROMPTS.items()):
                if pp == p:
                    found.append(
                        Case("passcode", p, variant, "", ("page_screen", prompt), "active")
                    )
    return found


_IDS = itertools.count(1)


def room_id(platform: str) -> str:
    n = next(_IDS)
    if platform == "google_meet":
        letters = "".join(chr(ord("a") + (n // 26**k) % 26) for k in range(3))
        return f"{letters}-bnch-{letters}"
    return f"{830000000 + n}" if platform == "zoom" else f"{4300000000 + n}"


async def run_case(
    server: TestMeetingServer, case: Case, scale: float, data_dir: Path
) -> dict[str, Any]:
    """Run one case to the bot's final status (or ``active`` for passcode runs)."""
    rid = room_id(case.platform)
    passcode = PASSCODE if case.platform != "google_meet" else None
    variant = f"variant: {case.variant}\n" if case.variant else ""
    pass_line = f"passcode: '{passcode}'\n" if passcode else ""
    lobby = "" if "lobby:" in case.scenario else "lobby: false\n"
    room = await server.create_room(
        parse_scenario(
            f"platform: {case.platform}\nmeeting_id: '{rid}'\n{pass_line}{variant}"
            f"{lobby}{case.scenario}"
        )
    )
    seen = Seen()
    config = BotConfig(
        bot_id=uuid.uuid4(),
        meeting_id=1,
        platform=case.platform,
        meeting_url=server.meeting_url(case.platform, rid, passcode),
        native_meeting_id=rid,
        settings=BotSettings(
            bot_name="Notetaker",
            admission_timeout_seconds=int(ADMISSION_S),
            startup_alone_timeout_seconds=60,
            left_alone_timeout_seconds=int(LEFT_ALONE_S),
            transcribe_enabled=False,
            recording_enabled=False,
        ),
    )
    settings = AgentSettings(
        extra_browser_args=server.browser_args(),
        ignore_https_errors=True,
        data_dir=data_dir,
        timeout_scale=scale,
        poll_interval_seconds=0.25,
        join_timeout_seconds=20.0,
        models_dir=data_dir / "models",
    )
    bot = assemble(config, settings, observer=seen.observe)
    task = asyncio.create_task(bot.run())
    deadline = time.monotonic() + 60
    while not task.done() and time.monotonic() < deadline:
        if case.want == "active" and seen.first("active") is not None:
            break
        await asyncio.sleep(0.1)
    bot.request_stop()
    await asyncio.wait_for(task, 30)
    kind, name = case.event
    event_at = next(
        (e.t for e in room.timeline() if e.type == kind and (e.text == name or e.name == name)),
        None,
    )
    final = next(((s, r, t) for s, r, t in seen.statuses if s in ("completed", "failed")), None)
    stopping = seen.first("stopping")
    result: dict[str, Any] = {
        "class": case.kind,
        "platform": case.platform,
        "variant": case.variant or "plain",
        "want": case.want,
    }
    if case.want == "active":
        active = seen.first("active")
        result["outcome"] = "active" if active is not None else (final[1] if final else None)
        if active is not None and event_at is not None:
            result["to_active_s"] = round(active - event_at, 2)
        return result
    result["outcome"] = f"{final[0]}/{final[1]}" if final else None
    waiting = seen.first("awaiting_admission")
    if case.kind == "held" and event_at is not None and waiting is not None:
        result["to_lobby_s"] = round(waiting - event_at, 2)
    if event_at is not None and stopping is not None:
        result["to_stopping_s"] = round(stopping - event_at, 2)
    if event_at is not None and final is not None:
        result["to_final_s"] = round(final[2] - event_at, 2)
    return result


def summary(kind: str, rows: list[dict[str, Any]], scale: float) -> dict[str, Any]:
    """p50 / max per class against its goal."""
    key = {"passcode": "to_active_s", "held": "to_lobby_s"}.get(kind, "to_stopping_s")
    values = [r[key] for r in rows if key in r]
    right = sum(1 for r in rows if r["outcome"] and str(r["outcome"]).endswith(r["want"]))
    goal = (LEFT_ALONE_S * scale if kind == "everyone_left" else 0.0) + GOAL_S
    out: dict[str, Any] = {
        "class": kind,
        "runs": len(rows),
        "right_outcome": right,
        "goal_s": goal,
    }
    if kind == "held":
        # The admission timeout as the bot runs it; the final status is due then, not later.
        out["admission_timeout_s"] = ADMISSION_S * scale
        stops = [r["to_stopping_s"] for r in rows if "to_stopping_s" in r]
        if stops:
            out.update(p50_stopping_s=statistics.median(stops), max_stopping_s=max(stops))
    if values:
        out.update(p50_s=round(statistics.median(values), 2), max_s=round(max(values), 2))
        finals = [r["to_final_s"] for r in rows if "to_final_s" in r]
        if finals:
            out.update(p50_final_s=round(statistics.median(finals), 2), max_final_s=max(finals))
    return out


async def main(classes: set[str], scale: float) -> None:
    """Run every case of ``classes`` one after another and print the lines."""
    by_class: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-screens-") as tmp:
        async with TestMeetingServer() as server:
            for case in cases(classes):
                row = await run_case(server, case, scale, Path(tmp))
                row["load1"] = round(os.getloadavg()[0], 2)
                print(json.dumps({"bench": "screens", **row}), flush=True)
                by_class.setdefault(case.kind, []).append(row)
    for kind, rows in by_class.items():
        print(json.dumps({"bench": "screens", "summary": summary(kind, rows, scale)}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.screens", description=__doc__)
    parser.add_argument("--classes", default="everyone_left,end_screen,refused,held,passcode")
    parser.add_argument("--scale", type=float, default=0.05, help="timeout scale (tests' 0.05)")
    args = parser.parse_args()
    asyncio.run(main(set(args.classes.split(",")), args.scale))
