// Terminal output is batched per frame and never outruns xterm's parser.
import { describe, expect, it } from 'vitest';
import { GAP_MS, InOrder, firstOver } from '../src/lib/channel';
import { ACK_BYTES, ACK_DELAY_MS, ACK_STUCK_MS, MAX_WRITE, OutputBatcher, ParseAcker, toBytes } from '../src/lib/terminal';

function setup() {
  const frames: (() => void)[] = [];
  const writes: { bytes: Uint8Array; done: () => void }[] = [];
  const b = new OutputBatcher(
    (bytes, done) => writes.push({ bytes, done }),
    (fn) => frames.push(fn),
  );
  const frame = () => frames.splice(0).forEach((f) => f());
  return { b, frames, writes, frame };
}
const text = (u: Uint8Array) => new TextDecoder().decode(u);

describe('OutputBatcher', () => {
  it('writes everything that arrived within a frame at once, in order', () => {
    const { b, writes, frame, frames } = setup();
    b.push(new TextEncoder().encode('hel').buffer);
    b.push(new TextEncoder().encode('lo ').buffer);
    b.push(new Uint8Array([0xe2, 0x9c, 0xbb]));
    expect(frames).toHaveLength(1);
    expect(writes).toHaveLength(0);
    frame();
    expect(writes.map((w) => text(w.bytes))).toEqual(['hello ✻']);
  });

  it('waits for xterm to finish a write before the next', () => {
    const { b, writes, frame, frames } = setup();
    b.push('a');
    frame();
    b.push('b');
    b.push('c');
    expect(frames).toHaveLength(0);
    writes[0].done();
    expect(frames).toHaveLength(1);
    frame();
    expect(writes.map((w) => text(w.bytes))).toEqual(['a', 'bc']);
    expect(b.written).toBe(3);
    expect(b.writes).toBe(2);
  });

  it('drops nothing across a large burst and nothing after dispose', () => {
    const { b, writes, frame } = setup();
    const chunk = new Uint8Array(64 * 1024).fill(65);
    for (let i = 0; i < 100; i++) b.push(chunk);
    frame();
    // One batch, handed to xterm in pieces small enough that it yields often (it yields
    // only between writes).
    const pieces = (100 * 64 * 1024) / MAX_WRITE;
    expect(MAX_WRITE).toBeLessThanOrEqual(8 * 1024);
    expect(writes).toHaveLength(pieces);
    expect(writes.every((w) => w.bytes.length === MAX_WRITE)).toBe(true);
    expect(b.writes).toBe(1);
    b.dispose();
    b.push('late');
    writes[pieces - 1].done();
    frame();
    expect(writes).toHaveLength(pieces);
  });

  it('accepts the shapes a bridge may deliver', () => {
    expect(Array.from(toBytes(new Uint8Array([1, 2])) ?? [])).toEqual([1, 2]);
    expect(Array.from(toBytes(new Uint8Array([3]).buffer) ?? [])).toEqual([3]);
    expect(Array.from(toBytes([4, 5]) ?? [])).toEqual([4, 5]);
    expect(text(toBytes('é') ?? new Uint8Array())).toBe('é');
    expect(toBytes({})).toBeNull();
  });
});

