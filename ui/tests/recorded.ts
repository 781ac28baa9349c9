// The recordings of the real app (recordings/*.jsonl, made by scripts/record-ui) as backends
// for the UI's tests: what the UI meets is what the engine said.
//   demo: load 1 has no Claude Code folder (the empty state), then the demo started, stopped
//         and started again; load 2 is a page opened with the demo running: every session's
//         timeline, Settings, Resources, New session with a folder that does not exist.
//   pty:  the stand-in agent with a 30-second limit: New session (a missing folder, then
//         /home/user/src/shop), a turn, a permission approved from the window, the warning and
//         the end, Resume, the end again, Start New Session, a crash recovered, Delete.
//   faults: the stand-in agent in /home/user/src/shop: a crash while working (recovered after
//         the turn), over the memory limit (restarted with --resume), crashes in a row until
//         unhealthy, Retry.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import { expect } from 'vitest';
import App from '../src/App.svelte';
import { ReplayBackend, parseRecording, type ReplayOptions } from '../src/lib/replay';
import demo from './recordings/demo.jsonl?raw';
import faults from './recordings/faults.jsonl?raw';
import pty from './recordings/pty.jsonl?raw';

const TEXT = { demo, pty, faults };

export function recorded(name: keyof typeof TEXT, opts: ReplayOptions = {}): ReplayBackend {
  return new ReplayBackend(parseRecording(TEXT[name]), { name: `recordings/${name}.jsonl`, ...opts });
}

/** The folder the pty recording runs its sessions in. */
export const PROJECT = '/home/user/src/shop';

/** The whole app on a recording. */
export function app(b: ReplayBackend) {
  const r = render(App, { props: { connect: () => Promise.resolve(b) } });
  const q = <T extends HTMLElement = HTMLElement>(sel: string) => r.container.querySelector<T>(sel);
  const find = (sel: string, timeout = 3000) =>
    waitFor(
      () => {
        const el = document.querySelector<HTMLElement>(sel);
        expect(el).not.toBeNull();
        return el as HTMLElement;
      },
      { timeout },
    );
  return { b, ...r, q, find };
}

/** A `ReplayBackend.play` condition: the supervision event of `type`. */
export const supervision = (type: string) => (event: string, p: unknown) => event === 'supervision:event' && (p as { type: string }).type === type;

/** A `ReplayBackend.play` condition: a store batch that puts a supervised session in `state`. */
export const supervised = (state: string) => (event: string, p: unknown) => event === 'store:events' && JSON.stringify(p).includes(`"state":"${state}"`);

/**
 * New session › the folder › Start, as the recording did; resolves with the session's view.
 * A replay that does not play by itself is stepped until the view shows.
 */
export async function startSession(b: ReplayBackend, folder = PROJECT): Promise<HTMLElement> {
  const one = (sel: string) =>
    waitFor(() => {
      const el = document.querySelector<HTMLElement>(sel);
      expect(el).not.toBeNull();
      return el as HTMLElement;
    });
  await fireEvent.click(await one('[data-testid=new-session-button]'));
  await fireEvent.input(await one('[data-testid=new-session-cwd]'), { target: { value: folder } });
  await waitFor(() => expect(document.querySelector<HTMLButtonElement>('[data-testid=new-session-start]')?.disabled).toBe(false));
  await fireEvent.click(await one('[data-testid=new-session-start]'));
  await waitFor(() => expect(b.calls.map((c) => c.cmd)).toContain('pty_create'));
  return waitFor(() => {
    const view = document.querySelector<HTMLElement>('[data-testid=session-view]');
    if (!view) b.step();
    expect(view).not.toBeNull();
    return view as HTMLElement;
  });
}
