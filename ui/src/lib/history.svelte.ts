// The window's search over all history (issue 35, docs/ipc.md `search_history`), distinct
// from the roster's `/` filter: the query and the file it is about, the hits, which one the
// cursor is on, and how far the index's first build is. It owns no DOM.

import type { Backend } from './backend';
import type { HostFailure, SearchHit, SearchKind, SearchProgress, SearchRequest, SearchResults } from './types';

/** How long typing pauses before the query runs. */
export const DEBOUNCE_MS = 150;
/** How often the progress is asked for while the index is first built. */
export const PROGRESS_MS = 1000;
/** Hits asked for per query. */
export const LIMIT = 50;

/** The parts of a snippet around its marks (`[start, end)` in code points), for rendering as text. */
export function markedParts(snippet: string, marks: readonly (readonly [number, number])[]): { text: string; mark: boolean }[] {
  const chars = Array.from(snippet);
  const parts: { text: string; mark: boolean }[] = [];
  let from = 0;
  for (const [a0, b0] of marks) {
    const a = Math.min(Math.max(a0, from), chars.length);
    const b = Math.min(Math.max(b0, a), chars.length);
    if (a > from) parts.push({ text: chars.slice(from, a).join(''), mark: false });
    if (b > a) parts.push({ text: chars.slice(a, b).join(''), mark: true });
    from = b;
  }
  if (from < chars.length) parts.push({ text: chars.slice(from).join(''), mark: false });
  return parts;
}

const KIND_LABELS: Record<SearchKind, string> = {
  prompt: 'Prompt',
  reply: 'Reply',
  tool_call: 'Tool call',
  tool_result: 'Tool result',
  thinking: 'Thinking',
};

export function kindLabel(k: SearchKind): string {
  return KIND_LABELS[k] ?? k;
}

/**
 * A hit's project as the window names it: the last part of its session's folder when the
 * roster knows it (`/home/me/src/acme-api` → `acme-api`), else Claude Code's name of the
 * folder whole (`-home-me-src-acme-api` → `home-me-src-acme-api`): that name writes every
 * `/` (and `.`) as `-`, so its last part cannot be told from a folder's own hyphens.
 */
export function projectName(project: string, cwd?: string | null): string {
  const last = cwd
    ?.split('/')
    .filter((s) => s.length > 0)
    .pop();
  return last ?? project.replace(/^-+/, '');
}

/** The tools whose calls `--file` finds (docs/ipc.md), and the input field naming their file. */
const FILE_TOOLS: Record<string, readonly string[]> = {
  Read: ['file_path'],
  Edit: ['file_path'],
  MultiEdit: ['file_path'],
  Write: ['file_path'],
  NotebookEdit: ['notebook_path', 'file_path'],
};

/** The file a tool call read, edited or wrote, when it is one the search can follow. */
export function touchedFile(tool: string, input: unknown): string | null {
  const keys = FILE_TOOLS[tool];
  if (!keys || typeof input !== 'object' || input === null) return null;
  for (const k of keys) {
    const v = (input as Record<string, unknown>)[k];
    if (typeof v === 'string' && v.trim().length > 0 && v.length <= 4096) return v;
  }
  return null;
}

/** The session a hit opens: a hit in an earlier segment of a chain opens the chain's newest;
 * another machine's session is keyed `host:id`, as its roster row. */
export function hitSession(h: SearchHit): string {
  const id = h.superseded && h.chainHead ? h.chainHead : h.sessionId;
  return h.host ? `${h.host}:${id}` : id;
}

/** This machine's results and each other machine's merged: newest first, at most `limit`
 * (the order of the engine's `Results::merge`). */
