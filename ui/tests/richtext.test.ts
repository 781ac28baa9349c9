import { render } from '@testing-library/svelte';
import { expect, it } from 'vitest';
import RichText from '../src/components/RichText.svelte';
import { lex } from '../src/lib/richtext';

it('renders headings, emphasis, lists, tables, quotes and code as elements of text', () => {
  const md = '# Plan\n\nSome **bold** and *em* and `code`.\n\n- one\n- two\n\n1. first\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n\n> quoted\n\n```rust\nfn main() {}\n```';
  const { container } = render(RichText, { props: { text: md } });
  expect(container.querySelector('[role=heading][aria-level="1"]')?.textContent).toBe('Plan');
  expect(container.querySelector('strong')?.textContent).toBe('bold');
  expect(container.querySelector('em')?.textContent).toBe('em');
  expect(container.querySelectorAll('ul li')).toHaveLength(2);
  expect(container.querySelectorAll('ol li')).toHaveLength(1);
  expect(container.querySelectorAll('table td')).toHaveLength(2);
  expect(container.querySelector('blockquote')?.textContent?.trim()).toBe('quoted');
  expect(container.querySelector('pre.code')?.getAttribute('data-lang')).toBe('rust');
  expect(container.querySelector('pre.code')?.textContent).toBe('fn main() {}');
});

it('keeps raw HTML, scripts and images as text, and links show where they go', () => {
  const md = 'Hi <img src=x onerror=alert(1)> <script>alert(2)</script>\n\n![logo](http://evil/x.png) [docs](javascript:alert(3))\n\n<b>bold?</b>';
  const { container } = render(RichText, { props: { text: md } });
  expect(container.querySelector('img, script, b, a, iframe')).toBeNull();
  expect(container.querySelector('[onerror]')).toBeNull();
  expect(container.textContent).toContain('<img src=x onerror=alert(1)>');
  expect(container.textContent).toContain('[image: logo]');
  expect(container.textContent).toContain('docs (javascript:alert(3))');
});

it('leaves text too long to parse as it is', () => {
  expect(lex('x'.repeat(300_000))).toBeNull();
});
