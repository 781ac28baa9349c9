// A very small markdown subset — fenced code blocks and inline `code` — parsed into plain
// segments that templates render as text. It never produces HTML.

export type Inline = { code: boolean; text: string };
export type Block = { type: 'code'; lang: string; text: string } | { type: 'para'; parts: Inline[] };

export function parseBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  let para: string[] = [];
  const flush = () => {
    const body = para.join('\n').replace(/^\n+|\n+$/g, '');
    if (body) blocks.push({ type: 'para', parts: parseInline(body) });
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const fence = /^\s*(```|~~~)\s*([\w+-]*)\s*$/.exec(lines[i]);
    if (!fence) {
      para.push(lines[i]);
      continue;
    }
    const close = lines.findIndex((l, j) => j > i && l.trim() === fence[1]);
    if (close < 0) {
      para.push(lines[i]);
      continue;
    }
    flush();
    blocks.push({ type: 'code', lang: fence[2], text: lines.slice(i + 1, close).join('\n') });
    i = close;
  }
  flush();
  return blocks.filter((b) => b.type === 'code' || b.parts.some((p) => p.text.trim() !== ''));
}

export function parseInline(text: string): Inline[] {
  const out: Inline[] = [];
  const re = /`([^`\n]+)`/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > last) out.push({ code: false, text: text.slice(last, m.index) });
    out.push({ code: true, text: m[1] });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ code: false, text: text.slice(last) });
  return out;
}
