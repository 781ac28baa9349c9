// Transcript text is untrusted (SPEC U2): it must show up literally and create no element.
import { render } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import RosterRow from '../src/components/RosterRow.svelte';
import TimelineItem from '../src/components/TimelineItem.svelte';
import type { TimelineItem as Item } from '../src/lib/types';
import { session } from './helpers';

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
});
