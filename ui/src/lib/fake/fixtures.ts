// Generated, realistic-looking sessions and transcripts for the in-browser fake backend.
// Deterministic: the same seed always gives the same data, so screenshots are stable.

import type { Status, Supervision, SupervisionState, TimelineItem, TrackedSession, Usage } from '../types';

export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

type Goal = [goal: string, title: string | null];

export const PROJECTS: { path: string; branches: string[]; goals: Goal[]; files: string[] }[] = [
  {
    path: '/home/dana/src/mimesis',
    branches: ['main', 'feat/roster-virtual', 'fix/compaction-chain'],
    goals: [
      ['fix the flaky parser test in transcript.rs', 'Flaky parser test'],
      ['why does the watcher miss appends on NFS? investigate and fix', 'NFS append detection'],
      ['add a --json flag to `mimesis ls`', null],
      ['find where we leak file descriptors in the tail loop', 'FD leak in tail loop'],
    ],
    files: ['crates/engine/src/transcript.rs', 'crates/engine/src/tail.rs', 'docs/ipc.md', 'crates/cli/src/main.rs'],
  },
  {
    path: '/home/dana/src/ledger-api',
    branches: ['main', 'perf/batch-writes', 'chore/deps'],
    goals: [
      ['add pagination to the /v2/invoices endpoint and update the OpenAPI spec', 'Invoice pagination'],
      ['write a migration that backfills customer_id on old payments', 'Payments backfill'],
      ['profile the batch writer: p99 went from 40ms to 300ms', null],
    ],
    files: ['src/routes/invoices.ts', 'src/db/payments.sql', 'openapi.yaml', 'src/batch/writer.ts'],
  },
  {
    path: '/home/dana/src/infra/terraform-prod',
    branches: ['main', 'rotate-certs'],
    goals: [
      ['rotate the TLS certificates for the staging load balancer', 'Rotate staging certs'],
      ['set up a GitHub Actions matrix for linux/mac/windows', null],
    ],
    files: ['modules/lb/main.tf', 'environments/staging/certs.tf', '.github/workflows/ci.yml'],
  },
  {
    path: '/home/dana/src/website',
    branches: ['main', 'redesign-pricing'],
    goals: [
      ['make the pricing page responsive below 640px', 'Responsive pricing page'],
      ['translate the onboarding emails to German', null],
    ],
    files: ['src/pages/pricing.tsx', 'src/styles/grid.css', 'emails/onboarding/de/welcome.mdx'],
  },
  {
    path: '/home/dana/notes',
    branches: [],
    goals: [['summarise yesterday’s incident notes into a postmortem draft', 'Incident postmortem']],
    files: ['2026-10-31-incident.md', 'postmortems/template.md'],
  },
  {
    path: '/home/dana/src/parser-combinators',
    branches: ['main', 'fix/unicode'],
    goals: [
      ['refactor the tokenizer to stream instead of buffering whole lines', 'Streaming tokenizer'],
      ['bump tokio to 1.48 and fix the deprecation warnings', null],
    ],
    files: ['src/tokenizer.rs', 'src/lib.rs', 'Cargo.toml'],
  },
];

const MODELS = ['claude-opus-4-8', 'claude-sonnet-4-6', 'claude-opus-4-8', 'claude-haiku-4-5-20251001'];

type Project = (typeof PROJECTS)[number];

export const TOOLS: { tool: string; input: (r: () => number, p: Project) => Record<string, unknown> }[] = [
  {
    tool: 'Bash',
    input: (r) => ({
      command: pick(r, ['cargo test -p engine', 'npm run build', 'git status --short', 'rg -n "fn parse" src/', 'terraform plan -out=tfplan', 'pytest -x tests/test_payments.py', 'git diff HEAD~1 --stat']),
      description: 'Run it',
    }),
  },
  { tool: 'Read', input: (r, p) => ({ file_path: `${p.path}/${pick(r, p.files)}` }) },
  {
    tool: 'Edit',
    input: (r, p) => ({ file_path: `${p.path}/${pick(r, p.files)}`, old_string: 'let buf = read_all(&mut f)?;', new_string: 'let buf = read_from(&mut f, offset)?;' }),
  },
  { tool: 'Grep', input: (r) => ({ pattern: pick(r, ['TODO\\(dana\\)', 'unwrap\\(\\)', 'customer_id', 'fn tail_']), path: 'src' }) },
  { tool: 'Glob', input: () => ({ pattern: '**/*.test.ts' }) },
  { tool: 'WebFetch', input: () => ({ url: 'https://docs.rs/notify/latest/notify/', prompt: 'How does PollWatcher detect changes?' }) },
  { tool: 'TodoWrite', input: () => ({ todos: [{ content: 'Reproduce', status: 'completed' }, { content: 'Fix', status: 'in_progress' }] }) },
];

