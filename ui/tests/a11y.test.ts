// An accessibility check of the four views (issue 16): axe-core on the whole app rendered on
// a recording of the real app. jsdom has no layout, so rules that need one (colour contrast)
// are left to tests/contrast.test.ts.
import { fireEvent, render, waitFor } from '@testing-library/svelte';
import axe from 'axe-core';
import { expect, it } from 'vitest';
import App from '../src/App.svelte';
import { recorded } from './recorded';

async function violations(root: Element): Promise<string[]> {
  const r = await axe.run(root, { rules: { 'color-contrast': { enabled: false } }, resultTypes: ['violations'] });
  return r.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
}

it('the roster, a timeline, Settings and New session have no accessibility violations', async () => {
  const b = recorded('demo', { load: 2 });
  const { container } = render(App, { props: { connect: () => Promise.resolve(b) } });
  await waitFor(() => expect(container.querySelectorAll('[data-testid=roster-row]').length).toBeGreaterThan(0));
  const found: Record<string, string[]> = {};
  found.roster = await violations(document.body);

  const row = container.querySelector<HTMLElement>('[data-testid=roster-row]') as HTMLElement;
  await fireEvent.click(row);
  await waitFor(() => expect(container.querySelectorAll('[data-testid=timeline-item]').length).toBeGreaterThan(0));
  found.timeline = await violations(document.body);

  await fireEvent.click(container.querySelector('[data-testid=page-settings]') as HTMLElement);
  await waitFor(() => expect(container.querySelector('[data-testid=settings-view]')).not.toBeNull());
  await waitFor(() => expect(container.querySelector('[data-testid=doctor-report]')?.textContent).not.toContain('Checking…'));
  found.settings = await violations(document.body);

  await fireEvent.click(container.querySelector('[data-testid=page-sessions]') as HTMLElement);
  await fireEvent.click(container.querySelector('[data-testid=new-session-button]') as HTMLElement);
  await waitFor(() => expect(document.querySelector('[data-testid=new-session-dialog]')).not.toBeNull());
  found.newSession = await violations(document.body);

  expect(found).toEqual({ roster: [], timeline: [], settings: [], newSession: [] });
}, 120_000);
