// Transcript text is untrusted (SPEC U2): it must show up literally and create no element.
import { render } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import RosterRow from '../src/components/RosterRow.svelte';
import TimelineItem from '../src/components/TimelineItem.svelte';
import type { TimelineItem as Item } from '../src/lib/types';
import { session, snapshot } from './helpers';

const EVIL = '<img src=x onerror="globalThis.pwned=1"> <script>globalThis.pwned=2</script> <a href="javascript:alert(1)">x</a>';
const base = { uuid: 'u1', timestamp: '2026-11-01T12:00:00.000Z' };

const items: Item[] = [
  { ...base, kind: 'prompt', text: EVIL },
  { ...base, kind: 'assistant_text', text: `Here:\n\n\`\`\`html\n${EVIL}\n\`\`\`\nand inline \`${EVIL}\` and ${EVIL}`, model: null },
  { ...base, kind: 'thinking', text: EVIL, redacted: false },
  { ...base, kind: 'tool_call', toolUseId: 't', tool: `Bash${EVIL}`, input: { command: EVIL }, result: { content: EVIL, isError: true, timestamp: null } },
  { ...base, kind: 'compaction', trigger: EVIL, preTokens: 160_000, summary: EVIL },
  { ...base, kind: 'api_error', text: EVIL, status: 500, retrying: false },
  { ...base, kind: 'system', subtype: 'local_command', text: EVIL },
];

function assertInert(container: HTMLElement): void {
  expect(container.querySelector('img, script, a, iframe, object, embed')).toBeNull();
  expect(container.querySelector('[onerror], [href^="javascript"]')).toBeNull();
  expect((globalThis as { pwned?: number }).pwned).toBeUndefined();
}

describe('hostile transcript text', () => {
  it.each(items.map((i) => [i.kind, i] as const))('%s renders as text, expanded and collapsed', (_kind, item) => {
    for (const expanded of [false, true]) {
      const { container, unmount } = render(TimelineItem, { props: { item, expanded } });
      assertInert(container);
      const el = container.querySelector('[data-testid=timeline-item]');
      expect(el?.getAttribute('data-kind')).toBe(item.kind);
      if (expanded || item.kind === 'prompt' || item.kind === 'api_error' || item.kind === 'system') {
        expect(container.textContent).toContain('<img src=x onerror="globalThis.pwned=1">');
        expect(container.textContent).toContain('<script>globalThis.pwned=2</script>');
      }
      unmount();
    }
  });

  it('renders a hostile goal, branch and pending tool in the roster as text', () => {
    const s = session('evil', {
      goal: EVIL,
      branch: EVIL,
      pendingTool: { tool: EVIL, target: EVIL },
      status: 'waiting_for_approval',
    });
    const { container } = render(RosterRow, { props: { session: s, selected: false, open: false, onpick: () => {} } });
    assertInert(container);
    expect(container.textContent).toContain('<script>globalThis.pwned=2</script>');
    const row = container.querySelector('[data-testid=roster-row]');
    expect(row?.getAttribute('data-status')).toBe('waiting_for_approval');
    expect(row?.querySelector('[data-testid=status-badge]')?.getAttribute('data-status')).toBe('waiting_for_approval');
  });

  it('shows the registry name, the permission mode and working subagents as text', () => {
    const s = session('named', { name: EVIL, permissionMode: 'auto', subagents: 2 });
    const { container } = render(RosterRow, { props: { session: s, selected: false, open: false, onpick: () => {} } });
    assertInert(container);
    expect(container.querySelector('[data-testid=session-name]')?.textContent).toBe(EVIL);
    expect(container.querySelector('[data-testid=permission-mode]')?.textContent).toBe('auto');
    expect(container.querySelector('[data-testid=subagents]')?.textContent).toBe('2 subagents');
    const plain = render(RosterRow, { props: { session: session('plain', { permissionMode: 'default' }), selected: false, open: false, onpick: () => {} } });
    expect(plain.container.querySelector('[data-testid=permission-mode]')).toBeNull();
  });
});

// Supervision messages, session names and chain ids are engine/transcript text too.
import { fireEvent, waitFor } from '@testing-library/svelte';
import Banners from '../src/components/pty/Banners.svelte';
import EventLog from '../src/components/pty/EventLog.svelte';
import NewSessionDialog from '../src/components/pty/NewSessionDialog.svelte';
import TerminatedDialog from '../src/components/pty/TerminatedDialog.svelte';
import Toasts from '../src/components/pty/Toasts.svelte';
import { RosterStore } from '../src/lib/store.svelte';
import { applyEvent, emptyNotices } from '../src/lib/supervision';
import { SupervisionStore } from '../src/lib/supervision.svelte';
import type { SupervisionEvent } from '../src/lib/types';
import { MockBackend } from './helpers';

describe('hostile supervision text', () => {
  const at = '2026-11-01T12:00:00.000Z';
  const evs: SupervisionEvent[] = [
    { type: 'session_warning', sessionId: 's', at, reason: EVIL, remainingSeconds: 60, message: EVIL },
    { type: 'session_unhealthy', sessionId: 's', at, message: EVIL },
    { type: 'session_restarting', sessionId: 's', at, reason: EVIL, message: EVIL },
    { type: 'session_terminated', sessionId: 's', at, reason: EVIL, message: EVIL, resumeSessionId: 's' },
  ];

  it('banners, the event log, toasts and the terminated dialog show it as text', async () => {
    const notices = evs.slice(0, 2).reduce(applyEvent, emptyNotices());
    for (const [C, props] of [
      [Banners, { notices: { ...notices, queued: true }, onretry: () => {}, ondismiss: () => {} }],
      [EventLog, { events: evs }],
      [TerminatedDialog, { notice: { message: EVIL, reason: EVIL, resumeSessionId: null, at }, cwd: EVIL, onnew: () => {}, onresume: () => {}, onclose: () => {} }],
    ] as const) {
      const { container, unmount } = render(C as never, { props: props as never });
      assertInert(container);
      expect(container.textContent).toContain('<script>globalThis.pwned=2</script>');
      unmount();
    }
    const sup = new SupervisionStore(new MockBackend(), { later: () => {} });
    sup.receive(evs[2]);
    const { container } = render(Toasts, { props: { sup, openId: null, label: () => EVIL, onopen: () => {} } });
    assertInert(container);
    expect(container.querySelector('[data-testid=toast]')?.textContent).toContain('<img src=x onerror=');
  });

  it('a segment boundary with hostile ids and the new-session dialog with hostile names stay text', async () => {
    const { container, unmount } = render(TimelineItem, {
      props: { item: { ...base, kind: 'segment', sessionId: EVIL, previousSessionId: EVIL, reason: EVIL } },
    });
    assertInert(container);
    expect(container.querySelector('[data-testid=segment-boundary]')).not.toBeNull();
    unmount();

    const b = new MockBackend({ roster_snapshot: () => snapshot({ seq: 0, sessions: [session('x', { cwd: '/p', title: EVIL, goal: EVIL, live: false })], roots: [], demo: false }) });
    const store = new RosterStore(b);
    await store.start();
    const r = render(NewSessionDialog, { props: { store, initialCwd: '/p', oncreate: async () => {}, onclose: () => {} } });
    await fireEvent.input(r.container.querySelector('[data-testid=new-session-cwd]') as HTMLElement, { target: { value: '/p' } });
    await waitFor(() => expect(r.container.textContent).toContain('Resume: <img src=x'));
    assertInert(r.container);
  });
});
