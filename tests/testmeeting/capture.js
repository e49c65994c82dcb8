// Test-side capture of what a meeting page receives: every remote audio track that an
// RTCPeerConnection delivers is recorded at 16 kHz into window.__tmCapture, the way a
// meeting bot's in-page capture sees it (cf. ../shared/research/findings.md).
(() => {
  const Original = window.RTCPeerConnection;
  const tracks = [];
  window.__tmCapture = { tracks };
  let ctx = null;
  async function record(track) {
    if (!ctx) ctx = new AudioContext({ sampleRate: 16000 });
    await ctx.resume();
    const entry = { id: track.id, chunks: [], start: Date.now() / 1000 };
    tracks.push(entry);
    const source = ctx.createMediaStreamSource(new MediaStream([track]));
    const node = ctx.createScriptProcessor(4096, 1, 1);
    node.onaudioprocess = (event) => {
      entry.chunks.push(new Float32Array(event.inputBuffer.getChannelData(0)));
    };
    source.connect(node);
    node.connect(ctx.destination);
  }
  window.RTCPeerConnection = function (...args) {
    const pc = new Original(...args);
    pc.addEventListener("track", (event) => {
      if (event.track.kind === "audio") record(event.track);
    });
    return pc;
  };
  window.RTCPeerConnection.prototype = Original.prototype;
  window.__tmDump = () =>
    tracks.map((entry) => {
      const total = entry.chunks.reduce((n, c) => n + c.length, 0);
      const pcm = new Int16Array(total);
      let offset = 0;
      for (const chunk of entry.chunks) {
        for (let i = 0; i < chunk.length; i++) pcm[offset + i] = Math.max(-1, Math.min(1, chunk[i])) * 32767;
        offset += chunk.length;
      }
      let binary = "";
      const bytes = new Uint8Array(pcm.buffer);
      for (let i = 0; i < bytes.length; i += 0x8000) {
        binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
      }
      return { id: entry.id, start: entry.start, pcm: btoa(binary) };
    });
})();
