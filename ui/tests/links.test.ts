import { fireEvent, render, screen, waitFor } from '@testing-library/svelte';
import { describe, expect, it } from 'vitest';
import RichText from '../src/components/RichText.svelte';
import { engineContext } from '../src/lib/app.svelte';
import { openLink, openable } from '../src/lib/links';
import { MockBackend } from './helpers';

describe('links (issue 16 §7)', () => {
  it('only plain web addresses are links', () => {
    for (const ok of ['https://example.com', 'http://localhost:3000/x?y=1', 'HTTPS://docs.rs/tokio']) expect(openable(ok), ok).toBe(true);
    for (const bad of ['javascript:alert(1)', 'file:///etc/passwd', 'data:text/html,x', 'vscode://x', 'https://', 'http://:80', 'https://a b', 'https://a\n', 'example.com'])
      expect(openable(bad), bad).toBe(false);
  });

  it("a transcript's web address opens in the system's browser through the app; anything else stays text", async () => {
    const b = new MockBackend({ open_link: () => null });
    const { container } = render(RichText, {
      props: { text: 'See [the docs](https://docs.rs/tokio) and [this](javascript:alert(1)) or [that](file:///etc/passwd).' },
      context: engineContext({ backend: b }),
    });
    const link = screen.getByRole('link', { name: /the docs/ });
    expect(screen.getAllByRole('link')).toHaveLength(1);
    // No address ever becomes an href: the page cannot navigate anywhere.
    expect(container.querySelector('[href]')).toBeNull();
    await fireEvent.click(link);
    await waitFor(() => expect(b.calls.filter((c) => c.cmd === 'open_link')).toEqual([{ cmd: 'open_link', args: { url: 'https://docs.rs/tokio' } }]));
    await fireEvent.keyDown(link, { key: 'Enter' });
    await waitFor(() => expect(b.count('open_link')).toBe(2));
    expect(container.textContent).toContain('javascript:alert(1)');
  });

  it('says why a link was not opened', async () => {
    const b = new MockBackend({ open_link: () => Promise.reject(new Error('no browser')) });
    expect(await openLink(b, 'javascript:alert(1)')).toMatch(/Only web addresses/);
    expect(await openLink(b, 'https://example.com')).toMatch(/no browser/);
    // Text drawn outside the window (no engine above it) opens nothing.
    expect(await openLink(null, 'https://example.com')).toMatch(/app/);
  });
});
