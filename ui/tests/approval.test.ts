import { describe, expect, it } from 'vitest';
import { answersOf, codeParts, codeQuoted, diffLines, inputView, questionOf } from '../src/lib/approval';

describe('diffLines', () => {
  it('keeps shared lines as context and shows the change as removed then added', () => {
    const d = diffLines('a\nb\nc\nd', 'a\nB\nB2\nd');
    expect(d.map((l) => `${l.mark}${l.n} ${l.text}`)).toEqual([' 1 a', '-2 b', '-3 c', '+2 B', '+3 B2', ' 4 d']);
  });
  it('shows a new file as added lines and caps the length', () => {
    expect(diffLines('', 'x\ny').map((l) => l.mark)).toEqual(['-', '+', '+']);
    expect(diffLines('', 'x\n'.repeat(500), 10)).toHaveLength(10);
  });
});

describe('answersOf', () => {
  const q = (question: string) => ({ question, options: [{ label: 'A' }, { label: 'B' }], multiSelect: false });
  it('needs an answer to every question, the typed words winning over a pick', () => {
    expect(answersOf([q('one?'), q('two?')], { 'one?': ['A'] }, {})).toBeNull();
    expect(answersOf([q('one?'), q('two?')], { 'one?': ['A'], 'two?': ['A', 'B'] }, { 'one?': ' mine ' })).toEqual({
      'one?': 'mine',
      'two?': 'A, B',
    });
  });
});

describe('questionOf', () => {
  it('finds the question a turn ended with, and nothing when it ended otherwise', () => {
    expect(questionOf('I looked at both.\n\nShould I **merge them?**')).toBe('Should I **merge them?**');
    expect(questionOf('Done. Tests pass.')).toBeNull();
    expect(questionOf('Is it a? No, it is b.')).toBeNull();
    expect(questionOf(null)).toBeNull();
    expect(questionOf('x'.repeat(500) + '?', 10)).toBe('…' + 'x'.repeat(9) + '?');
  });
});

describe('inputView', () => {
  it('reads an edit as its replacements, a new file as its content and a command once', () => {
    expect(inputView('Edit', { file_path: '/a', old_string: 'x', new_string: 'y', replace_all: true })).toEqual({
      kind: 'edit',
      file: '/a',
      edits: [{ old: 'x', new: 'y' }],
      rest: { replace_all: true },
    });
    expect(inputView('MultiEdit', { file_path: '/a', edits: [{ old_string: 'a' }, null] })).toMatchObject({ kind: 'edit', edits: [{ old: 'a', new: '' }, { old: '', new: '' }], rest: null });
    expect(inputView('Write', { file_path: '/b', content: 'hi' })).toEqual({ kind: 'write', file: '/b', content: 'hi', rest: null });
    expect(inputView('Bash', { command: 'ls', description: 'list' })).toEqual({ kind: 'command', command: 'ls', rest: { description: 'list' } });
    expect(inputView('Grep', { pattern: 'x' })).toEqual({ kind: 'other', rest: { pattern: 'x' } });
    expect(inputView('Edit', 'odd')).toEqual({ kind: 'other', rest: 'odd' });
  });
});

describe('codeParts', () => {
  it("splits the engine's sentence at its backticks; an unpaired one stays", () => {
    expect(codeParts('Runs Bash `echo hi` once (Enter).')).toEqual([
      { text: 'Runs Bash ', code: false },
      { text: 'echo hi', code: true },
      { text: ' once (Enter).', code: false },
    ]);
    expect(codeParts('`a``b`')).toEqual([
      { text: 'a', code: true },
      { text: 'b', code: true },
    ]);
    expect(codeParts('a ` b')).toEqual([{ text: 'a ` b', code: false }]);
    expect(codeParts('')).toEqual([]);
    expect(codeQuoted('Cancels Bash `curl` (Esc)')).toBe('Cancels Bash “curl” (Esc)');
    expect(codeQuoted(null)).toBeUndefined();
  });
});
