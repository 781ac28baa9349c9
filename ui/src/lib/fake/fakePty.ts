// A pretend terminal for the replay backend (../replay.ts), which has no terminal bytes to
// replay: it echoes what is typed, answers each line like Claude Code would (a "●" reply, then
// a fresh prompt), keeps a scrollback that is replayed on attach, and streams bytes to the
// attached channel like `pty_attach` does.

import type { ByteChannel } from '../types';

const SCROLLBACK_LIMIT = 256 * 1024;
const ORANGE = '\x1b[38;5;174m';
const DIM = '\x1b[2m';
const BOLD = '\x1b[1m';
const RESET = '\x1b[0m';
const GREEN = '\x1b[32m';

const REPLIES = [
  'I’ll take a look. Let me read the relevant files first.',
  'Done. I ran the test suite: 214 passed, 0 failed.',
  'Here is what I found: the tail loop re-opens the file without keeping the partial line.',
  'Sure — I updated the docs and the changelog.',
];

export class FakePty {
  cols = 100;
  rows = 30;
  #scrollback: Uint8Array[] = [];
  #size = 0;
  #channel: ByteChannel | null = null;
  #line = '';
  #replies = 0;
  #enc = new TextEncoder();

  constructor(readonly cwd: string) {}

  /** The welcome box Claude Code draws at start. */
  welcome(resumed: boolean): void {
    const w = 58;
    const row = (text: string) => `${ORANGE}│${RESET} ${text}${' '.repeat(Math.max(0, w - 3 - visible(text).length))}${ORANGE}│${RESET}\r\n`;
    this.print(
      `${ORANGE}╭${'─'.repeat(w - 2)}╮${RESET}\r\n` +
        row(`${ORANGE}✻${RESET} Welcome to ${BOLD}Claude Code${RESET}!`) +
        row('') +
        row(`${DIM}  /help for help, /status for your current setup${RESET}`) +
        row('') +
        row(`${DIM}  cwd: ${this.cwd}${RESET}`) +
        `${ORANGE}╰${'─'.repeat(w - 2)}╯${RESET}\r\n` +
        (resumed ? `\r\n${DIM}  └  Resumed the previous conversation.${RESET}\r\n` : '') +
        `\r\n${DIM} Tip: type a message and press Enter${RESET}\r\n`,
    );
    this.prompt();
  }

  prompt(): void {
    this.print(`\r\n${BOLD}>${RESET} `);
  }

  print(text: string): void {
    const bytes = this.#enc.encode(text);
    this.#scrollback.push(bytes);
    this.#size += bytes.length;
    while (this.#size > SCROLLBACK_LIMIT && this.#scrollback.length > 1) this.#size -= (this.#scrollback.shift() as Uint8Array).length;
    this.#send(bytes);
  }

  #send(bytes: Uint8Array): void {
    const ch = this.#channel;
    if (!ch) return;
    const copy = bytes.slice().buffer;
    setTimeout(() => {
      if (this.#channel === ch) ch.onmessage(copy);
    }, 0);
  }

  /** Replays the kept scrollback, then streams live output. */
  attach(channel: ByteChannel): void {
    this.#channel = channel;
    const all = new Uint8Array(this.#size);
    let at = 0;
    for (const c of this.#scrollback) {
      all.set(c, at);
      at += c.length;
    }
    setTimeout(() => {
      if (this.#channel === channel) channel.onmessage(all.buffer);
    }, 0);
  }

  /**
   * Streams `mb` megabytes of build-log-like output as fast as timers allow, then a line
   * "FLOOD-DONE <ms>" (a throughput check for xterm and the output batching; kept out of the scrollback).
   */
  flood(mb: number): void {
    const line = (i: number) => `\x1b[32m   Compiling\x1b[0m crate-${i % 997} v0.${i % 13}.${i % 7} (/home/dana/src/mimesis/crates/engine) \x1b[2m[${i}]\x1b[0m\r\n`;
    let block = '';
    for (let i = 0; block.length < 64 * 1024; i++) block += line(i);
    const chunk = this.#enc.encode(block);
    const total = Math.ceil((mb * 1024 * 1024) / chunk.length);
    const t0 = performance.now();
    let sent = 0;
    const step = () => {
      const ch = this.#channel;
      if (!ch) return;
      for (let k = 0; k < 8 && sent < total; k++, sent++) ch.onmessage(chunk.slice().buffer);
      if (sent < total) setTimeout(step, 0);
      else ch.onmessage(this.#enc.encode(`\r\nFLOOD-DONE ${Math.round(performance.now() - t0)}\r\n`).buffer);
    };
    setTimeout(step, 0);
  }

  detach(): void {
    this.#channel = null;
  }

  /** Keystrokes or a paste. */
  input(data: string): void {
    for (let i = 0; i < data.length; i++) {
      const ch = data[i];
      if (ch === '\x1b') {
        // An escape sequence (arrows, function keys): skip it whole.
        if (data[i + 1] === '[' || data[i + 1] === 'O') {
          i += 2;
          while (i < data.length && !/[A-Za-z~]/.test(data[i])) i++;
        }
        continue;
      }
      if (ch === '\r' || ch === '\n') {
        this.#submit();
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.#line.length > 0) {
          this.#line = this.#line.slice(0, -1);
          this.print('\b \b');
        }
      } else if (ch === '\x03') {
        this.#line = '';
        this.print(`^C\r\n${DIM}Interrupted. Press Ctrl-C again to exit.${RESET}`);
        this.prompt();
      } else if (ch >= ' ') {
        this.#line += ch;
        this.print(ch);
      }
    }
  }

  #submit(): void {
    const line = this.#line;
    this.#line = '';
    if (line.trim() === '') {
      this.prompt();
      return;
    }
    this.print(`\r\n\r\n${DIM}✻ Thinking…${RESET}`);
    setTimeout(() => {
      const reply = REPLIES[this.#replies++ % REPLIES.length];
      this.print(`\r\x1b[2K${ORANGE}●${RESET} ${reply}\r\n  ${DIM}└${RESET}  ${GREEN}Read${RESET} ${DIM}3 files (ctrl+r to expand)${RESET}\r\n`);
      this.prompt();
    }, 450);
  }
}

function visible(text: string): string {
  // eslint-disable-next-line no-control-regex -- stripping our own SGR sequences to measure width
  return text.replace(/\x1b\[[0-9;]*m/g, '');
}
