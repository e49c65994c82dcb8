// meetbot in-page agent, installed with BrowserContext.add_init_script before any page script.
//
// 1. Capture: every remote audio track (RTCPeerConnection "track" events, and <audio>/<video>
//    elements) is fed through its own AudioWorklet in one AudioContext({sampleRate: 16000}), so
//    Chromium resamples to 16 kHz and downmixes to mono (channelCount 1, explicit). Blocks of
//    100 ms are converted to int16 and sent to Python through the exposed binding
//    __meetbotPcm([[trackId, startEpochMs, base64, samples], ...]) — base64 because an
//    ArrayBuffer crosses the binding as {} (findings.md §3); an empty string means that many
//    samples of digital silence. Every track's blocks share one call (blocks made within
//    COALESCE_MS of each other, so about ten calls a second in all), and at most
//    MAX_IN_FLIGHT calls wait for Python at a time: blocks made meanwhile go together in the
//    next call (issue 19: at 10 calls a second per track, a busy agent fell minutes behind and
//    Playwright's driver held every unanswered call). A batch that waited longer than
//    MAX_PENDING_MS loses its oldest blocks (counted in captureState().droppedBlocks). The
//    context resumes on the first trusted gesture in case the autoplay flag is missing.
// 2. Bot media: getUserMedia / getDisplayMedia / enumerateDevices are replaced so the bot's
//    microphone is a MediaStreamAudioDestinationNode (silent until Python plays into it), its
//    camera a canvas showing the avatar, its screen another canvas. These tracks are never
//    captured as meeting audio.
(() => {
  'use strict';
  if (window.__meetbot) return;

  const RATE = 16000;
  const BLOCK = 1600; // 100 ms
  const MAX_IN_FLIGHT = 2; // binding calls of audio waiting for Python
  const MAX_PENDING_MS = 60000; // audio kept in the page for an agent that does not answer
  let pending = []; // [trackId, startEpochMs, base64, samples] not yet sent
  let pendingSince = 0;
  let inFlight = 0;
  let droppedBlocks = 0;
  let pcmCalls = 0;
  let flushTimer = null;
  const COALESCE_MS = 20; // the tracks' blocks of one render quantum go in one call
  const ownTrackIds = new Set();
  const captured = new Map(); // track id -> {track, nodes, origin, blocks}
  let captureCtx = null;
  let workletReady = null;
  let mediaCtx = null;
  let mic = null;
  let camera = null;
  let screen = null;

  function call(name, ...args) {
    const fn = window[name];
    if (typeof fn !== 'function') return;
    try {
      const result = fn(...args);
      if (result && typeof result.catch === 'function') result.catch(() => {});
    } catch (err) {
      // The binding is gone while the page unloads; nothing to report to.
    }
  }

  // Sends what is pending unless MAX_IN_FLIGHT calls still wait; the answer to one sends the
  // next batch, so the calls follow Python's pace instead of the audio clock's.
  function flushPcm() {
    if (!pending.length || inFlight >= MAX_IN_FLIGHT) return;
    const fn = window.__meetbotPcm;
    if (typeof fn !== 'function') return;
    const batch = pending;
    pending = [];
    inFlight += 1;
    pcmCalls += 1;
    const done = () => {
      inFlight -= 1;
      flushPcm();
    };
    try {
      Promise.resolve(fn(batch)).then(done, done);
    } catch (err) {
      done(); // the binding is gone while the page unloads
    }
  }

  function queuePcm(trackId, start, data, samples) {
    if (!pending.length) pendingSince = start;
    pending.push([trackId, start, data, samples]);
    // Python has not answered for a minute: keep the newest minute of audio.
    while (pending.length > 1 && start - pendingSince > MAX_PENDING_MS) {
      pending.shift();
      droppedBlocks += 1;
      pendingSince = pending[0][1];
    }
    if (flushTimer === null) {
      flushTimer = setTimeout(() => {
        flushTimer = null;
        flushPcm();
      }, COALESCE_MS);
    }
  }

  const WORKLET = `
    class MeetbotPcm extends AudioWorkletProcessor {
      constructor() { super(); this.buf = new Float32Array(${BLOCK}); this.n = 0; }
      process(inputs) {
        const input = inputs[0];
        const ch = input && input[0];
        if (ch) {
          for (let i = 0; i < ch.length; i++) {
            this.buf[this.n++] = ch[i];
            if (this.n === ${BLOCK}) {
              this.port.postMessage(this.buf, [this.buf.buffer]);
              this.buf = new Float32Array(${BLOCK});
              this.n = 0;
            }
          }
        }
        return true;
      }
    }
    registerProcessor('meetbot-pcm', MeetbotPcm);`;

  function ensureCaptureContext() {
    if (captureCtx) return captureCtx;
    captureCtx = new AudioContext({ sampleRate: RATE });
    const url = URL.createObjectURL(new Blob([WORKLET], { type: 'application/javascript' }));
    workletReady = captureCtx.audioWorklet.addModule(url);
    const resume = () => {
      if (captureCtx.state !== 'running') captureCtx.resume().catch(() => {});
    };
    for (const type of ['pointerdown', 'keydown']) window.addEventListener(type, resume, true);
    resume();
    return captureCtx;
  }

  function toBase64(block) {
    const pcm = new Int16Array(block.length);
    for (let i = 0; i < block.length; i++) {
      const s = Math.max(-1, Math.min(1, block[i]));
      pcm[i] = s < 0 ? s * 0x8000 : s * 0x7fff;
    }
    const bytes = new Uint8Array(pcm.buffer);
    let binary = '';
    for (let i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(binary);
  }

  function captureTrack(track, origin) {
    if (!track || track.kind !== 'audio') return;
    if (ownTrackIds.has(track.id) || captured.has(track.id)) return;
    const ctx = ensureCaptureContext();
    const entry = { track, origin, nodes: [], blocks: 0 };
    captured.set(track.id, entry);
    workletReady.then(() => {
      if (track.readyState === 'ended') {
        captured.delete(track.id);
        return;
      }
      const source = ctx.createMediaStreamSource(new MediaStream([track]));
      const node = new AudioWorkletNode(ctx, 'meetbot-pcm', {
        numberOfInputs: 1,
        numberOfOutputs: 1,
        channelCount: 1,
        channelCountMode: 'explicit',
        channelInterpretation: 'speakers',
      });
      // A silent path to the destination keeps the graph pulled by the renderer.
      const silent = ctx.createGain();
      silent.gain.value = 0;
      source.connect(node);
      node.connect(silent);
      silent.connect(ctx.destination);
      node.port.onmessage = (event) => {
        const block = event.data;
        let peak = 0;
        for (let i = 0; i < block.length; i++) {
          const v = block[i] < 0 ? -block[i] : block[i];
          if (v > peak) peak = v;
        }
        entry.blocks += 1;
        const start = Date.now() - (block.length * 1000) / RATE;
        // Digital silence (an idle or muted track) goes as a sample count, not as data: the
        // transcriber still needs it to see an utterance end, but it need not be encoded.
        queuePcm(track.id, start, peak === 0 ? '' : toBase64(block), block.length);
      };
      entry.nodes = [source, node, silent];
      call('__meetbotTrack', track.id, 'added', origin);
    }).catch((err) => call('__meetbotTrack', track.id, 'error', String(err)));
    track.addEventListener('ended', () => {
      for (const n of entry.nodes) {
        try { n.disconnect(); } catch (err) { /* already disconnected */ }
      }
      captured.delete(track.id);
      call('__meetbotTrack', track.id, 'ended', origin);
    });
  }

  // Remote WebRTC tracks, as Vexa's and Attendee's bots hook them (platforms.md "Audio capture").
  const NativePeerConnection = window.RTCPeerConnection;
  if (NativePeerConnection) {
    const MeetbotPeerConnection = function (...args) {
      const pc = new NativePeerConnection(...args);
      pc.addEventListener('track', (event) => captureTrack(event.track, 'rtc'));
      return pc;
    };
    MeetbotPeerConnection.prototype = NativePeerConnection.prototype;
    Object.setPrototypeOf(MeetbotPeerConnection, NativePeerConnection);
    window.RTCPeerConnection = MeetbotPeerConnection;
    if (window.webkitRTCPeerConnection) window.webkitRTCPeerConnection = MeetbotPeerConnection;
  }

  // Media elements the page plays (srcObject streams, or src URLs through captureStream()).
  function scanMediaElements() {
    for (const el of document.querySelectorAll('audio, video')) {
      const stream = el.srcObject;
      if (stream instanceof MediaStream) {
        for (const t of stream.getAudioTracks()) captureTrack(t, 'element');
      } else if (el.src && !el.paused && !el.__meetbotCaptured && el.captureStream) {
        try {
          el.__meetbotCaptured = true;
          for (const t of el.captureStream().getAudioTracks()) captureTrack(t, 'element');
        } catch (err) {
          // Cross-origin media without CORS cannot be captured.
        }
      }
    }
  }
  setInterval(scanMediaElements, 1000);

  // ---- the bot's own media -------------------------------------------------------------
  function ensureMediaContext() {
    if (!mediaCtx) mediaCtx = new AudioContext();
    return mediaCtx;
  }

  function ensureMic() {
    if (mic) return mic;
    const ctx = ensureMediaContext();
    const destination = ctx.createMediaStreamDestination();
    const gain = ctx.createGain();
    gain.connect(destination);
    // until: AudioContext time at which the queued speech ends; sources: what is scheduled.
    mic = { destination, gain, until: 0, sources: new Set() };
    for (const t of destination.stream.getAudioTracks()) ownTrackIds.add(t.id);
    return mic;
  }

  // Camera and screen are 1280x720 canvases captured at 30 fps: Attendee's bot found Meet
  // "complains" below 30 fps and Teams needs a wide canvas (1280x640 there; peers-2026-11.md);
  // issue 14 gives Teams' need as 16:9 at 1280 wide or more. With a frame rate, a capture
  // stream takes frames only as the canvas is drawn (MDN HTMLCanvasElement.captureStream;
  // measured: no redraw, no frames), so each canvas is redrawn at 30 fps.
  const VIDEO_W = 1280;
  const VIDEO_H = 720;
  const VIDEO_FPS = 30;

  function fit(g, img, width, height) {
    const iw = img.videoWidth || img.naturalWidth || img.width;
    const ih = img.videoHeight || img.naturalHeight || img.height;
    const scale = Math.min(width / iw, height / ih);
    const w = iw * scale;
    const h = ih * scale;
    g.drawImage(img, (width - w) / 2, (height - h) / 2, w, h);
  }

  function makeCanvasSource(paint) {
    const canvas = document.createElement('canvas');
    canvas.width = VIDEO_W;
    canvas.height = VIDEO_H;
    const source = { canvas, image: null, stream: null, timer: null };
    const g = canvas.getContext('2d', { alpha: false });
    source.draw = () => {
      g.fillStyle = '#1f2937';
      g.fillRect(0, 0, VIDEO_W, VIDEO_H);
      paint(g, source);
    };
    source.draw();
    source.timer = setInterval(source.draw, Math.round(1000 / VIDEO_FPS));
    source.stream = canvas.captureStream(VIDEO_FPS);
    for (const t of source.stream.getTracks()) ownTrackIds.add(t.id);
    return source;
  }

  function botInitials() {
    const name = String(window.__meetbotBotName || 'meetbot').trim();
    const parts = name.split(/\s+/).filter(Boolean).slice(0, 2);
    return parts.map((p) => p[0].toUpperCase()).join('') || 'MB';
  }

  // The camera shows the shared content while a share is active (default_avatar_url is shown
  // "when no screen content is active", docs/api.md), else its image: the bot's
  // default_avatar_url or the service logo (window.__meetbotAvatar, set by the agent before
  // any page script), or the bot's initials if neither decodes.
  function paintCamera(g, cam) {
    if (screen && screen.active && screen.image) {
      g.drawImage(screen.canvas, 0, 0);
    } else if (cam.image) {
      fit(g, cam.image, VIDEO_W, VIDEO_H);
    } else {
      g.fillStyle = '#e5e7eb';
      g.font = 'bold 192px sans-serif';
      g.textAlign = 'center';
      g.textBaseline = 'middle';
      g.fillText(botInitials(), VIDEO_W / 2, VIDEO_H / 2);
    }
  }

  function paintScreen(g, scr) {
    if (scr.active && scr.image && !(scr.image.readyState < 2)) fit(g, scr.image, VIDEO_W, VIDEO_H);
  }

  // Connects an audio node into the bot's microphone graph (what the platform receives once
  // the microphone is unmuted); the screen-share video uses it, and so can speech output.
  function feedMic(node) {
    node.connect(ensureMic().gain);
    return node;
  }

  function stopScreenVideo(scr) {
    if (!scr.video) return;
    scr.video.pause();
    if (scr.videoAudio) scr.videoAudio.disconnect();
    scr.video.removeAttribute('src');
    scr.video.load();
    scr.video = null;
    scr.videoAudio = null;
  }

  function ensureCamera() {
    if (camera) return camera;
    camera = makeCanvasSource(paintCamera);
    const initial = window.__meetbotAvatar;
    if (initial) loadImage(initial).then((img) => { if (!camera.image) camera.image = img; }, () => {});
    return camera;
  }

  function ensureScreen() {
    if (!screen) {
      screen = makeCanvasSource(paintScreen);
      screen.active = false;
      screen.pending = false;
    }
    return screen;
  }

  function cloneOwn(track) {
    const copy = track.clone();
    ownTrackIds.add(copy.id);
    return copy;
  }

  const devices = navigator.mediaDevices;
  if (devices) {
    devices.getUserMedia = async function (constraints) {
      const wanted = constraints || {};
      const stream = new MediaStream();
      if (wanted.audio) stream.addTrack(cloneOwn(ensureMic().destination.stream.getAudioTracks()[0]));
      if (wanted.video) stream.addTrack(cloneOwn(ensureCamera().stream.getVideoTracks()[0]));
      return stream;
    };
    devices.getDisplayMedia = async function () {
      return new MediaStream([cloneOwn(ensureScreen().stream.getVideoTracks()[0])]);
    };
    devices.enumerateDevices = async function () {
      const device = (kind, label) => ({
        deviceId: 'meetbot-' + kind, groupId: 'meetbot', kind, label,
        toJSON() { return { deviceId: this.deviceId, groupId: this.groupId, kind, label }; },
      });
      return [
        device('audioinput', 'meetbot microphone'),
        device('videoinput', 'meetbot camera'),
        device('audiooutput', 'meetbot speaker'),
      ];
    };
  }

  function loadImage(url) {
    return new Promise((resolve, reject) => {
      const img = new Image();
      img.onload = () => resolve(img);
      img.onerror = () => reject(new Error('image failed to load'));
      img.src = url;
    });
  }

  const api = {
    // Camera image: a data: URL (kept origin-clean so the canvas stream stays readable), or
    // null for the default (window.__meetbotLogo). False, and the previous image kept, when it
    // does not decode.
    async setAvatar(dataUrl) {
      const cam = ensureCamera();
      const url = dataUrl || window.__meetbotLogo;
      if (!url) {
        cam.image = null;
        return true;
      }
      try {
        cam.image = await loadImage(url);
      } catch (err) {
        return false;
      }
      return true;
    },
    // Screen content: an image (data: URL) shown until clearScreen; false if it does not decode.
    async setScreenImage(dataUrl) {
      const scr = ensureScreen();
      let img;
      try {
        img = await loadImage(dataUrl);
      } catch (err) {
        return false;
      }
      stopScreenVideo(scr);
      scr.image = img;
      scr.active = true;
      return true;
    },
    // One frame of a page the bot renders (base64 JPEG of a CDP screencast); a frame that
    // arrives while the previous one still decodes is dropped.
    screenFrame(base64Jpeg) {
      const scr = ensureScreen();
      if (scr.pending) return false;
      stopScreenVideo(scr);
      scr.pending = true;
      scr.active = true;
      loadImage('data:image/jpeg;base64,' + base64Jpeg).then(
        (img) => { scr.image = img; scr.pending = false; },
        () => { scr.pending = false; },
      );
      return true;
    },
    // A video (a same-origin URL the agent serves, so the canvas stays readable) drawn on every
    // frame, its sound fed into the microphone graph. Resolves {ok, audio, duration}; ok false
    // when it does not load or play.
    async setScreenVideo(url) {
      const scr = ensureScreen();
      const video = document.createElement('video');
      video.playsInline = true;
      video.preload = 'auto';
      video.src = url;
      try {
        await new Promise((resolve, reject) => {
          video.onloadeddata = resolve;
          video.onerror = () => reject(new Error('video failed to load'));
        });
      } catch (err) {
        return { ok: false, audio: false, duration: 0 };
      }
      let audio = null;
      try {
        audio = feedMic(ensureMediaContext().createMediaElementSource(video));
        if (mediaCtx.state !== 'running') await mediaCtx.resume();
      } catch (err) {
        audio = null;
      }
      try {
        await video.play();
      } catch (err) {
        // Without a user activation a video with sound may not start: play it muted.
        if (audio) audio.disconnect();
        audio = null;
        video.muted = true;
        try { await video.play(); } catch (err2) { return { ok: false, audio: false, duration: 0 }; }
      }
      stopScreenVideo(scr);
      scr.video = video;
      scr.videoAudio = audio;
      scr.image = video;
      scr.active = true;
      return { ok: true, audio: Boolean(audio), duration: video.duration || 0 };
    },
    clearScreen() {
      const scr = ensureScreen();
      stopScreenVideo(scr);
      scr.active = false;
      scr.image = null;
      return true;
    },
    // Speech into the microphone: base64 int16 little-endian mono PCM at `rate` Hz, played
    // right after what is already queued. Returns the seconds queued from now.
    micPlay(b64, rate) {
      const m = ensureMic();
      const ctx = mediaCtx;
      if (ctx.state !== 'running') ctx.resume().catch(() => {});
      const bytes = atob(b64);
      const n = bytes.length >> 1;
      if (!n) return Math.max(0, m.until - ctx.currentTime);
      const buffer = ctx.createBuffer(1, n, rate);
      const data = buffer.getChannelData(0);
      for (let i = 0; i < n; i++) {
        const v = bytes.charCodeAt(2 * i) | (bytes.charCodeAt(2 * i + 1) << 8);
        data[i] = (v >= 0x8000 ? v - 0x10000 : v) / 32768;
      }
      const source = ctx.createBufferSource();
      source.buffer = buffer;
      source.connect(m.gain);
      const at = Math.max(ctx.currentTime + 0.01, m.until);
      source.start(at);
      m.until = at + buffer.duration;
      m.sources.add(source);
      source.onended = () => m.sources.delete(source);
      return m.until - ctx.currentTime;
    },
    // Seconds of speech still queued in the microphone.
    micQueued() {
      return mic ? Math.max(0, mic.until - mediaCtx.currentTime) : 0;
    },
    // Silence the microphone at once: every queued piece of speech is dropped.
    micStop() {
      if (!mic) return true;
      for (const source of mic.sources) {
        try { source.stop(); } catch (err) { /* not started or already ended */ }
      }
      mic.sources.clear();
      mic.until = 0;
      return true;
    },
    captureState() {
      return {
        context: captureCtx ? captureCtx.state : 'none',
        pcmCalls, inFlight, pendingBlocks: pending.length, droppedBlocks,
        tracks: Array.from(captured.entries()).map(([id, e]) => ({
          id, origin: e.origin, blocks: e.blocks, state: e.track.readyState,
        })),
      };
    },
    scan: scanMediaElements,
  };
  Object.defineProperty(window, '__meetbot', { value: api, enumerable: false });
})();