export function projectOf(fs: FakeSession): Project {
  return PROJECTS.find((p) => p.path === (fs.session.repoRoot ?? fs.session.cwd)) ?? PROJECTS[4];
}

const ASSISTANT = [
  'I’ll start by reproducing the failure locally so we know what we’re fixing.',
  'The test fails only when the file is appended while we hold a partial line. The `tail` loop drops the remainder when it re-opens the file.\n\nHere is the fix:\n\n```rust\nif !buf.ends_with(b"\\n") {\n    self.partial.extend_from_slice(&buf);\n    return Ok(None);\n}\n```\n\nI’ll run the suite again.',
  'All 214 tests pass now. I also added a regression test `appends_mid_line_are_kept`.',
  'The endpoint currently loads every invoice into memory. I’ll switch it to keyset pagination on `(created_at, id)` so that pages stay stable while new invoices arrive.',
  'Done. Summary of changes:\n- `routes/invoices.ts`: `cursor` + `limit` query params\n- `openapi.yaml`: documented both, with examples\n- tests for the first, middle and last page',
  'That command needs your approval because it touches production state.',
  'I could not find a call site that closes the watcher handle, so every re-open leaks one descriptor. Use `lsof -p <pid> | wc -l` to confirm.',
];

const THINKING = [
  'The user wants the flaky test fixed. First, figure out whether it is timing-dependent: the test appends from a thread and the reader polls. If the reader sees a partial line it must keep it for the next read…',
  'Keyset pagination is the right call here; offset pagination would skip rows when new invoices are inserted between page fetches.',
];

const OUTPUTS = [
  'running 214 tests\ntest transcript::tests::parses_tool_use ... ok\ntest tail::tests::appends_mid_line_are_kept ... ok\n\ntest result: ok. 214 passed; 0 failed; 0 ignored; finished in 1.84s',
  ' M crates/engine/src/tail.rs\n M crates/engine/src/transcript.rs\n?? crates/engine/tests/appends.rs',
  'crates/engine/src/transcript.rs:88:pub fn parse_line(line: &str) -> Result<Record, ParseError> {\ncrates/engine/src/transcript.rs:131:fn parse_usage(v: &Value) -> Usage {',
  '     1\t//! Reads Claude Code transcripts.\n     2\t\n     3\tuse serde::Deserialize;\n     4\tuse std::io::BufRead;',
  'The file /home/dana/src/mimesis/crates/engine/src/tail.rs has been updated.',
];

const ERRORS = [
  'error[E0502]: cannot borrow `self.partial` as mutable because it is also borrowed as immutable\n  --> crates/engine/src/tail.rs:57:13',
  'Error: terraform plan failed: Error acquiring the state lock (ConditionalCheckFailedException)',
  'FAILED tests/test_payments.py::test_backfill_idempotent - AssertionError: 41 != 42',
];

export const HOSTILE_PROMPT =
  'Can you check why this renders? <img src=x onerror=alert(1)> and <script>alert(1)</script> — it should show as text.';

export interface FakeSession {
  session: TrackedSession;
  total: number;
  /** Items that were appended or changed after generation. */
  extra: Map<number, TimelineItem>;
  seed: number;
  /** A chain predecessor whose items come first (the timeline reads across the chain). */
  base?: FakeSession;
}

/** Sessions Mimesis runs in a PTY in the generated data, and their supervision state. */
const PTY_STATES: Record<number, SupervisionState> = { 0: 'running', 3: 'running', 6: 'suspended' };

export function supervisionFor(s: TrackedSession, state: SupervisionState, now: number): Supervision {
  const created = Date.parse(s.createdAt ?? '') || now - 3_600_000;
  const running = state === 'running' || state === 'restart_pending' || state === 'recovering';
  return {
    state,
    mode: 'persistent',
    agent: 'claude',
    cwd: s.cwd ?? '/home/dana',
    pid: running ? (s.pid ?? 4100) : null,
    processStartedAt: running ? new Date(Math.max(created, now - 1_800_000)).toISOString() : null,
    createdAt: new Date(created).toISOString(),
    recoveryCount: 0,
    restartCount: 0,
    consecutiveCrashes: 0,
    pendingCrashRecovery: false,
    awaitingPermission: s.status === 'waiting_for_approval',
    idleDeadline: state === 'running' && (s.status === 'waiting_for_input' || s.status === 'idle') ? new Date(now + 420_000).toISOString() : null,
    durationDeadline: state === 'terminated' ? null : new Date(created + 14_400_000).toISOString(),
    queuedInputs: 0,
    lastExitCode: null,
    terminatedReason: state === 'terminated' ? 'user' : null,
  };
}

