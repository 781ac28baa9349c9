import { expect, it } from 'vitest';
import { parseBlocks, parseInline } from '../src/lib/richtext';

it('splits fences, paragraphs and inline code', () => {
  const blocks = parseBlocks('Intro with `x` here.\n\n```rust\nfn main() {}\n```\nafter');
  expect(blocks).toEqual([
    { type: 'para', parts: [{ code: false, text: 'Intro with ' }, { code: true, text: 'x' }, { code: false, text: ' here.' }] },
    { type: 'code', lang: 'rust', text: 'fn main() {}' },
    { type: 'para', parts: [{ code: false, text: 'after' }] },
  ]);
});

it('leaves an unclosed fence as text', () => {
  expect(parseBlocks('```\nno end')).toEqual([{ type: 'para', parts: [{ code: false, text: '```\nno end' }] }]);
});

it('keeps HTML as plain text segments', () => {
  expect(parseInline('<b>hi</b> `<i>`')).toEqual([
    { code: false, text: '<b>hi</b> ' },
    { code: true, text: '<i>' },
  ]);
});
