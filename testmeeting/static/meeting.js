// testmeeting page runtime, shared by the three skins.
//
// The skin HTML holds one <template data-tm-screen="…"> per screen and <template
// data-tm-part="…"> for repeated parts; only the current screen is in the DOM. Elements are
// wired through data-tm-* attributes (simulator-only; the real clients have none of them).
//
// Media: the page plays the remote side of a WebRTC loopback itself. Speech PCM from the
// room socket is played into MediaStreamAudioDestinationNodes whose tracks a sender
// RTCPeerConnection offers to a receiver RTCPeerConnection; the receiver's `track` events
// are the remote audio tracks a meeting client gets (one per simulated speaker on Google
// Meet, one mixed track on Zoom and Teams), each played by an <audio autoplay> element.
// What the page itself sends (getUserMedia mic/camera, getDisplayMedia screen) is captured
// here and uploaded: mic as 16 kHz int16 PCM, camera/screen as PNG frames.
(() => {
  "use strict";

  const CFG = JSON.parse(document.getElementById("tm-config").textContent);
  const MIXED = CFG.platform !== "google_meet";
  const UPLOAD = { mic: 1, camera: 2, screen: 3 };
  const FRAME_INTERVAL_MS = CFG.frame_interval_ms || 1000; // scenario frame_interval_ms

  const state = {
    screen: null,
    ws: null,
    selfId: null,
    name: "",
    mic: true,
    camera: true,
    hand: false,
    sharing: false,
    participants: [],
    chat: [],
    panel: null,
    speaking: new Map(), // participant id -> number of clips playing
    lastSpeaker: null,
    tiles: new Map(), // participant id -> tile element
    over: false,
  };
  const media = {
    ctx: null,
    pcSend: null,
    pcRecv: null,
    dests: new Map(), // slot -> MediaStreamAudioDestinationNode
    streams: new Map(), // participant id -> playback state of their relayed microphone
    clipParts: new Map(), // utterance ("clip" of its header) -> its parts received so far
    chain: Promise.resolve(),
    micStream: null,
    capCtx: null,
    camStream: null,
    camTimer: null,
    screenStream: null,
    screenTimer: null,
  };

  const root = document.getElementById("tm-root");
  // A skin variant (scenario `variant`) may have its own flow (data-tm-flow-<variant>) and its
  // own templates (data-tm-variant="<variant> …"), which win over the plain ones.
  const flow = (
    (CFG.variant && document.body.getAttribute(`data-tm-flow-${CFG.variant}`)) ||
    document.body.dataset.tmFlow ||
    "prejoin"
  ).split(",");

  // ---- helpers ---------------------------------------------------------------------------

  const template = (selector) => document.querySelector(`template${selector}`);
  const fill = (text, values) => text.replace(/\{(\w+)\}/g, (_, key) => values[key] ?? "");

  function instantiate(part, values) {
    const tpl = template(`[data-tm-part="${part}"]`);
    const el = tpl.content.firstElementChild.cloneNode(true);
    applyAttrs(el, tpl.dataset.tmAttrs, values);
    return el;
  }

  function applyAttrs(el, json, values) {
    if (!json) return;
    for (const [attr, value] of Object.entries(JSON.parse(json))) {
      el.setAttribute(attr, fill(value, values));
    }
  }

  function setField(scope, field, text) {
    for (const el of scope.querySelectorAll(`[data-tm-field="${field}"]`)) el.textContent = text;
  }

  function screenTemplate(screen) {
    const own = CFG.variant && template(`[data-tm-screen="${screen}"][data-tm-variant~="${CFG.variant}"]`);
    return own || template(`[data-tm-screen="${screen}"]:not([data-tm-variant])`);
  }

  // Tell the room which screen the page shows (ground truth for "time from screen to status").
  function reportShown(screen) {
    const url = `/_tm/shown?platform=${encodeURIComponent(CFG.platform)}` +
      `&meeting_id=${encodeURIComponent(CFG.meeting_id || "")}&screen=${encodeURIComponent(screen)}`;
    fetch(url, { method: "POST" }).catch(() => {});
  }

  function show(screen) {
    const tpl = screenTemplate(screen) || screenTemplate("ended");
    reportShown(screen);
    if (tpl.hasAttribute("data-tm-overlay") && state.screen === "meeting") {
      // A dialog over the meeting (the meeting stays visible beneath it).
      root.appendChild(tpl.content.cloneNode(true));
      state.screen = screen;
      return;
    }
    root.replaceChildren(tpl.content.cloneNode(true));
    state.screen = screen;
    state.panel = null;
    state.tiles.clear();
    if (tpl.dataset.tmTitle) document.title = fill(tpl.dataset.tmTitle, { id: CFG.meeting_id });
    setField(root, "title", CFG.title);
    setField(root, "meeting-id", CFG.meeting_id || "");
    setField(root, "self-name", state.name);
    for (const el of root.querySelectorAll("[data-tm-join-text]")) {
      el.textContent = CFG.lobby ? el.dataset.tmLobbyText : el.dataset.tmOpenText;
    }
    const nameInput = root.querySelector("[data-tm-name]");
    if (nameInput) {
      nameInput.addEventListener("input", syncJoinEnabled);
      syncJoinEnabled();
    }
    syncToggles();
    if (screen === "meeting") renderMeeting();
  }

  function syncJoinEnabled() {
    const input = root.querySelector("[data-tm-name]");
    for (const button of root.querySelectorAll('[data-tm-action="join"][data-tm-needs-name]')) {
      const empty = !input || !input.value.trim();
      button.disabled = empty;
      if (empty) button.setAttribute("aria-disabled", "true");
      else button.removeAttribute("aria-disabled");
    }
  }

  // A toggle shows the label of the action it would perform: data-tm-on-label while the
  // device is on ("Turn off microphone"), data-tm-off-label while it is off.
  function syncToggles() {
    const values = { mic: state.mic, camera: state.camera, hand: state.hand, share: state.sharing };
    for (const el of document.querySelectorAll("[data-tm-toggle]")) {
      const on = values[el.dataset.tmToggle];
      const label = on ? el.dataset.tmOnLabel : el.dataset.tmOffLabel;
      if (label !== undefined) el.setAttribute("aria-label", label);
      const text = on ? el.dataset.tmOnText : el.dataset.tmOffText;
      if (text !== undefined) {
        const target = el.querySelector("[data-tm-toggle-text]") || el;
        target.textContent = text;
      }
      if (el.getAttribute("role") === "switch") el.setAttribute("aria-checked", String(on));
      else if (el.hasAttribute("aria-pressed")) el.setAttribute("aria-pressed", String(on));
      if (el.dataset.tmToggle === "mic" || el.dataset.tmToggle === "camera") el.dataset.isMuted = String(!on);
    }
  }

  // ---- the meeting screen ----------------------------------------------------------------

  function renderMeeting() {
    renderTiles();
    renderPanel();
    const count = String(inMeeting().length);
    for (const el of root.querySelectorAll("[data-tm-count-label]")) {
      el.setAttribute("aria-label", fill(el.dataset.tmCountLabel, { count }));
    }
  }

  function inMeeting() {
    return state.participants.filter((p) => p.state === "in_meeting");
  }

  function renderTiles() {
    const host = root.querySelector("[data-tm-tiles]");
    if (!host) return;
    const present = new Set();
    for (const p of inMeeting()) {
      present.add(p.id);
      let tile = state.tiles.get(p.id);
      if (!tile) {
        const values = { id: p.id, name: p.name };
        tile = instantiate("tile", values);
        if (p.id === state.selfId) {
          applyAttrs(tile, template('[data-tm-part="tile"]').dataset.tmSelfAttrs, values);
        }
        setField(tile, "name", p.name);
        host.appendChild(tile);
        state.tiles.set(p.id, tile);
      }
      for (const hand of tile.querySelectorAll('[data-tm-field="hand"]')) hand.hidden = !p.hand_raised;
      for (const mic of tile.querySelectorAll("[data-tm-mic-off]")) mic.hidden = p.mic_on;
      paintSpeaking(p.id);
    }
    // A variant may leave a departed participant's tile behind (data-tm-keep-tiles-<variant>).
    const keep = CFG.variant && document.body.hasAttribute(`data-tm-keep-tiles-${CFG.variant}`);
    for (const [id, tile] of state.tiles) {
      if (!present.has(id) && !keep) {
        tile.remove();
        state.tiles.delete(id);
      }
    }
  }

  function paintSpeaking(id) {
    const tile = state.tiles.get(id);
    const speaking = (state.speaking.get(id) || 0) > 0;
    if (tile) {
      const tpl = template('[data-tm-part="tile"]');
      const target = tile.querySelector("[data-tm-speaking-target]") || tile;
      const on = (tpl.dataset.tmSpeakingClass || "").split(" ").filter(Boolean);
      const off = (tpl.dataset.tmSilentClass || "").split(" ").filter(Boolean);
      for (const cls of on) target.classList.toggle(cls, speaking);
      for (const cls of off) target.classList.toggle(cls, !speaking);
      for (const el of tile.querySelectorAll("[data-audio-level]")) {
        el.setAttribute("data-audio-level", speaking ? "3" : "0");
      }
    }
    if (speaking) state.lastSpeaker = id;
    const active = root.querySelector("[data-tm-active-speaker]");
    if (active && state.lastSpeaker) {
      const person = state.participants.find((p) => p.id === state.lastSpeaker);
      if (person) setField(active, "name", person.name);
    }
  }

  function renderPanel() {
    const host = root.querySelector("[data-tm-panel-host]");
    if (!host) return;
    for (const button of root.querySelectorAll("[data-tm-panel-button]")) {
      const open = button.dataset.tmPanelButton === state.panel;
      if (button.hasAttribute("aria-pressed")) button.setAttribute("aria-pressed", String(open));
      if (button.hasAttribute("aria-expanded")) button.setAttribute("aria-expanded", String(open));
    }
    if (!state.panel) {
      host.replaceChildren();
      return;
    }
    let panel = host.querySelector(`[data-tm-panel="${state.panel}"]`);
    if (!panel) {
      panel = instantiate(`${state.panel}-panel`, {});
      panel.dataset.tmPanel = state.panel;
      host.replaceChildren(panel);
      const input = panel.querySelector("[data-tm-chat-input]");
      if (input) input.addEventListener("keydown", onChatKey);
    }
    if (state.panel === "people") renderPeople(panel);
    else renderChat(panel);
  }

  function renderPeople(panel) {
    const list = panel.querySelector("[data-tm-people-list]");
    const people = inMeeting();
    setField(panel, "count", String(people.length));
    list.replaceChildren(
      ...people.map((p) => {
        const item = instantiate("person", { id: p.id, name: p.name });
        setField(item, "name", p.name);
        for (const hand of item.querySelectorAll('[data-tm-field="hand"]')) hand.hidden = !p.hand_raised;
        for (const mic of item.querySelectorAll("[data-tm-mic-off]")) mic.hidden = p.mic_on;
        for (const you of item.querySelectorAll("[data-tm-self-only]")) you.hidden = p.id !== state.selfId;
        return item;
      }),
    );
  }

  function renderChat(panel) {
    const list = panel.querySelector("[data-tm-chat-list]");
    list.replaceChildren(
      ...state.chat.map((m) => {
        const item = instantiate("message", { id: m.id, name: m.sender });
        setField(item, "sender", m.sender_id === state.selfId ? "You" : m.sender);
        setField(item, "text", m.text);
        setField(item, "time", new Date(m.t * 1000).toLocaleTimeString([], { hour: "numeric", minute: "2-digit" }));
        return item;
      }),
    );
  }

  function onChatKey(event) {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      sendChat();
    }
  }

  function sendChat() {
    const input = root.querySelector("[data-tm-chat-input]");
    if (!input) return;
    const text = ("value" in input ? input.value : input.textContent).trim();
    if (!text) return;
    send({ type: "chat", text });
    if ("value" in input) input.value = "";
    else input.textContent = "";
  }

  // ---- actions -----------------------------------------------------------------------------

  document.addEventListener("click", (event) => {
    const el = event.target.closest("[data-tm-action], [data-tm-toggle]");
    if (!el || el.disabled || el.getAttribute("aria-disabled") === "true") return;
    const action = el.dataset.tmAction || `toggle-${el.dataset.tmToggle}`;
    switch (action) {
      case "next":
        if (checkExpected()) show(flow[flow.indexOf(state.screen) + 1] || "prejoin");
        break;
      case "join":
        join();
        break;
      case "toggle-mic":
        setMic(!state.mic);
        break;
      case "toggle-camera":
        setCamera(!state.camera);
        break;
      case "toggle-hand":
      case "hand":
        state.hand = !state.hand;
        syncToggles();
        send({ type: "hand", raised: state.hand });
        break;
      case "toggle-share":
      case "share":
        setSharing(!state.sharing);
        break;
      case "people":
      case "chat":
        state.panel = state.panel === action ? null : action;
        renderPanel();
        break;
      case "close-panel":
        state.panel = null;
        renderPanel();
        break;
      case "send":
        sendChat();
        break;
      case "leave":
        if (el.hasAttribute("data-tm-confirm")) {
          const modalHost = root.querySelector("[data-tm-modal-host]") || root;
          modalHost.appendChild(instantiate("leave-confirm", {}));
        } else {
          leave();
        }
        break;
      case "leave-confirm":
        leave();
        break;
      case "leave-cancel":
        el.closest("[data-tm-modal]")?.remove();
        break;
      case "consent":
        el.closest("[data-tm-modal]")?.remove();
        state.screen = "meeting";
        reportShown("meeting");
        renderMeeting();
        break;
      case "home":
        show(state.over ? state.screen : flow[0]);
        break;
      default:
        break;
    }
  });

  function send(message) {
    if (state.ws && state.ws.readyState === WebSocket.OPEN) state.ws.send(JSON.stringify(message));
  }

  function upload(kind, payload, capturedAt) {
    if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return;
    const body = new Uint8Array(9 + payload.byteLength);
    const view = new DataView(body.buffer);
    view.setUint8(0, UPLOAD[kind]);
    view.setFloat64(1, capturedAt, true);
    body.set(new Uint8Array(payload), 9);
    state.ws.send(body);
  }

  // Inputs a form expects a value in (data-tm-expect="meeting_id" | "passcode"): all must
  // match the room's, else the form shows its error (data-tm-error) and stays.
  function checkExpected() {
    for (const input of root.querySelectorAll("[data-tm-expect]")) {
      const want = String(CFG[input.dataset.tmExpect] || "");
      if (input.value.trim() !== want) {
        for (const el of root.querySelectorAll("[data-tm-error]")) el.hidden = false;
        return false;
      }
    }
    return true;
  }

  function join() {
    const input = root.querySelector("[data-tm-name]");
    if (input) state.name = input.value.trim();
    if (!state.name || !checkExpected()) return;
    // Variant flows may put a screen after the join click (a passcode prompt, an error modal).
    const next = flow[flow.indexOf(state.screen) + 1];
    if (next) {
      show(next);
      return;
    }
    // The click is the user gesture that lets these audio contexts run.
    ensureLoopback();
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${CFG.ws}`);
    ws.binaryType = "arraybuffer";
    state.ws = ws;
    ws.addEventListener("open", () => send({ type: "join", name: state.name, mic: state.mic, camera: state.camera }));
    ws.addEventListener("message", (event) => {
      if (typeof event.data === "string") onMessage(JSON.parse(event.data));
      else onSpeech(event.data);
    });
    if (state.mic) startMic();
    if (state.camera) startCamera();
  }

  function onMessage(message) {
    switch (message.type) {
      case "joined":
        state.selfId = message.participant_id;
        ensureSlots(message.audio_slots);
        break;
      case "audio_slots":
        ensureSlots(message.audio_slots);
        break;
      case "lobby":
        show("lobby");
        break;
      case "admitted":
        show("meeting");
        // A variant may put a notice over the meeting that holds its media back until accepted.
        if (screenTemplate("consent")) show("consent");
        break;
      case "participants": {
        state.participants = message.participants;
        const self = state.participants.find((p) => p.id === state.selfId);
        if (self && self.hand_raised !== state.hand) {
          state.hand = self.hand_raised;
          syncToggles();
        }
        // The meeting stays beneath a notice (consent) and keeps up with who is there.
        if (state.screen === "meeting" || state.screen === "consent") renderMeeting();
        break;
      }
      case "chat":
        state.chat.push(message.message);
        if (state.screen === "meeting") renderPanel();
        break;
      case "chat_history":
        state.chat = message.messages;
        if (state.screen === "meeting") renderPanel();
        break;
      case "denied":
      case "removed":
      case "ended":
      case "no_answer":
        finish(message.type);
        break;
      case "not_found":
        finish("notfound");
        break;
      default:
        break;
    }
  }

  function leave() {
    send({ type: "leave" });
    finish("left");
  }

  function finish(screen) {
    state.over = true;
    stopLocalMedia();
    for (const audio of document.querySelectorAll("audio[data-tm-remote]")) {
      audio.srcObject = null;
      audio.remove();
    }
    if (media.pcSend) media.pcSend.close();
    if (media.pcRecv) media.pcRecv.close();
    if (media.ctx) media.ctx.close();
    for (const stream of media.streams.values()) clearTimeout(stream.quietTimer);
    if (state.ws) state.ws.close();
    show(screen);
  }

  // ---- remote audio: the WebRTC loopback ---------------------------------------------------

  function ensureLoopback() {
    if (media.pcSend) return;
    media.ctx = new AudioContext();
    media.ctx.resume();
    media.pcSend = new RTCPeerConnection();
    media.pcRecv = new RTCPeerConnection();
    media.pcSend.addEventListener("icecandidate", (e) => {
      if (e.candidate) media.pcRecv.addIceCandidate(e.candidate).catch(() => {});
    });
    media.pcRecv.addEventListener("icecandidate", (e) => {
      if (e.candidate) media.pcSend.addIceCandidate(e.candidate).catch(() => {});
    });
    media.pcRecv.addEventListener("track", (event) => {
      const audio = document.createElement("audio");
      audio.autoplay = true;
      audio.dataset.tmRemote = "";
      audio.srcObject = event.streams[0] || new MediaStream([event.track]);
      document.body.appendChild(audio);
      audio.play().catch(() => {});
    });
  }

  function slotKey(slot) {
    return MIXED ? "mix" : slot;
  }

  function ensureSlots(slots) {
    let added = false;
    for (const slot of (MIXED ? ["mix"] : slots)) {
      if (media.dests.has(slot)) continue;
      const dest = media.ctx.createMediaStreamDestination();
      media.pcSend.addTrack(dest.stream.getAudioTracks()[0], dest.stream);
      media.dests.set(slot, dest);
      added = true;
    }
    if (added) negotiate();
  }

  function negotiate() {
    media.chain = media.chain
      .then(async () => {
        const offer = await media.pcSend.createOffer();
        await media.pcSend.setLocalDescription(offer);
        await media.pcRecv.setRemoteDescription(offer);
        const answer = await media.pcRecv.createAnswer();
        await media.pcRecv.setLocalDescription(answer);
        await media.pcSend.setRemoteDescription(answer);
      })
      .catch((err) => console.error("testmeeting: negotiation failed", err));
    return media.chain;
  }

  function onSpeech(buffer) {
    if (!media.ctx || state.over || media.ctx.state === "closed") return;
    // A notice over the meeting holds its media back until accepted: speakers still light up
    // (the call goes on), but nothing plays.
    const held = state.screen === "consent";
    const headerLength = new DataView(buffer).getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, headerLength)));
    let pcm = new Int16Array(buffer.slice(4 + headerLength));
    if ((header.parts || 1) > 1) {
      // A long utterance comes in parts (testmeeting/room/streams.py SPEECH_PART_BYTES), in
      // order on this socket; it plays once the last one is here.
      const parts = media.clipParts.get(header.clip) || [];
      parts[header.part] = pcm;
      if (header.part < header.parts - 1) {
        media.clipParts.set(header.clip, parts);
        return;
      }
      media.clipParts.delete(header.clip);
      let samples = 0;
      for (let i = 0; i < header.parts; i++) {
        if (!parts[i]) return; // a part came before this page could play: drop the utterance
        samples += parts[i].length;
      }
      pcm = new Int16Array(samples);
      let at = 0;
      for (let i = 0; i < header.parts; i++) {
        pcm.set(parts[i], at);
        at += parts[i].length;
      }
    }
    if (!pcm.length) return;
    const clip = media.ctx.createBuffer(1, pcm.length, header.sample_rate);
    const samples = clip.getChannelData(0);
    for (let i = 0; i < pcm.length; i++) samples[i] = pcm[i] / 32768;
    let dest = media.dests.get(slotKey(header.slot));
    if (!dest) {
      ensureSlots([header.slot]);
      dest = media.dests.get(slotKey(header.slot));
    }
    const source = media.ctx.createBufferSource();
    source.buffer = clip;
    if (!held) source.connect(dest);
    if (header.type === "stream") {
      playStream(header.participant_id, source, samples);
      return;
    }
    // The speaker's indicator is lit while the clip's voice plays (header.voiced: seconds
    // from its start), plus a short hangover, as platforms light it from the audio level.
    const id = header.participant_id;
    const [voiceOn, voiceOff] = header.voiced || [0, clip.duration];
    let lit = false;
    const light = (on) => {
      if (on === lit || state.over) return;
      lit = on;
      state.speaking.set(id, Math.max(0, (state.speaking.get(id) || 0) + (on ? 1 : -1)));
      paintSpeaking(id);
    };
    const timers = [
      setTimeout(() => light(true), voiceOn * 1000),
      setTimeout(() => light(false), Math.min(voiceOff + INDICATOR_HANGOVER_S, clip.duration) * 1000),
    ];
    source.addEventListener("ended", () => {
      for (const timer of timers) clearTimeout(timer);
      light(false);
    });
    source.start();
  }

  const INDICATOR_HANGOVER_S = 0.3;

  // Another browser's microphone arrives in 100 ms blocks: play them back to back behind a
  // small jitter buffer, and light the speaker while the blocks are loud.
  const STREAM_BUFFER_S = 0.08;
  const STREAM_MAX_LAG_S = 0.5;
  const STREAM_LOUD = 0.02;
  function playStream(id, source, samples) {
    const stream = media.streams.get(id) || { next: 0, quietTimer: null, loud: false };
    media.streams.set(id, stream);
    const now = media.ctx.currentTime;
    if (stream.next < now + STREAM_BUFFER_S / 2 || stream.next > now + STREAM_MAX_LAG_S) {
      stream.next = now + STREAM_BUFFER_S;
    }
    source.start(stream.next);
    stream.next += source.buffer.duration;
    let peak = 0;
    for (let i = 0; i < samples.length; i++) peak = Math.max(peak, Math.abs(samples[i]));
    if (peak < STREAM_LOUD) return;
    if (!stream.loud) {
      stream.loud = true;
      state.speaking.set(id, (state.speaking.get(id) || 0) + 1);
      paintSpeaking(id);
    }
    clearTimeout(stream.quietTimer);
    stream.quietTimer = setTimeout(() => {
      stream.loud = false;
      state.speaking.set(id, Math.max(0, (state.speaking.get(id) || 1) - 1));
      paintSpeaking(id);
    }, (stream.next - now) * 1000 + 300);
  }

  // ---- what the page sends ------------------------------------------------------------------

  async function startMic() {
    if (media.micStream) return;
    try {
      media.micStream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (err) {
      setMic(false);
      return;
    }
    const ctx = new AudioContext({ sampleRate: 16000 });
    media.capCtx = ctx;
    await ctx.audioWorklet.addModule(`${CFG.static}capture-worklet.js`);
    const node = new AudioWorkletNode(ctx, "tm-capture");
    node.port.onmessage = (event) => {
      if (!state.mic || state.over) return;
      const block = event.data;
      const pcm = new Int16Array(block.length);
      for (let i = 0; i < block.length; i++) pcm[i] = Math.max(-1, Math.min(1, block[i])) * 32767;
      upload("mic", pcm.buffer, Date.now() / 1000 - block.length / 16000);
    };
    ctx.createMediaStreamSource(media.micStream).connect(node);
    node.connect(ctx.destination);
    await ctx.resume();
  }

  function setMic(on) {
    state.mic = on;
    if (media.micStream) for (const track of media.micStream.getAudioTracks()) track.enabled = on;
    else if (on && state.ws) startMic();
    syncToggles();
    send({ type: "device", device: "mic", on });
  }

  async function startCamera() {
    if (media.camStream) return;
    try {
      media.camStream = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 360 } });
    } catch (err) {
      setCamera(false);
      return;
    }
    media.camTimer = grabFrames(media.camStream, "camera");
  }

  function setCamera(on) {
    state.camera = on;
    if (!on && media.camStream) {
      clearInterval(media.camTimer);
      for (const track of media.camStream.getTracks()) track.stop();
      media.camStream = null;
    } else if (on && state.ws) {
      startCamera();
    }
    syncToggles();
    send({ type: "device", device: "camera", on });
  }

  async function setSharing(on) {
    if (on) {
      try {
        media.screenStream = await navigator.mediaDevices.getDisplayMedia({ video: true, audio: false });
      } catch (err) {
        return;
      }
      media.screenStream.getVideoTracks()[0].addEventListener("ended", () => setSharing(false));
      media.screenTimer = grabFrames(media.screenStream, "screen");
    } else if (media.screenStream) {
      clearInterval(media.screenTimer);
      for (const track of media.screenStream.getTracks()) track.stop();
      media.screenStream = null;
    }
    state.sharing = on;
    syncToggles();
    send({ type: "device", device: "screen", on });
  }

  function grabFrames(stream, kind) {
    const video = document.createElement("video");
    video.muted = true;
    video.playsInline = true;
    video.srcObject = stream;
    video.play().catch(() => {});
    const canvas = document.createElement("canvas");
    // Frames the page presented from the stream (requestVideoFrameCallback), reported once per
    // interval as a frame rate (what bench/screen.py reads).
    let presented = 0;
    let since = performance.now();
    const count = () => {
      presented += 1;
      video.requestVideoFrameCallback(count);
    };
    if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(count);
    return setInterval(() => {
      const now = performance.now();
      if (!state.over) send({ type: "video_rate", device: kind, frames: presented, seconds: (now - since) / 1000 });
      presented = 0;
      since = now;
      if (!video.videoWidth || state.over) return;
      canvas.width = video.videoWidth;
      canvas.height = video.videoHeight;
      canvas.getContext("2d").drawImage(video, 0, 0);
      const capturedAt = Date.now() / 1000;
      canvas.toBlob((blob) => {
        if (blob) blob.arrayBuffer().then((bytes) => upload(kind, bytes, capturedAt));
      }, "image/png");
    }, FRAME_INTERVAL_MS);
  }

  function stopLocalMedia() {
    clearInterval(media.camTimer);
    clearInterval(media.screenTimer);
    for (const stream of [media.micStream, media.camStream, media.screenStream]) {
      if (stream) for (const track of stream.getTracks()) track.stop();
    }
    if (media.capCtx) media.capCtx.close();
  }

  // ---- start --------------------------------------------------------------------------------

  show(CFG.exists ? flow[0] : "notfound");
})();