export function makeSession(i: number, now: number, opts: { demo?: boolean; root?: string } = {}): FakeSession {
  const r = rng(1000 + i);
  const project = PROJECTS[i % PROJECTS.length];
  const [goal, title] = project.goals[Math.floor(i / PROJECTS.length) % project.goals.length];
  const id = [8, 4, 4, 4, 12].map((n) => Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(r() * 16)]).join('')).join('-');
  const statuses: Status[] = ['working', 'waiting_for_approval', 'idle', 'waiting_for_input', 'working', 'idle', 'idle'];
  const status = statuses[i % statuses.length];
  const ageSec = i < 8 ? 4 + i * 37 : Math.floor(r() * 3 * 86400);
  const last = new Date(now - ageSec * 1000);
  const created = new Date(last.getTime() - (600 + Math.floor(r() * 7200)) * 1000);
  const tool = TOOLS[Math.floor(r() * 3)];
  const input = tool.input(r, project);
  const target = (input.file_path ?? input.command ?? input.pattern ?? '') as string;
  const usage: Usage = {
    inputTokens: Math.floor(r() * 40_000),
    outputTokens: Math.floor(r() * 120_000),
    cacheCreationInputTokens: Math.floor(r() * 400_000),
    cacheReadInputTokens: Math.floor(r() * (i % 5 === 0 ? 9_000_000 : 1_500_000)),
  };
  const root = opts.root ?? '/home/dana/.claude';
  const projectId = project.path.replace(/[/.]/g, '-');
  const live = i < 10 ? i !== 5 && i !== 9 : r() < 0.15;
  const total = i === 2 ? 350_000 : 40 + Math.floor(r() * 400);
  const session: TrackedSession = {
    sessionId: id,
    projectId,
    cwd: project.path === '/home/dana/notes' && i % 2 ? null : project.path,
    repoRoot: project.branches.length ? project.path : null,
    branch: project.branches.length ? pick(r, project.branches) : null,
    goal: i === 7 ? null : i === 11 ? HOSTILE_PROMPT : goal,
    summary: null,
    title: i === 7 || i === 11 ? null : title,
    status: live ? status : 'idle',
    hasPendingToolUse: live && status === 'waiting_for_approval',
    pendingTool: live && (status === 'waiting_for_approval' || status === 'working') ? { tool: tool.tool, target } : null,
    lastActivityAt: last.toISOString(),
    createdAt: created.toISOString(),
    model: i === 7 ? null : MODELS[i % MODELS.length],
    usage,
    apiError: i === 13,
    compactionCount: i % 6 === 2 ? 1 + (i % 3) : 0,
    superseded: i === 12 || i === 19,
    supersededBy: null,
    supersededAt: null,
    workChainId: id,
    workChainName: null,
    source: 'watcher',
    live,
    pid: live ? 4000 + i : null,
    transcriptPath: `${root}/projects/${projectId}/${id}.jsonl`,
    permissionMode: 'default',
    malformedLines: 0,
    malformedFields: 0,
    chainLength: 1,
    supervision: null,
  };
  const ptyState = opts.demo ? undefined : PTY_STATES[i];
  if (ptyState) {
    session.source = 'pty';
    session.supervision = supervisionFor(session, ptyState, now);
    if (ptyState === 'suspended') {
      session.live = false;
      session.pid = null;
      session.status = 'idle';
      session.pendingTool = null;
      session.hasPendingToolUse = false;
    }
  }
  return { session, total, extra: new Map(), seed: hash(id) };
}

function stamp(fs: FakeSession, index: number): string {
  const end = Date.parse(fs.session.lastActivityAt ?? '') || Date.now();
  const t = end - (fs.total - index) * 7000;
  return new Date(t).toISOString();
}

