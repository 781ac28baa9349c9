// The open timeline: which session, its item cache, what is expanded. Fed by
// `open_timeline` / `timeline_range` / `timeline_item` and the `timeline:update` event.

import { SvelteSet } from 'svelte/reactivity';
import type { Backend } from './backend';
import { Listeners } from './listeners';
import { TimelineCache } from './timelineCache';
import type { TimelineItem, TimelineUpdate } from './types';

export const TAIL = 200;

export class TimelineView {
  #backend: Backend;
  #cache: TimelineCache | null = null;
  #listeners = new Listeners();
  #range = { start: 0, end: 0 };

  sessionId = $state<string | null>(null);
  /** Bumped whenever an item or the total changes. */
  version = $state(0);
  total = $state(0);
  loading = $state(false);
  /** Range requests on their way (pages further up the transcript). */
  #fetching = $state(0);
  /** The session has no transcript yet: its first prompt is still to come. */
  waiting = $state(false);
  error = $state<string | null>(null);
  /** Bumped when the whole list was replaced (opened, reset): the list view starts over at the bottom. */
  generation = $state(0);
  /** uuids of items the user expanded; kept here so scrolling away and back keeps them open. */
  readonly expanded = new SvelteSet<string>();
  /** Indexes whose whole text is being fetched. */
  readonly fetchingFull = new SvelteSet<number>();
  /** The item a search hit opened (`reveal`): highlighted, and scrolled to by the list. */
  highlight = $state<{ uuid: string; index: number } | null>(null);
  /** The open timeline's first page, once it is there. */
  #loaded: Promise<void> = Promise.resolve();

  constructor(backend: Backend) {
    this.#backend = backend;
  }

  async start(): Promise<void> {
    this.#listeners.stop();
    const listeners = (this.#listeners = new Listeners());
    await listeners.add(this.#backend.on('timeline:update', (u) => this.receive(u)));
  }

  stop(): void {
    this.#listeners.stop();
  }

  /** A page of items is on its way: the open's tail or a range further up (the feed's aria-busy). */
  get busy(): boolean {
    return this.loading || this.#fetching > 0;
  }

  item(index: number): TimelineItem | undefined {
    void this.version;
    return this.#cache?.get(index);
  }

  /** Claude's last text, when the timeline's newest items (those loaded) end with it. */
  lastAssistantText(): string | null {
    void this.version;
    for (let i = this.total - 1; i >= Math.max(0, this.total - 10); i--) {
      const it = this.#cache?.get(i);
      if (!it) return null;
      if (it.kind === 'assistant_text') return it.text;
      if (it.kind === 'prompt' || it.kind === 'tool_call' || it.kind === 'answer') return null;
    }
    return null;
  }

  async open(sessionId: string | null): Promise<void> {
    if (sessionId === this.sessionId) return;
    const previous = this.sessionId;
    if (previous) void this.#backend.call('close_timeline', { sessionId: previous }).catch(() => {});
    this.sessionId = sessionId;
    this.expanded.clear();
    this.fetchingFull.clear();
    this.#cache = sessionId ? new TimelineCache(sessionId) : null;
    this.#fetching = 0;
    this.total = 0;
    this.error = null;
    this.waiting = false;
    this.highlight = null;
    this.generation++;
    this.version++;
    if (sessionId) {
      this.#loaded = this.#load(this.#cache as TimelineCache);
      await this.#loaded;
    }
  }

  /**
   * Opens `sessionId` at the item `uuid` (a search hit; `toolUseId` finds a tool result's
   * call): once its timeline is there, the item is found and becomes `highlight`. Returns
   * whether it was found.
   */
  async reveal(sessionId: string, uuid: string, toolUseId: string | null = null): Promise<boolean> {
    await this.open(sessionId);
    await this.#loaded;
    const cache = this.#cache;
    if (!cache || cache.sessionId !== sessionId) return false;
    try {
      const index = await this.#backend.call('timeline_find', { sessionId, uuid, toolUseId });
      if (cache !== this.#cache) return false;
      if (index === null) {
        this.error = 'That item is no longer in this timeline.';
        return false;
      }
      this.highlight = { uuid, index };
      this.ensure(Math.max(0, index - 20), Math.min(this.total, index + 20));
      return true;
    } catch (e) {
      if (cache === this.#cache) this.error = `Could not find the item in this timeline: ${String(e)}`;
      return false;
    }
  }

  async #load(cache: TimelineCache): Promise<void> {
    this.loading = true;
    const epoch = cache.epoch;
    try {
      const page = await this.#backend.call('open_timeline', { sessionId: cache.sessionId, tail: TAIL });
      if (cache !== this.#cache) return;
      cache.applyPage(page, epoch);
      this.total = cache.total;
      this.waiting = page.waiting === true;
      this.generation++;
      this.version++;
    } catch (e) {
      if (cache === this.#cache) this.error = `Could not open this transcript: ${String(e)}`;
    } finally {
      if (cache === this.#cache) this.loading = false;
    }
  }

  receive(u: TimelineUpdate): void {
    const cache = this.#cache;
    if (!cache || u.sessionId !== cache.sessionId) return;
    if (!cache.applyUpdate(u)) {
      this.total = 0;
      this.expanded.clear();
      this.version++;
      void this.#load(cache);
      return;
    }
    this.total = cache.total;
    this.waiting = false;
    this.version++;
    // Appended items the viewport already wants (the user sits at the bottom) are in the update;
    // anything else the list asks for through ensure().
    this.ensure(this.#range.start, this.#range.end);
  }

  /** The list shows [start, end): fetch what is missing there, drop what is far away. */
  ensure(start: number, end: number): void {
    const cache = this.#cache;
    this.#range = { start, end };
    if (!cache || this.loading) return;
    for (const c of cache.missingChunks(start, end)) void this.#fetchChunk(cache, c);
    if (cache.evict(start, end) > 0) this.version++;
  }

  async #fetchChunk(cache: TimelineCache, chunk: number): Promise<void> {
    const { start, end } = cache.chunkRange(chunk);
    if (end <= start) return;
    cache.inFlight.add(chunk);
    this.#fetching++;
    const epoch = cache.epoch;
    try {
      const page = await this.#backend.call('timeline_range', { sessionId: cache.sessionId, start, end });
      if (cache !== this.#cache) return;
      cache.applyPage(page, epoch);
      this.total = cache.total;
      this.version++;
    } catch (e) {
      if (cache === this.#cache) this.error = `Could not read items ${start}–${end}: ${String(e)}`;
    } finally {
      cache.inFlight.delete(chunk);
      // A request of a timeline since closed no longer counts (open() started over at 0).
      if (cache === this.#cache) this.#fetching--;
    }
  }

  /** "Show all" on a truncated item. */
  async showAll(index: number): Promise<void> {
    const cache = this.#cache;
    if (!cache || this.fetchingFull.has(index)) return;
    this.fetchingFull.add(index);
    try {
      const item = await this.#backend.call('timeline_item', { sessionId: cache.sessionId, index });
      if (cache !== this.#cache) return;
      cache.setItem(index, item);
      this.version++;
    } catch (e) {
      if (cache === this.#cache) this.error = `Could not load the whole item: ${String(e)}`;
    } finally {
      this.fetchingFull.delete(index);
    }
  }

  toggle(uuid: string): void {
    if (!this.expanded.delete(uuid)) this.expanded.add(uuid);
  }
}
