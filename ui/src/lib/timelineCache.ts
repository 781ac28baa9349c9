// The items of one open timeline, held sparsely: a 100 MB transcript has hundreds of
// thousands of items and only the pages near the viewport are ever fetched and kept.
// Pure: no I/O, no reactivity. TimelineView (timeline.svelte.ts) drives it.

import type { TimelineItem, TimelinePage, TimelineUpdate } from './types';

/** Ranges are fetched in aligned chunks of this many items. */
export const CHUNK = 100;

export interface Range {
  start: number;
  end: number; // exclusive
}

export class TimelineCache {
  total = 0;
  readonly items = new Map<number, TimelineItem>();
  /** Chunks requested and not yet answered. */
  readonly inFlight = new Set<number>();
  /** Bumped by every live update; a page fetched before an update must not undo it. */
  epoch = 0;
  /**
   * The last update this cache holds (`TimelineUpdate.seq`), or null before the first page:
   * an update whose `prev` is newer means one was lost, and the timeline is read again.
   */
  seq: number | null = null;
  /** The newest update applied before the first page came. */
  #early = 0;
  readonly #writtenAt = new Map<number, number>();

  constructor(
    readonly sessionId: string,
    readonly maxItems = 20_000,
  ) {}

  get(index: number): TimelineItem | undefined {
    return this.items.get(index);
  }

  /** Stores a fetched page. `requestEpoch` is `epoch` when the request was sent. */
  applyPage(page: TimelinePage, requestEpoch = this.epoch): void {
    if (page.sessionId !== this.sessionId) return;
    if (this.seq === null && page.seq !== undefined) this.seq = Math.max(page.seq, this.#early);
    // With no update since the request the page is the newest word on the length;
    // otherwise the updates may be newer than it.
    this.total = requestEpoch === this.epoch ? page.total : Math.max(this.total, page.total);
    if (this.items.size && requestEpoch === this.epoch) {
      for (const i of this.items.keys()) if (i >= this.total) this.items.delete(i);
    }
    for (let i = 0; i < page.items.length; i++) {
      const index = page.start + i;
      if (index >= this.total) break;
      const w = this.#writtenAt.get(index);
      if (w !== undefined && w > requestEpoch) continue;
      this.items.set(index, page.items[i]);
    }
  }

  /**
   * Applies a `timeline:update`. Returns false when the caller must read the timeline
   * again: a reset, or an update that follows one this cache never got.
   */
  applyUpdate(u: TimelineUpdate): boolean {
    if (u.sessionId !== this.sessionId) return true;
    // Another machine's updates carry no numbers: applied as they come.
    const [seq, prev] = 'seq' in u ? [u.seq, u.prev] : [undefined, undefined];
    if (u.reset || (this.seq !== null && prev !== undefined && prev > this.seq)) {
      this.clear();
      return false;
    }
    if (seq !== undefined) {
      // Already in what this cache holds (an update older than its page).
      if (this.seq !== null && seq <= this.seq) return true;
      if (this.seq === null) this.#early = Math.max(this.#early, seq);
      else this.seq = seq;
    }
    this.epoch++;
    if (u.total < this.total) {
      for (const i of [...this.items.keys()]) if (i >= u.total) this.items.delete(i);
    }
    this.total = u.total;
    for (const { index, item } of u.changed) {
      if (index >= u.total) continue;
      this.items.set(index, item);
      this.#writtenAt.set(index, this.epoch);
    }
    return true;
  }

  /** Replaces one item with its whole version (from `timeline_item`). */
  setItem(index: number, item: TimelineItem): void {
    if (index >= this.total) return;
    this.epoch++;
    this.items.set(index, item);
    this.#writtenAt.set(index, this.epoch);
  }

  clear(): void {
    this.total = 0;
    this.items.clear();
    this.inFlight.clear();
    this.#writtenAt.clear();
    this.epoch++;
    this.seq = null;
    this.#early = 0;
  }

  /** Chunks holding a missing index in [start, end), not already requested. */
  missingChunks(start: number, end: number): number[] {
    const out: number[] = [];
    const last = Math.min(end, this.total);
    for (let c = Math.floor(Math.max(0, start) / CHUNK); c * CHUNK < last; c++) {
      if (this.inFlight.has(c)) continue;
      const from = Math.max(c * CHUNK, start);
      const to = Math.min((c + 1) * CHUNK, last);
      for (let i = from; i < to; i++) {
        if (!this.items.has(i)) {
          out.push(c);
          break;
        }
      }
    }
    return out;
  }

  chunkRange(c: number): Range {
    return { start: c * CHUNK, end: Math.min((c + 1) * CHUNK, this.total) };
  }

  /** Drops items far from [keepStart, keepEnd) once more than `maxItems` are held. */
  evict(keepStart: number, keepEnd: number): number {
    if (this.items.size <= this.maxItems) return 0;
    const margin = Math.floor(this.maxItems / 4);
    let dropped = 0;
    for (const i of [...this.items.keys()]) {
      if (i < keepStart - margin || i >= keepEnd + margin) {
        this.items.delete(i);
        this.#writtenAt.delete(i);
        dropped++;
      }
    }
    return dropped;
  }
}
