// The window's controller: the connection to the engine, the three stores fed by it, and the
// state of the window itself (the page, the new-session dialog, the demo). App.svelte creates
// one and provides it through context; a component deep in the tree takes what it needs with
// `useEngine()` instead of having `backend`, `sup` and `view` passed down through each level.
// It owns no DOM: focus and measuring stay in the components.
import { getContext, setContext } from 'svelte';
import type { Backend } from './backend';
import { BackgroundControl, isBackground } from './background';
import { HistorySearch, hitSession } from './history.svelte';
import { afterPaint, nextFrame } from './marks';
import { BUSY_APPLY_MS, INDEXING_APPLY_MS, RosterStore } from './store.svelte';
import { SupervisionStore } from './supervision.svelte';
import { TimelineView } from './timeline.svelte';
import type { TermSize } from './termsize';
import type { SearchHit } from './types';

export type Page = 'sessions' | 'spend' | 'resources' | 'settings';

/** The engine's side of the window, all there once connected. */
export interface Engine {
  readonly backend: Backend;
  readonly store: RosterStore;
  readonly view: TimelineView;
  readonly sup: SupervisionStore;
}

export class AppController {
  engine = $state.raw<Engine | null>(null);
  /** The backend is the fake one (a browser, the tests, the demo page). */
  fake = $state(false);
  /** The engine could not be reached: nothing else can be shown. */
  fatal = $state<string | null>(null);
  page = $state<Page>('sessions');
  /** The "New session" dialog, with the folder it starts with. */
  newSession = $state<{ cwd: string } | null>(null);
  /** The search over all history, while its dialog is open. */
  history = $state.raw<HistorySearch | null>(null);
  /** The demo is being started or stopped. */
  busy = $state(false);
  terminatedBusy = $state(false);
  terminatedError = $state<string | null>(null);

  #stopped = false;

  constructor(private readonly connect: () => Promise<Backend>) {}

