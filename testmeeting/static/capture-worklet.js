// testmeeting: collects what the page's microphone track carries in 100 ms blocks (at the
// capture AudioContext's rate, 16 kHz) and posts them to the page, which uploads them.
class TestMeetingCapture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.block = new Float32Array(1600);
    this.filled = 0;
  }

  process(inputs) {
    const channel = inputs[0] && inputs[0][0];
    if (channel) {
      let offset = 0;
      while (offset < channel.length) {
        const take = Math.min(channel.length - offset, this.block.length - this.filled);
        this.block.set(channel.subarray(offset, offset + take), this.filled);
        this.filled += take;
        offset += take;
        if (this.filled === this.block.length) {
          this.port.postMessage(this.block);
          this.block = new Float32Array(1600);
          this.filled = 0;
        }
      }
    }
    return true;
  }
}

registerProcessor("tm-capture", TestMeetingCapture);