export function mergeResults(parts: readonly SearchResults[], limit: number): { hits: SearchHit[]; total: number; capped: boolean } {
  const hits = parts.flatMap((p) => p.hits);
  hits.sort((a, b) => Date.parse(b.at) - Date.parse(a.at) || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  return {
    hits: hits.slice(0, limit),
    total: parts.reduce((n, p) => n + p.total, 0),
    capped: parts.some((p) => p.totalCapped),
  };
}

/** A hit's identity across answers (the cursor stays on it as other machines' hits come in). */
function hitId(h: SearchHit): string {
  return `${h.host ?? ''}:${h.sessionId}:${h.uuid}:${h.kind}`;
}

export class HistorySearch {
  readonly #backend: Backend;
  query = $state('');
  /** Only the tool calls that read, edited or wrote this file ("Who touched this file"). */
  file = $state<string | null>(null);
  hits = $state.raw<SearchHit[]>([]);
  total = $state(0);
  capped = $state(false);
  /** The last query failed: the engine's sentence. */
  error = $state<string | null>(null);
  /** A query is on its way. */
  busy = $state(false);
  /** A query has been answered since the search was opened or changed. */
  answered = $state(false);
  progress = $state<SearchProgress>({ indexing: false, done: 0, total: 0 });
  /** The hit the cursor is on. */
  selected = $state(0);
  /** Other machines asked and not answered yet. */
  pending = $state.raw<string[]>([]);
  /** Other machines that could not be searched, each with why. */
  failed = $state.raw<HostFailure[]>([]);

  /** The machines the window follows (Settings › Machines), asked beside this one. */
  readonly #hosts: () => string[];
  #local: SearchResults | null = null;
  /** Other machines' answers to the query under way, as they came. */
  #remote: SearchResults[] = [];
  #seq = 0;
  /** No answer to the query under way has been shown yet (the cursor goes back to the top). */
  #fresh = false;
  /** This machine's answers (a progress re-asks this machine only). */
  #localSeq = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #poll: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  constructor(backend: Backend, file: string | null = null, hosts: () => string[] = () => []) {
    this.#backend = backend;
    this.file = file;
    this.#hosts = hosts;
  }

  /** Asks how far the index is, and runs the search when there is one to run. */
  start(): void {
    void this.#pollProgress();
    if (this.file) void this.run();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    clearTimeout(this.#poll);
  }

  /** Something to search for: words, or a file. */
  get asked(): boolean {
    return this.query.trim().length > 0 || !!this.file;
  }

  /** The query changed: it runs once typing pauses. */
  setQuery(q: string): void {
    this.query = q;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.run(), DEBOUNCE_MS);
  }

  clearFile(): void {
    this.file = null;
    void this.run();
  }

  /** Runs the query now, here and on every other machine at once; each answer is shown as
   * it comes (a slow machine holds nothing back), an answer to an older query is dropped. */
  async run(): Promise<void> {
    clearTimeout(this.#timer);
    const seq = ++this.#seq;
    this.#local = null;
    this.#remote = [];
    this.#fresh = true;
    this.failed = [];
    if (!this.asked) {
      this.hits = [];
      this.total = 0;
      this.capped = false;
      this.error = null;
      this.answered = false;
      this.busy = false;
      this.pending = [];
      return;
    }
    const request = this.#request();
    const hosts = this.#hosts().filter((h, i, all) => all.indexOf(h) === i);
    this.pending = hosts;
    const asked = hosts.map((host) => this.#askHost(seq, host, request));
    await Promise.all([this.#askLocal(seq, request), ...asked]);
  }

  async #askLocal(seq: number, request: SearchRequest): Promise<void> {
    const mine = ++this.#localSeq;
    const current = () => seq === this.#seq && mine === this.#localSeq && !this.#stopped;
    this.busy = true;
    try {
      const a = await this.#backend.call('search_history', { request });
      if (!current()) return;
      this.#local = a.results;
      this.error = null;
      this.#show();
      this.#setProgress(a.progress);
    } catch (e) {
      if (!current()) return;
      this.#local = null;
      this.error = String(e instanceof Error ? e.message : e);
      this.#show();
    } finally {
      if (seq === this.#seq && mine === this.#localSeq) {
        this.busy = false;
        this.answered = true;
      }
    }
  }

  async #askHost(seq: number, host: string, request: SearchRequest): Promise<void> {
    let failure: string | null = null;
    let found: SearchResults | null = null;
    try {
      found = await this.#backend.call('search_host', { host, request });
    } catch (e) {
      failure = String(e instanceof Error ? e.message : e);
    }
    if (seq !== this.#seq || this.#stopped) return;
    this.pending = this.pending.filter((h) => h !== host);
    if (found) this.#remote = [...this.#remote, found];
    else this.failed = [...this.failed, { host, message: failure ?? 'no answer' }];
    this.#show();
  }

  /** The hits of every answer so far, the cursor kept on the hit it was on. */
  #show(): void {
    const was = !this.#fresh && this.current ? hitId(this.current) : null;
    this.#fresh = false;
    const parts = [...(this.#local ? [this.#local] : []), ...this.#remote];
    const m = mergeResults(parts, LIMIT);
    this.hits = m.hits;
    this.total = m.total;
    this.capped = m.capped;
    const at = was === null ? -1 : m.hits.findIndex((h) => hitId(h) === was);
    this.selected = Math.max(0, at);
  }

  /** The cursor moves by `delta` hits (kept within the list). */
  move(delta: number): void {
    if (this.hits.length === 0) return;
    this.selected = Math.min(this.hits.length - 1, Math.max(0, this.selected + delta));
  }

  get current(): SearchHit | null {
    return this.hits[this.selected] ?? null;
  }

  /** This machine's hits again (more of its history is indexed); other machines' stay. */
  #refreshLocal(): Promise<void> {
    return this.#askLocal(this.#seq, this.#request());
  }

  #request(): SearchRequest {
    return { query: this.query, kinds: [], project: null, since: null, file: this.file, limit: LIMIT };
  }

  #setProgress(p: SearchProgress): void {
    const was = this.progress.indexing;
    this.progress = p;
    if (p.indexing && !was) this.#schedulePoll();
  }

  #schedulePoll(): void {
    clearTimeout(this.#poll);
    if (this.#stopped) return;
    this.#poll = setTimeout(() => void this.#pollProgress(), PROGRESS_MS);
  }

  async #pollProgress(): Promise<void> {
    try {
      const p = await this.#backend.call('search_progress');
      if (this.#stopped) return;
      const before = this.progress;
      this.progress = p;
      if (p.indexing) this.#schedulePoll();
      // More of the history is read: the hits so far may change.
      if (this.asked && (p.done !== before.done || p.indexing !== before.indexing) && before.total > 0) void this.#refreshLocal();
    } catch {
      // The progress is a courtesy: a failure to read it leaves the search as it is.
    }
  }
}