  /** Connects and starts the stores; a failure is `fatal`. */
  async start(): Promise<void> {
    try {
      const b = await this.connect();
      performance.mark('mimesis:connected');
      if (this.#stopped) return;
      this.fake = b.fake;
      const store = new RosterStore(b, { schedule: nextFrame, indexingEvery: INDEXING_APPLY_MS, busyEvery: BUSY_APPLY_MS });
      // The launch's roster, when it came before the page's code had run: drawn and painted
      // before the stores ask the app for their listeners (round trips the first frame
      // would wait for); its events wait in the app until the store listens.
      const shown = await store.showEarly();
      if (this.#stopped) return;
      const view = new TimelineView(b);
      const sup = new SupervisionStore(b, { onopen: (id) => this.showSession(id) });
      this.engine = { backend: b, store, view, sup };
      if (shown) await new Promise<void>((painted) => afterPaint(painted));
      if (this.#stopped) return;
      // Side by side: the roster's snapshot does not wait behind the other stores' listeners.
      await Promise.all([
        view.start().then(() => performance.mark('mimesis:timeline-listening')),
        sup.start().then(() => performance.mark('mimesis:supervision-started')),
        store.start(),
      ]);
    } catch (e) {
      this.fatal = String(e);
    }
  }

  stop(): void {
    this.#stopped = true;
    this.engine?.store.stop();
    this.engine?.view.stop();
    this.engine?.sup.stop();
  }

  /** Shows a session on the Sessions page (a notification, the tray, a toast, a new session). */
  showSession(id: string): void {
    this.page = 'sessions';
    this.engine?.store.showSession(id);
  }

  /** Opens the search over all history; with `file`, the calls that touched that file. */
  openHistory(file: string | null = null): void {
    const b = this.engine?.backend;
    if (!b) return;
    this.history?.stop();
    // Every machine the window follows is searched too (Settings › Machines).
    this.history = new HistorySearch(b, file, () => this.engine?.store.hosts.map((h) => h.host) ?? []);
  }

  closeHistory(): void {
    this.history?.stop();
    this.history = null;
  }

  /** A hit opens its session's timeline (its chain's, for an earlier segment) at its item. */
  openHit(hit: SearchHit): void {
    const id = hitSession(hit);
    this.closeHistory();
    this.showSession(id);
    void this.engine?.view.reveal(id, hit.uuid, hit.toolUseId ?? null);
  }

  /** The next session that needs the user, after the open one; null when none does. */
  nextAttention(): string | null {
    const e = this.engine;
    const id = e?.store.nextAttention(e.store.openId ?? null) ?? null;
    if (id) this.showSession(id);
    return id;
  }

  /** Opens the "New session" dialog, in the open session's folder unless told one. */
  openNewSession(cwd = this.engine?.store.open?.cwd ?? ''): void {
    this.newSession = { cwd };
  }

  async setDemo(on: boolean): Promise<void> {
    const s = this.engine?.store;
    if (!s || this.busy) return;
    this.busy = true;
    try {
      await (on ? s.startDemo() : s.stopDemo());
    } catch (e) {
      s.error = `Could not ${on ? 'start' : 'stop'} the demo: ${String(e)}`;
    } finally {
      this.busy = false;
    }
  }

  /**
   * The open session's terminal ended: resume it (or its successor) or start a new one in its
   * folder. Returns the session whose terminal to show, or null when nothing started.
   */
  async answerTerminated(how: 'new' | 'resume', size: () => Promise<TermSize | null>): Promise<string | null> {
    const e = this.engine;
    const s = e?.store.open;
    const notice = s ? e?.sup.of(s.sessionId).terminated : null;
    if (!e || !s || !notice || this.terminatedBusy) return null;
    this.terminatedBusy = true;
    this.terminatedError = null;
    try {
      const background = isBackground(s) && !s.supervision;
      if (how === 'resume') {
        const target = notice.resumeSessionId ?? s.sessionId;
        // A background session ended by a limit is started again by Claude Code's service.
        if (background) {
          await new BackgroundControl(e.backend).respawn(s.sessionId);
          e.sup.dismissTerminated(s.sessionId);
          return s.sessionId;
        }
        e.sup.dismissTerminated(s.sessionId);
        await e.sup.resume(target);
        return target;
      }
      const cwd = s.supervision?.cwd ?? s.cwd;
      if (!cwd) return null;
      if (background) {
        // A new background session needs its prompt: the New session dialog, in its folder.
        e.sup.dismissTerminated(s.sessionId);
        this.openNewSession(cwd);
        return null;
      }
      const id = await e.sup.create(cwd, null, await size());
      e.sup.dismissTerminated(s.sessionId);
      return id;
    } catch (err) {
      this.terminatedError = String(err instanceof Error ? err.message : err);
      return null;
    } finally {
      this.terminatedBusy = false;
    }
  }
}

const KEY = Symbol('mimesis.app');

/** Makes the controller the one every component below the caller gets. */
export function provideApp(app: AppController): AppController {
  return setContext(KEY, app);
}

/** The window's controller (from App.svelte's context). */
export function useApp(): AppController {
  const app = getContext<AppController | undefined>(KEY);
  if (!app) throw new Error('useApp: no AppController above this component (App.svelte provides it)');
  return app;
}

/** The connected engine, for components shown only once it is there (the session panes). */
export function useEngine(): Engine {
  const e = useApp().engine;
  if (!e) throw new Error('useEngine: the engine is not connected yet');
  return e;
}

/** The window's controller when there is one above the caller (a test of one component has none). */
export function maybeApp(): AppController | null {
  return getContext<AppController | undefined>(KEY) ?? null;
}

/**
 * The connected engine's backend when there is one above the caller (text drawn outside the
 * window, as in a test of one component, has none). The one way a component reaches the
 * engine is this context: never a prop passed down, never a global.
 */
export function maybeBackend(): Backend | null {
  return getContext<AppController | undefined>(KEY)?.engine?.backend ?? null;
}

/** A context holding `engine` as the window's, for rendering one component on its own (tests). */
export function engineContext(engine: Partial<Engine>): Map<symbol, unknown> {
  // eslint-disable-next-line svelte/prefer-svelte-reactivity -- a context, read once at mount
  return new Map<symbol, unknown>([[KEY, { engine }]]);
}
