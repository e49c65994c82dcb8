// Test-side capture of what a meeting page receives: every remote audio track that an
// RTCPeerConnection delivers is recorded at 16 kHz into window.__tmCapture, the way a
// meeting bot's in-page capture sees it (cf. ../shared/research/findings.md). An
// AudioWorklet records on the audio thread, so a busy page thread loses nothing.
(() => {
  const Original = window.RTCPeerConnection;
  const tracks = [];
  window.__tmCapture = { tracks };
  const WORKLET = `
    class Recorder extends AudioWorkletProcessor {
      process(inputs) {
        const channel = inputs[0] && inputs[0][0];
        if (channel) this.port.postMessage(channel.slice(0));
        return true;
      }
    }
    registerProcessor("tm-test-recorder", Recorder);
  `;
  let ready = null;
  function context() {
    if (!ready) {
      const ctx = new AudioContext({ sampleRate: 16000 });
      const url = URL.createObjectURL(new Blob([WORKLET], { type: "application/javascript" }));
      ready = ctx.audioWorklet.addModule(url).then(() => ctx);
    }
    return ready;
  }
  async function record(track) {
    const entry = { id: track.id, chunks: [], start: Date.now() / 1000 };
    tracks.push(entry);
    const ctx = await context();
    await ctx.resume();
    const node = new AudioWorkletNode(ctx, "tm-test-recorder");
    node.port.onmessage = (event) => entry.chunks.push(event.data);
    ctx.createMediaStreamSource(new MediaStream([track])).connect(node);
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
