// What a request and a tool call show: an edit as a diff, a new file as its content, a
// command once; questions answered by label.
// Pure; the text is untrusted and only ever rendered as text.
import type { RequestQuestion } from './types';

export interface DiffLine {
  /** ' ' unchanged, '-' removed, '+' added. */
  mark: ' ' | '-' | '+';
  /** Line number in the old text ('-', ' ') or the new one ('+'), from 1. */
  n: number;
  text: string;
}

/**
 * A replacement as lines: the lines both sides share at the start and the end stay as
 * context, what lies between is removed then added. At most `max` lines.
 */
export function diffLines(oldText: string, newText: string, max = 200): DiffLine[] {
  const a = oldText.split('\n');
  const b = newText.split('\n');
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let end = 0;
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
  const out: DiffLine[] = [];
  for (let i = 0; i < start; i++) out.push({ mark: ' ', n: i + 1, text: a[i] });
  for (let i = start; i < a.length - end; i++) out.push({ mark: '-', n: i + 1, text: a[i] });
  for (let i = start; i < b.length - end; i++) out.push({ mark: '+', n: i + 1, text: b[i] });
  for (let i = a.length - end; i < a.length; i++) out.push({ mark: ' ', n: i + 1, text: a[i] });
  return out.slice(0, max);
}

/** The answers to send, question → answer, once every question has one. */
export function answersOf(
  questions: RequestQuestion[],
  chosen: Record<string, string[]>,
  own: Record<string, string>,
): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const q of questions) {
    const typed = (own[q.question] ?? '').trim();
    const picked = chosen[q.question] ?? [];
    const answer = typed || picked.join(', ');
    if (!answer) return null;
    out[q.question] = answer;
  }
  return out;
}

/**
 * The question a turn ended with: the last paragraph of Claude's last text when it ends
 * with a question mark (markdown emphasis and closing brackets aside), else null.
 */
export function questionOf(text: string | null | undefined, max = 400): string | null {
  if (!text) return null;
  const trimmed = text.trim();
  if (!/\?[\s*_)\]"'”’`]*$/.test(trimmed)) return null;
  const paragraphs = trimmed.split(/\n\s*\n/);
  const last = paragraphs[paragraphs.length - 1].trim();
  return last.length > max ? '…' + last.slice(last.length - max) : last;
}

/** How a tool call's input reads: an edit as its replacements, a new file as its content, a
 * command once; `rest` is what else the input holds (shown as JSON), null when nothing. */
export type InputView =
  | { kind: 'edit'; file: string; edits: { old: string; new: string }[]; rest: Record<string, unknown> | null }
  | { kind: 'write'; file: string; content: string; rest: Record<string, unknown> | null }
  | { kind: 'command'; command: string; rest: Record<string, unknown> | null }
  | { kind: 'other'; rest: unknown };

export function inputView(tool: string, input: unknown): InputView {
  if (!input || typeof input !== 'object' || Array.isArray(input)) return { kind: 'other', rest: input ?? null };
  const o = input as Record<string, unknown>;
  const str = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : null);
  const without = (...keys: string[]): Record<string, unknown> | null => {
    const r = Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
    return Object.keys(r).length ? r : null;
  };
  const file = str('file_path');
  if (file !== null && tool === 'Edit') {
    return { kind: 'edit', file, edits: [{ old: str('old_string') ?? '', new: str('new_string') ?? '' }], rest: without('file_path', 'old_string', 'new_string') };
  }
  if (file !== null && tool === 'MultiEdit' && Array.isArray(o.edits)) {
    const edits = (o.edits as unknown[]).map((e) => {
      const r = (e ?? {}) as Record<string, unknown>;
      return { old: typeof r.old_string === 'string' ? r.old_string : '', new: typeof r.new_string === 'string' ? r.new_string : '' };
    });
    return { kind: 'edit', file, edits, rest: without('file_path', 'edits') };
  }
  if (file !== null && tool === 'Write' && str('content') !== null) {
    return { kind: 'write', file, content: str('content') as string, rest: without('file_path', 'content') };
  }
  const command = str('command');
  if (command !== null) return { kind: 'command', command, rest: without('command') };
  return { kind: 'other', rest: input };
}

/**
 * The engine's sentence about an option ("Runs Bash `echo hi` once") in parts: a part between
 * backticks is code (shown as code, never as markup); an unpaired backtick stays as it is.
 */
export function codeParts(text: string): { text: string; code: boolean }[] {
  const out: { text: string; code: boolean }[] = [];
  let rest = text;
  for (;;) {
    const open = rest.indexOf('`');
    const close = open < 0 ? -1 : rest.indexOf('`', open + 1);
    if (close < 0) {
      if (rest) out.push({ text: rest, code: false });
      return out;
    }
    if (open > 0) out.push({ text: rest.slice(0, open), code: false });
    out.push({ text: rest.slice(open + 1, close), code: true });
    rest = rest.slice(close + 1);
  }
}

/** The same sentence for a tooltip (plain text): code in quotes. */
export function codeQuoted(text: string | null | undefined): string | undefined {
  return text ? codeParts(text).map((p) => (p.code ? `“${p.text}”` : p.text)).join('') : undefined;
}
