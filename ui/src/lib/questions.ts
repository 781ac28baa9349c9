// AskUserQuestion's input as a person reads it: its questions, their options, and the one
// chosen (from the tool's result, "User has answered your questions: "Q"="A". …", or the
// `answers` an answer from the window put in the input). Pure; untrusted text stays text.

export interface AskedOption {
  label: string;
  description: string | null;
  chosen: boolean;
}

export interface AskedQuestion {
  header: string | null;
  question: string;
  multiSelect: boolean;
  options: AskedOption[];
  /** The answer when it is none of the options (typed by the user), else null. */
  other: string | null;
}

/** The answers in an AskUserQuestion result: question → answer. */
export function answersInResult(result: string | null | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!result) return out;
  for (const m of result.matchAll(/"((?:[^"\\]|\\.)*)"="((?:[^"\\]|\\.)*)"/g)) out.set(m[1], m[2]);
  return out;
}

/** The questions of an AskUserQuestion call, or null when its input is not that shape. */
export function askedQuestions(tool: string, input: unknown, result?: string | null): AskedQuestion[] | null {
  if (tool !== 'AskUserQuestion' || !input || typeof input !== 'object') return null;
  const o = input as Record<string, unknown>;
  if (!Array.isArray(o.questions)) return null;
  const given = o.answers && typeof o.answers === 'object' ? (o.answers as Record<string, unknown>) : {};
  const fromResult = answersInResult(result);
  const out: AskedQuestion[] = [];
  for (const q of o.questions as unknown[]) {
    if (!q || typeof q !== 'object') return null;
    const r = q as Record<string, unknown>;
    if (typeof r.question !== 'string') return null;
    const raw = typeof given[r.question] === 'string' ? (given[r.question] as string) : (fromResult.get(r.question) ?? null);
    const picked = new Set(raw === null ? [] : r.multiSelect === true ? raw.split(/,\s*/) : [raw]);
    const options = (Array.isArray(r.options) ? r.options : []).flatMap((x: unknown) => {
      const opt = (x ?? {}) as Record<string, unknown>;
      if (typeof opt.label !== 'string') return [];
      return [{ label: opt.label, description: typeof opt.description === 'string' ? opt.description : null, chosen: picked.has(opt.label) }];
    });
    const matched = options.some((x) => x.chosen);
    out.push({ header: typeof r.header === 'string' ? r.header : null, question: r.question, multiSelect: r.multiSelect === true, options, other: raw !== null && !matched ? raw : null });
  }
  return out;
}
