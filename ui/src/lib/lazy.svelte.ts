// Parts of the window the first screen does not show (a session's timeline or terminal, the
// other pages, the dialogs), each in a chunk of its own: a launch loads and evaluates only the
// roster's code, and these follow once the roster is painted (`preloadParts`), so a first
// click finds them there. A part asked for before that loads then (`Lazy.get`).
import type { Component } from 'svelte';

// (Each part's props are checked where it is used: its `default` as the component it is.)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyComponent = Component<any, any, any>;

/** One part: null until its chunk has loaded, then its component (reactive). */
export class Lazy<T extends AnyComponent> {
  #promise: Promise<T> | null = null;
  #current = $state.raw<T | null>(null);

  constructor(private readonly importer: () => Promise<{ default: T }>) {}

  /** The component if it is loaded; else null, and it starts loading (shown when it is). */
  get(): T | null {
    // (A load that fails is asked for again the next time the part is to be shown.)
    if (!this.#current) this.load().catch(() => {});
    return this.#current;
  }

  /** Loads the chunk once; a failed load is tried again at the next ask. */
  load(): Promise<T> {
    this.#promise ??= this.importer().then(
      (m) => (this.#current = m.default),
      (e: unknown) => {
        this.#promise = null;
        throw e;
      },
    );
    return this.#promise;
  }
}

export const parts = {
  timeline: new Lazy(() => import('../components/Timeline.svelte')),
  sessionView: new Lazy(() => import('../components/pty/SessionView.svelte')),
  backgroundView: new Lazy(() => import('../components/bg/BackgroundView.svelte')),
  approvalBar: new Lazy(() => import('../components/ApprovalBar.svelte')),
  settings: new Lazy(() => import('../components/settings/SettingsView.svelte')),
  spend: new Lazy(() => import('../components/SpendView.svelte')),
  resources: new Lazy(() => import('../components/ResourceView.svelte')),
  historySearch: new Lazy(() => import('../components/HistorySearch.svelte')),
  newSession: new Lazy(() => import('../components/pty/NewSessionDialog.svelte')),
  terminated: new Lazy(() => import('../components/pty/TerminatedDialog.svelte')),
  quit: new Lazy(() => import('../components/QuitDialog.svelte')),
};

let preloading: Promise<void> | null = null;

/** Loads every part (after the roster is painted; the tests' set-up, before any test). */
export function preloadParts(): Promise<void> {
  preloading ??= Promise.all(Object.values(parts).map((p) => p.load().catch(() => {}))).then(() => undefined);
  return preloading;
}
