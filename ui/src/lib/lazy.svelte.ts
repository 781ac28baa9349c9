// Parts of the window the first screen does not show (a session's timeline or terminal, the
// other pages, the dialogs), each in a chunk of its own: a launch loads and evaluates only the
// roster's code; the likely first clicks' parts follow once the roster is painted
// (`preloadParts`), so a first click finds them there. A part asked for before it has loaded
// loads then (`Lazy.get`), and is drawn once it is there.
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
  historySearch: new Lazy(() => import('../components/HistorySearch.svelte')),
  quit: new Lazy(() => import('../components/QuitDialog.svelte')),
  settings: new Lazy(() => import('../components/settings/SettingsView.svelte')),
  spend: new Lazy(() => import('../components/SpendView.svelte')),
  resources: new Lazy(() => import('../components/ResourceView.svelte')),
  newSession: new Lazy(() => import('../components/pty/NewSessionDialog.svelte')),
  terminated: new Lazy(() => import('../components/pty/TerminatedDialog.svelte')),
};

/**
 * The parts a first click or key most often needs (a session, an approval, the search, a
 * quit's question): preloaded once the roster is painted. The other pages and dialogs load
 * at first use (a few tens of ms): every part preloaded kept the web process ~3 MB larger
 * for the window's life, used or not.
 */
const LIKELY: readonly (keyof typeof parts)[] = ['timeline', 'sessionView', 'backgroundView', 'approvalBar', 'historySearch', 'quit'];

let preloading: Promise<void> | null = null;

/** Loads the likely parts (after the roster is painted), or every part (the tests' set-up). */
export function preloadParts(which: 'likely' | 'all' = 'likely'): Promise<void> {
  const load = (names: readonly (keyof typeof parts)[]) => Promise.all(names.map((n) => parts[n].load().catch(() => {}))).then(() => undefined);
  if (which === 'all') return load(Object.keys(parts) as (keyof typeof parts)[]);
  preloading ??= load(LIKELY);
  return preloading;
}
