#!/usr/bin/env bash
# The bot's sound server: PulseAudio in the foreground (systemd's ExecStart, or a child of
# `meetbot agent --display`), private to one bot: its socket is $XDG_RUNTIME_DIR/pulse/native,
# in a folder only the bot's user can open, so anonymous clients of that socket are the bot.
# No configuration files are read (-n); the devices are:
#   meeting    null sink (48 kHz): Chromium plays the meeting into it; its monitor
#              `meeting.monitor` is what a recording and the silence check hear;
#   bot_voice  null sink (48 kHz): whatever should come out of the bot's microphone;
#   bot_mic    virtual source, the monitor of bot_voice: the bot's microphone.
# pulseaudio-ready.sh makes meeting and bot_mic the defaults before Chromium starts.
# Usage: XDG_RUNTIME_DIR=/run/meetbot-pulse pulseaudio.sh
set -euo pipefail

: "${XDG_RUNTIME_DIR:?set XDG_RUNTIME_DIR to a private runtime folder}"
mkdir -p "$XDG_RUNTIME_DIR/pulse"
chmod 0700 "$XDG_RUNTIME_DIR" "$XDG_RUNTIME_DIR/pulse"
exec pulseaudio --daemonize=no --exit-idle-time=-1 --disallow-exit --use-pid-file=no -n \
  --log-target=stderr \
  --load="module-native-protocol-unix auth-anonymous=1 socket=$XDG_RUNTIME_DIR/pulse/native" \
  --load="module-null-sink sink_name=meeting rate=48000 sink_properties=device.description=Meeting" \
  --load="module-null-sink sink_name=bot_voice rate=48000 sink_properties=device.description=BotVoice" \
  --load="module-remap-source master=bot_voice.monitor source_name=bot_mic source_properties=device.description=BotMicrophone" \
  --load=module-always-sink
