// Transcript markdown as a tree of plain parts that templates render as text: parsed by
// `marked`'s lexer (a maintained CommonMark/GFM parser), never rendered to HTML. Raw HTML
// in the text stays text; links are text with their address beside them; images are
// named, never loaded.

import { Lexer, type Token, type Tokens } from 'marked';

/** Above this many characters the text is shown as it is (lexing cost, and such text is
 * rarely prose). */
export const MARKDOWN_MAX = 200_000;

export function lex(text: string): Token[] | null {
  if (text.length > MARKDOWN_MAX) return null;
  try {
    return new Lexer({ gfm: true, breaks: true }).lex(text);
  } catch {
    return null;
  }
}

/** The inline tokens of a block token, or one text part when it has none. */
export function inlineOf(t: Token): Token[] {
  const inner = (t as Tokens.Generic).tokens;
  return Array.isArray(inner) && inner.length ? inner : [{ type: 'text', raw: t.raw, text: 'text' in t ? String(t.text) : t.raw }];
}