/** The item at `index`, generated from the session seed (or the live additions). */
export function itemAt(fs: FakeSession, index: number, truncate = true): TimelineItem {
  const extra = fs.extra.get(index);
  if (extra) return extra;
  if (fs.base && index < fs.base.total) return itemAt(fs.base, index, truncate);
  const r = rng(fs.seed ^ Math.imul(index + 1, 2654435761));
  const uuid = `${fs.session.sessionId.slice(0, 8)}-${index}`;
  const timestamp = stamp(fs, index);
  const cycle = index % 23;
  if (index === 0 || cycle === 0) {
    const text = index === 0 ? (fs.session.goal ?? 'hello') : pick(r, ['now run the full suite', 'looks good, commit it', 'can you also update the docs?', HOSTILE_PROMPT, 'no — keep the old behaviour behind a flag']);
    return { kind: 'prompt', uuid, timestamp, text };
  }
  if (cycle === 1) return { kind: 'thinking', uuid, timestamp, text: pick(r, THINKING), redacted: false };
  if (cycle === 22) return { kind: 'system', uuid, timestamp, subtype: 'turn_duration', text: String(Math.floor(3000 + r() * 240_000)) };
  if (index % 997 === 500 || (fs.session.compactionCount > 0 && index === Math.floor(fs.total / 2))) {
    return { kind: 'compaction', uuid, timestamp, trigger: r() < 0.5 ? 'manual' : 'auto', preTokens: 150_000 + Math.floor(r() * 20_000), summary: 'This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n1. The user asked to fix the flaky parser test.\n2. The tail loop dropped partial lines; a fix was applied in tail.rs.\n3. Remaining: run the full suite and commit.' };
  }
  if (index % 331 === 100) return { kind: 'api_error', uuid, timestamp, text: 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', status: 529, retrying: true };
  if (index % 211 === 50) return { kind: 'system', uuid, timestamp, subtype: 'interrupted', text: '[Request interrupted by user]' };
  const x = r();
  if (x < 0.3) return { kind: 'assistant_text', uuid, timestamp, text: pick(r, ASSISTANT), model: fs.session.model };
  const t = TOOLS[Math.floor(r() * TOOLS.length)];
  const isError = r() < 0.08;
  let content = isError ? pick(r, ERRORS) : pick(r, OUTPUTS);
  let truncated = false;
  if (r() < 0.06) {
    const long = Array.from({ length: 400 }, (_, k) => `line ${k + 1}: ${content.split('\n')[0]}`).join('\n');
    content = truncate ? long.slice(0, 2000) : long;
    truncated = truncate;
  }
  const item: TimelineItem = {
    kind: 'tool_call',
    uuid,
    timestamp,
    toolUseId: `toolu_${uuid}`,
    tool: t.tool,
    input: t.input(r, projectOf(fs)),
    result: { content, isError, timestamp },
  };
  if (truncated) item.truncated = true;
  return item;
}

/** Generated sessions: the first few are hand-shaped (a 350k-item transcript, a hostile prompt, PTY sessions, chains). */
export function makeSessions(count: number, now: number, opts: { demo?: boolean; root?: string } = {}): FakeSession[] {
  const list = Array.from({ length: count }, (_, i) => makeSession(i, now, opts));
  // Superseded sessions belong to the chain of the most recent session of their project.
  list.forEach((fs, i) => {
    if (!fs.session.superseded) return;
    const head = list.find((h, j) => j < i && !h.session.superseded && h.session.repoRoot === fs.session.repoRoot && h.session.cwd === fs.session.cwd);
    if (!head) {
      fs.session.superseded = false;
      return;
    }
    linkChain(fs, head, i % 2 ? 'compact' : 'clear');
  });
  return list;
}

/** Makes `prev` the predecessor of `head`: chain fields on both, a segment boundary in the head's timeline. */
export function linkChain(prev: FakeSession, head: FakeSession, reason: 'clear' | 'compact' | 'rollover'): void {
  const at = head.session.createdAt ?? prev.session.lastActivityAt;
  prev.session = { ...prev.session, superseded: true, supersededBy: head.session.sessionId, supersededAt: at, workChainId: head.session.workChainId };
  const length = head.session.chainLength + 1;
  head.session = { ...head.session, chainLength: length, workChainName: head.session.workChainName ?? head.session.title };
  prev.session.chainLength = length;
  const index = Math.min(head.total - 1, Math.max(1, Math.floor(head.total / 3)));
  head.extra.set(index, {
    kind: 'segment',
    uuid: `seg-${prev.session.sessionId.slice(0, 8)}`,
    timestamp: at,
    sessionId: head.session.sessionId,
    previousSessionId: prev.session.sessionId,
    reason,
  });
}