describe('InputSender', () => {
  it('keeps one call in flight and sends what was typed meanwhile together, in order', async () => {
    const { InputSender } = await import('../src/lib/terminal');
    const sent: string[] = [];
    const releases: (() => void)[] = [];
    const s = new InputSender((d) => {
      sent.push(d);
      return new Promise<void>((r) => releases.push(r));
    });
    s.push('a');
    s.push('b');
    s.push('c');
    expect(sent).toEqual(['a']);
    releases.shift()?.();
    await new Promise((r) => setTimeout(r, 0));
    expect(sent).toEqual(['a', 'bc']);
    s.push('d');
    releases.shift()?.();
    await new Promise((r) => setTimeout(r, 0));
    expect(sent).toEqual(['a', 'bc', 'd']);
  });

  it('keeps binary input (a mouse report past column 95) apart from text, in order', async () => {
    const { InputSender } = await import('../src/lib/terminal');
    const sent: [string, boolean][] = [];
    const releases: (() => void)[] = [];
    const s = new InputSender((d, binary) => {
      sent.push([d, binary]);
      return new Promise<void>((r) => releases.push(r));
    });
    const report = '\x1b[M ' + String.fromCharCode(232) + '!';
    s.push('a');
    s.push(report, true);
    s.push(report, true);
    s.push('b');
    for (let i = 0; i < 3; i++) {
      releases.shift()?.();
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(sent).toEqual([
      ['a', false],
      [report + report, true],
      ['b', false],
    ]);
  });
});

describe('ParseAcker', () => {
  function setup() {
    const timers: { fn: () => void; ms: number; live: boolean }[] = [];
    const clock = { now: 0 };
    const a = new ParseAcker(
      (fn, ms) => {
        const t = { fn, ms, live: true };
        timers.push(t);
        return t as unknown as ReturnType<typeof setTimeout>;
      },
      (t) => ((t as unknown as { live: boolean }).live = false),
      () => clock.now,
    );
    const acks: number[] = [];
    const resolvers: (() => void)[] = [];
    const send = (n: number) => {
      acks.push(n);
      return new Promise<void>((r) => resolvers.push(r));
    };
    const fire = () => timers.splice(0).forEach((t) => t.live && t.fn());
    const settle = async () => {
      resolvers.splice(0).forEach((r) => r());
      await new Promise((r) => setTimeout(r, 0));
    };
    return { a, acks, send, fire, settle, timers, clock, resolvers };
  }

  it('does not wait for ever for an ack that is never answered', async () => {
    const { a, acks, send, timers, clock, resolvers } = setup();
    a.start(send);
    a.parsed(ACK_BYTES);
    expect(acks).toEqual([ACK_BYTES]);
    a.parsed(10);
    // The timer waits for the answer: fired early, it only waits again.
    clock.now = 1_000;
    timers.splice(0).forEach((t) => t.live && t.fn());
    expect(acks).toHaveLength(1);
    expect(timers.filter((t) => t.live)).toHaveLength(1);
    clock.now = ACK_STUCK_MS;
    timers.splice(0).forEach((t) => t.live && t.fn());
    expect(acks).toEqual([ACK_BYTES, ACK_BYTES + 10]);
    expect(a.acked).toBe(ACK_BYTES + 10);
    // The first one's late answer does not count as the second's.
    const late = resolvers.shift() as () => void;
    late();
    await new Promise((r) => setTimeout(r, 0));
    a.parsed(ACK_BYTES);
    expect(acks).toHaveLength(2);
    resolvers.splice(0).forEach((r) => r());
    await new Promise((r) => setTimeout(r, 0));
    expect(acks).toEqual([ACK_BYTES, ACK_BYTES + 10, 2 * ACK_BYTES + 10]);
  });

  it('acks once per ACK_BYTES parsed, never two in flight, and the rest after a pause', async () => {
    const { a, acks, send, fire, settle } = setup();
    a.start(send);
    a.parsed(1000);
    expect(acks).toEqual([]);
    a.parsed(ACK_BYTES);
    expect(acks).toEqual([ACK_BYTES + 1000]);
    a.parsed(ACK_BYTES * 3);
    expect(acks).toHaveLength(1); // one in flight
    await settle();
    expect(acks).toEqual([ACK_BYTES + 1000, ACK_BYTES * 4 + 1000]);
    await settle();
    a.parsed(10);
    expect(acks).toHaveLength(2);
    fire(); // parsing stopped: the backend learns the page caught up
    expect(acks.at(-1)).toBe(ACK_BYTES * 4 + 1010);
    await settle();
    fire();
    expect(acks).toHaveLength(3);
  });

  it('waits for the attachment, and stops when disposed', () => {
    const { a, acks, send, fire } = setup();
    a.parsed(ACK_BYTES * 2);
    fire();
    expect(acks).toEqual([]);
    a.start(send);
    expect(acks).toEqual([ACK_BYTES * 2]);
    a.dispose();
    a.parsed(ACK_BYTES * 2);
    fire();
    expect(acks).toHaveLength(1);
  });
});

describe('ParseAcker with the real timers', () => {
  it('acks after a pause', async () => {
    const acks: number[] = [];
    const a = new ParseAcker();
    a.start(async (n) => void acks.push(n));
    a.parsed(5);
    await new Promise((r) => setTimeout(r, ACK_DELAY_MS + 30));
    expect(acks).toEqual([5]);
    a.dispose();
  });
});

describe("the terminal's screen-reader mode", () => {
  it('is a setting of this window, off by default, remembered', async () => {
    const { prefs } = await import('../src/lib/prefs.svelte');
    expect(prefs.terminalReader).toBe(false);
    prefs.setTerminalReader(true);
    expect(prefs.terminalReader).toBe(true);
    expect(localStorage.getItem('mimesis.terminal-screen-reader')).toBe('on');
    prefs.setTerminalReader(false);
    expect(localStorage.getItem('mimesis.terminal-screen-reader')).toBe('off');
  });
});

describe('InOrder', () => {
  function setup() {
    const timers: { fn: () => void; live: boolean }[] = [];
    const clock = { now: 0 };
    const got: string[] = [];
    let lost = 0;
    let ended = 0;
    const o = new InOrder<string>(
      (m) => got.push(m),
      () => lost++,
      () => ended++,
      (fn) => {
        const t = { fn, live: true };
        timers.push(t);
        return t as unknown as ReturnType<typeof setTimeout>;
      },
      (t) => ((t as unknown as { live: boolean }).live = false),
      () => clock.now,
    );
    const fire = () => timers.splice(0).forEach((t) => t.live && t.fn());
    return { o, got, clock, fire, lost: () => lost, ended: () => ended };
  }

  it('delivers in order whatever order the messages come in', () => {
    const { o, got, lost } = setup();
    o.receive(1, 'b');
    o.receive(0, 'a');
    o.receive(3, 'd');
    expect(got).toEqual(['a', 'b']);
    expect(o.held).toBe(1);
    o.receive(2, 'c');
    o.receive(2, 'again');
    expect(got).toEqual(['a', 'b', 'c', 'd']);
    expect(o.held).toBe(0);
    expect(lost()).toBe(0);
  });

  it('says once that a message never came, and delivers nothing after it', () => {
    const { o, got, clock, fire, lost } = setup();
    o.receive(0, 'a');
    o.lose = (i) => i === 1;
    o.receive(1, 'b');
    o.receive(2, 'c');
    clock.now = GAP_MS - 1;
    fire();
    expect(lost()).toBe(0);
    clock.now = GAP_MS;
    fire();
    expect(lost()).toBe(1);
    o.receive(3, 'd');
    fire();
    expect(got).toEqual(['a']);
    expect(lost()).toBe(1);
  });

  it('picks the one message a test drops: the first as big as asked', () => {
    const buf = (n: number) => new ArrayBuffer(n);
    const bySize = firstOver(100);
    expect([10, 100, 500, 100].map((n, i) => bySize(i, buf(n)))).toEqual([false, true, false, false]);
  });

  it('gives a new gap its own time', () => {
    const { o, clock, fire, lost } = setup();
    o.receive(1, 'b');
    clock.now = GAP_MS - 10;
    o.receive(0, 'a');
    o.receive(3, 'd');
    clock.now = GAP_MS;
    fire();
    expect(lost()).toBe(0);
    clock.now = 2 * GAP_MS - 10;
    fire();
    expect(lost()).toBe(1);
  });

  it('ends when everything the sender sent has come, and a missing last message is lost', () => {
    const done = setup();
    done.o.receive(0, 'a');
    done.o.end(1);
    expect(done.ended()).toBe(1);
    const short = setup();
    short.o.end(2);
    short.o.receive(0, 'a');
    short.clock.now = GAP_MS;
    short.fire();
    expect(short.lost()).toBe(1);
    expect(short.ended()).toBe(0);
  });
});
