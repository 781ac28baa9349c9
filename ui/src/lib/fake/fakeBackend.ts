// An in-browser stand-in for the engine, speaking the docs/ipc.md contract, so the UI runs
// (and can be screenshotted) in a plain browser. URL switches:
//   ?empty     start with no sessions (the X2 empty state)
//   ?n=2000    how many sessions to generate
//   ?still     no timer: nothing changes by itself (stable screenshots)
// Supervised sessions (each opens the first PTY session through `app:open-session`):
//   ?pty         just open it (the terminal view)
//   ?warning     + a duration warning banner
//   ?terminated  + the warning, then the duration-limit termination dialog
//   ?crash       + a crash detected while working (deferred recovery banner)
//   ?unhealthy   + an abnormal exit, failed recoveries, unhealthy (error banner with Retry)
//   ?toasts      + a memory restart: restarting and ready toasts
//   ?queued      the session is suspended: typed input is queued, then it resumes
//   ?chain       + after a moment a /clear: the session is superseded by a new one
//   ?hooks       hooks start installed
//   ?flood=50    + 50 MB of output on the first attach, then "FLOOD-DONE" (terminal throughput)

import { fill, WORDING, WORDING_TEMPLATES } from '../generated/engine';
import type { Backend, Unlisten } from '../backend';
import { needsYou } from '../format';
import { DEFAULT_SETTINGS, validateSettings } from '../settings';
import type {
  ByteChannel,
  Commands,
  Events,
  HostInfo,
  HookStatus,
  ResourceRow,
  RootInfo,
  SeqEvent,
  Settings,
  Status,
  StoreEvent,
  Supervision,
  SupervisionEvent,
  TimelineItem,
  TimelinePage,
  TrackedSession,
} from '../types';
import { FakePty } from './fakePty';
import { TOOLS, hash, itemAt, linkChain, makeSessions, projectOf, rng, supervisionFor, type FakeSession } from './fixtures';

const HOME_ROOT = '/home/dana/.claude';
const DEMO_ROOT = '/home/dana/.local/share/mimesis/demo';

type Handler = (payload: unknown) => void;

export function createFakeBackend(params: URLSearchParams): Backend {
  const now = Date.now();
  const empty = params.has('empty');
  const count = Number(params.get('n') ?? 24) || 24;
  const sessions = new Map<string, FakeSession>();
  const handlers = new Map<string, Set<Handler>>();
  const openTimelines = new Set<string>();
  const random = rng(42);
  let seq = 0;
  let demo = false;
  const ptys = new Map<string, FakePty>();
  let floodMb = Number(params.get('flood') ?? 0) || 0;
  let attachments = 0;
  let settings: Settings = structuredClone(DEFAULT_SETTINGS);
  let hooksInstalled = params.has('hooks');
  let attention = '';
  let created = 0;
  const metrics = { zombieProcessesCleanedTotal: 2, orphansKilledTotal: 1, recoveriesTotal: 3, suspensionsTotal: 5, terminationsTotal: 1, restartsTotal: 1 };

  for (const fs of empty ? [] : makeSessions(count, now, { root: HOME_ROOT })) add(fs);

  function add(fs: FakeSession): void {
    sessions.set(fs.session.sessionId, fs);
    const s = fs.session;
    // A session that waits for approval or is running a tool ends on that pending call.
    if (s.pendingTool) {
      fs.extra.set(fs.total - 1, pendingCall(fs, fs.total - 1, s.pendingTool.tool, s.pendingTool.target));
    }
  }

  function pendingCall(fs: FakeSession, index: number, tool: string, target: string): TimelineItem {
    const key = tool === 'Bash' ? 'command' : tool === 'Grep' ? 'pattern' : 'file_path';
    return {
      kind: 'tool_call',
      uuid: `${fs.session.sessionId.slice(0, 8)}-${index}`,
      timestamp: new Date().toISOString(),
      toolUseId: `toolu_live_${index}`,
      tool,
      input: { [key]: target },
      result: null,
    };
  }

  let machines: HostInfo[] = [];

  function emit(event: string, payload: unknown): void {
    setTimeout(() => handlers.get(event)?.forEach((h) => h(payload)), 0);
  }

  function storeEvents(events: StoreEvent[]): void {
    const withSeq = events.map((e) => ({ ...e, seq: ++seq }) as SeqEvent);
    emit('store:events', { events: withSeq });
  }

  function roots(): RootInfo[] {
    const list: RootInfo[] = empty
      ? [
          { path: '/home/dana/.claude', exists: false, sessionCount: 0 },
          { path: '/home/dana/.config/claude', exists: false, sessionCount: 0 },
        ]
      : [{ path: HOME_ROOT, exists: true, sessionCount: 0 }];
    if (demo) list.push({ path: DEMO_ROOT, exists: true, sessionCount: 0 });
    for (const r of list) r.sessionCount = [...sessions.values()].filter((f) => f.session.transcriptPath.startsWith(r.path + '/')).length;
    return list;
  }

  function page(fs: FakeSession, start: number, end: number): TimelinePage {
    const s = Math.max(0, start);
    const e = Math.min(end, fs.total);
    const items: TimelineItem[] = [];
    for (let i = s; i < e; i++) items.push(itemAt(fs, i));
    return { sessionId: fs.session.sessionId, total: fs.total, start: s, items };
  }

  function need(id: string): FakeSession {
    const fs = sessions.get(id);
    if (!fs) throw new Error(`no session ${id}`);
    return fs;
  }

  const commands: { [K in keyof Commands]: (args: Commands[K]['args']) => Commands[K]['ret'] } = {
    roster_snapshot: () => {
      // As the app does: the attention set as it is now, for a page that listened after it last changed.
      attention = '';
      checkAttention();
      return { seq, sessions: [...sessions.values()].map((f) => f.session), roots: roots(), demo };
    },
    open_timeline: ({ sessionId, tail }) => {
      const fs = need(sessionId);
      openTimelines.add(sessionId);
      return page(fs, fs.total - tail, fs.total);
    },
    timeline_range: ({ sessionId, start, end }) => page(need(sessionId), start, end),
    timeline_item: ({ sessionId, index }) => itemAt(need(sessionId), index, false),
    close_timeline: ({ sessionId }) => {
      openTimelines.delete(sessionId);
      return null;
    },
    start_demo: () => {
      if (demo) return null;
      demo = true;
      const made = makeSessions(8, Date.now(), { demo: true, root: DEMO_ROOT }).map((fs) => {
        fs.session.sessionId = 'demo-' + fs.session.sessionId.slice(5);
        fs.session.workChainId = fs.session.sessionId;
        fs.session.transcriptPath = `${DEMO_ROOT}/projects/${fs.session.projectId}/${fs.session.sessionId}.jsonl`;
        fs.session.live = true;
        fs.session.superseded = false;
        fs.total = Math.min(fs.total, 300);
        return fs;
      });
      made.forEach(add);
      storeEvents(made.map((fs) => ({ type: 'discovered', session: fs.session })));
      return null;
    },
    stop_demo: () => {
      if (!demo) return null;
      demo = false;
      const gone = [...sessions.keys()].filter((id) => id.startsWith('demo-'));
      gone.forEach((id) => sessions.delete(id));
      storeEvents(gone.map((sessionId) => ({ type: 'removed', sessionId })));
      return null;
    },
    pty_create: ({ cwd, resume }) => {
      if (!cwd.startsWith('/')) throw new Error(`The folder must be an absolute path: ${cwd}`);
      if (cwd.includes('\0') || !(cwd === '/tmp' || cwd.startsWith('/tmp/') || cwd.startsWith('/home/dana'))) throw new Error(`No such folder: ${cwd}`);
      if (resume) {
        const fs = need(resume);
        if (fs.session.supervision && fs.session.supervision.state !== 'terminated') throw new Error('That session is already running in Mimesis');
        startPty(fs, true);
        return { sessionId: resume };
      }
      return { sessionId: newPtySession(cwd).session.sessionId };
    },
    pty_attach: ({ sessionId, onData }) => {
      const pty = ptyOf(sessionId);
      pty.attach(onData);
      if (floodMb > 0) {
        pty.flood(floodMb);
        floodMb = 0;
      }
      return { cols: pty.cols, rows: pty.rows, attachment: ++attachments };
    },
    // The fake streams without flow control: acks are accepted and ignored.
    pty_ack: () => null,
    pty_detach: ({ sessionId }) => {
      ptys.get(sessionId)?.detach();
      return null;
    },
    pty_input: ({ sessionId, data }) => {
      const fs = need(sessionId);
      const sup = fs.session.supervision;
      if (!sup) throw new Error('This session is not supervised by Mimesis');
      if (sup.state === 'terminated') throw new Error('The session has ended: resume it first');
      if (sup.state === 'suspended' || sup.state === 'recovering' || sup.state === 'restart_pending') {
        const kept = (queued.get(sessionId) ?? '') + data;
        queued.set(sessionId, kept);
        // The engine counts messages, not keystrokes.
        const messages = Math.max(1, kept.split('\r').length - (kept.endsWith('\r') ? 1 : 0));
        if (messages !== sup.queuedInputs) setSup(fs, { queuedInputs: messages });
        if (sup.state === 'suspended' && !resuming.has(sessionId)) {
          // P2/P6: the next message resumes a suspended session, then the queue is delivered.
          resuming.add(sessionId);
          later(() => resumeSuspended(fs), 1200);
        }
        return { queued: true };
      }
      ptyOf(sessionId).input(data);
      return { queued: false };
    },
    pty_resize: ({ sessionId, cols, rows }) => {
      const pty = ptyOf(sessionId);
      pty.cols = cols;
      pty.rows = rows;
      return null;
    },
    pty_stop: ({ sessionId }) => {
      const fs = needSup(sessionId);
      terminate(fs, 'user', WORDING.stoppedByUser);
      return null;
    },
    pty_resume: ({ sessionId }) => {
      const fs = needSup(sessionId);
      const st = fs.session.supervision?.state;
      if (st !== 'suspended' && st !== 'terminated' && st !== 'unhealthy') throw new Error(`Cannot resume a session that is ${st}`);
      if (st === 'suspended') resumeSuspended(fs);
      else startPty(fs, true);
      return null;
    },
    pty_restart: ({ sessionId }) => {
      const fs = needSup(sessionId);
      restart(fs, 'user', WORDING.restarting);
      return null;
    },
    approvals_pending: () => [],
    set_viewing: () => null,
    folder_check: ({ path }) => (path.startsWith('/') ? null : 'Give the whole path, starting with /.'),
    // Machines: the preview connects to none; each added one says so.
    hosts_list: () => machines,
    host_retry: () => null,
    // The preview opens nothing: a browser tab of its own would be a surprise.
    open_link: () => null,
    host_install: () => null,
    host_add: ({ host }) => {
      if (!/^[A-Za-z0-9][A-Za-z0-9._@:/[\]-]*$/.test(host)) throw new Error(`"${host}" is not an SSH destination`);
      if (machines.some((m) => m.host === host)) throw new Error(`${host} is already in the list`);
      machines = [...machines, { host, state: 'unreachable', message: 'the in-browser preview connects to no machine', lastSeen: null, sessions: 0, version: null, retryInSecs: null }];
      emit('hosts:changed', { hosts: machines });
      return null;
    },
    host_remove: ({ host }) => {
      machines = machines.filter((m) => m.host !== host);
      emit('hosts:changed', { hosts: machines });
      return null;
    },
    pick_folder: ({ start }) => start ?? '/tmp',
    gpu_available: () => true,
    focus_terminal: () => {
      throw new Error('the demo sessions have no terminal');
    },
    approval_decide: () => {
      throw new Error('no open permission request matches (the demo has none)');
    },
    pty_answer: ({ sessionId }) => {
      needSup(sessionId);
      return 'Yes';
    },
    pty_dialog: ({ sessionId }) => {
      needSup(sessionId);
      return null;
    },
    pty_delete: ({ sessionId }) => {
      const fs = needSup(sessionId);
      ptys.get(sessionId)?.detach();
      ptys.delete(sessionId);
      update(fs, { supervision: null, live: false, pid: null });
      return null;
    },
    resources: () => {
      const t = Date.now();
      const rows: ResourceRow[] = [];
      const rss: Record<string, number> = {};
      for (const fs of sessions.values()) {
        const sup = fs.session.supervision;
        if (!sup || sup.state === 'terminated') continue;
        const started = sup.processStartedAt ? Date.parse(sup.processStartedAt) : null;
        const base = 180 + (hash(fs.session.sessionId) % 900);
        const bytes = sup.pid ? Math.round((base + ((t / 1000) % 60)) * 1024 * 1024) : 0;
        if (sup.pid) rss[fs.session.sessionId] = bytes;
        rows.push({
          sessionId: fs.session.sessionId,
          cwd: sup.cwd,
          pid: sup.pid,
          startedAt: sup.processStartedAt,
          uptimeSecs: started ? Math.floor((t - started) / 1000) : 0,
          rssBytes: bytes,
          cpuPercent: sup.pid ? (fs.session.status === 'working' ? 23.4 + (hash(fs.session.sessionId) % 40) : 0.3) : 0,
          state: sup.state,
          idleRemainingSecs: sup.idleDeadline ? Math.max(0, Math.floor((Date.parse(sup.idleDeadline) - t) / 1000)) : null,
          recoveryCount: sup.recoveryCount,
        });
      }
      return { rows, metrics: { rssBytes: rss, ...metrics } };
    },
    settings_get: () => structuredClone(settings),
    settings_set: ({ settings: next }) => {
      const errors = validateSettings(next);
      // A check only the engine can make: the agent command must be found.
      const cmd = next.agent.command.trim();
      if (cmd && !cmd.startsWith('/') && !['claude', 'mimesis-stand-in'].includes(cmd)) {
        errors.push({ field: 'agent.command', message: `${cmd} was not found on PATH` });
      }
      if (errors.length === 0) settings = structuredClone(next);
      return { settings: structuredClone(settings), errors };
    },
    hooks_status: () => hookStatus(),
    hooks_install: () => {
      hooksInstalled = true;
      return hookStatus();
    },
    hooks_uninstall: () => {
      hooksInstalled = false;
      return hookStatus();
    },
    doctor: () => {
      const installed = hookStatus().some((h) => h.installed);
      return {
        lines: [
          'mimesis 0.1.0',
          ...roots().map((r) => `config folder ${r.path}: ${r.exists ? `${r.sessionCount} sessions, hooks ${installed ? 'installed' : 'not installed'}` : 'missing'}`),
          'Claude Code: 2.1.197 (newest session written by 2.1.197)',
          'file watching: ok',
        ],
        problems: installed ? [] : ['hooks are not installed (run `mimesis hooks install` for exact statuses and work chains)'],
        report: { mimesisVersion: '0.1.0', supervisedSessions: [...sessions.values()].filter((f) => f.session.supervision).length },
      };
    },
    settings_in_effect: () => ({ overrides: [], notApplied: [] }),
  };

  // ---- supervised sessions ----
  const queued = new Map<string, string>();
  const resuming = new Set<string>();
  const later = (fn: () => void, ms: number) => void setTimeout(fn, ms);

  function hookStatus(): HookStatus[] {
    return roots()
      .filter((r) => r.exists)
      .map((r) => ({ root: r.path, settingsPath: `${r.path}/settings.json`, installed: hooksInstalled, partial: false, error: null }));
  }

  function needSup(id: string): FakeSession {
    const fs = need(id);
    if (!fs.session.supervision) throw new Error('This session is not supervised by Mimesis');
    return fs;
  }

  function ptyOf(id: string): FakePty {
    let pty = ptys.get(id);
    if (!pty) {
      const fs = needSup(id);
      pty = makePty(fs);
      pty.welcome(true);
    }
    return pty;
  }

  function makePty(fs: FakeSession): FakePty {
    const pty = new FakePty(fs.session.supervision?.cwd ?? fs.session.cwd ?? '/home/dana', {
      onLine: (line) => {
        const at = new Date().toISOString();
        const cur = sessions.get(fs.session.sessionId) ?? fs;
        appendItems(cur, [{ kind: 'prompt', uuid: `${cur.session.sessionId.slice(0, 8)}-${cur.total}`, timestamp: at, text: line }]);
        update(cur, { status: 'working', lastActivityAt: at, goal: cur.session.goal ?? line, pendingTool: null, hasPendingToolUse: false });
      },
      onReply: (_line, reply) => {
        const at = new Date().toISOString();
        const cur = sessions.get(fs.session.sessionId) ?? fs;
        appendItems(cur, [{ kind: 'assistant_text', uuid: `${cur.session.sessionId.slice(0, 8)}-${cur.total}`, timestamp: at, text: reply, model: 'claude-opus-4-8' }]);
        update(cur, { status: 'waiting_for_input', lastActivityAt: at });
      },
    });
    ptys.set(fs.session.sessionId, pty);
    return pty;
  }

  function appendItems(fs: FakeSession, items: TimelineItem[]): void {
    const changed = items.map((item) => {
      const index = fs.total++;
      fs.extra.set(index, item);
      return { index, item };
    });
    if (openTimelines.has(fs.session.sessionId)) emit('timeline:update', { sessionId: fs.session.sessionId, total: fs.total, reset: false, changed });
  }

  function update(fs: FakeSession, changes: Partial<TrackedSession>): void {
    fs.session = { ...fs.session, ...changes };
    storeEvents([{ type: 'updated', sessionId: fs.session.sessionId, changes }]);
    checkAttention();
  }

  function setSup(fs: FakeSession, changes: Partial<Supervision>, more: Partial<TrackedSession> = {}): void {
    const sup = fs.session.supervision;
    if (!sup) return;
    update(fs, { ...more, supervision: { ...sup, ...changes } });
  }

  function event(ev: SupervisionEvent): void {
    emit('supervision:event', ev);
  }

  const nowIso = () => new Date().toISOString();

  /** Starts (or resumes) the agent for a session: a running supervision, a welcome screen. */
  function startPty(fs: FakeSession, resumed: boolean, announce = resumed): void {
    const t = Date.now();
    const pid = 5000 + (hash(fs.session.sessionId + String(t)) % 30000);
    const old = fs.session.supervision;
    const base = old ?? supervisionFor({ ...fs.session, status: 'waiting_for_input' }, 'running', t);
    const sup: Supervision = {
      ...base,
      state: 'running',
      mode: 'persistent',
      pid,
      processStartedAt: new Date(t).toISOString(),
      createdAt: old && old.state !== 'terminated' ? old.createdAt : new Date(t).toISOString(),
      durationDeadline: new Date(t + settings.limits.maxDurationSecs * 1000).toISOString(),
      idleDeadline: new Date(t + settings.limits.idleTimeoutSecs * 1000).toISOString(),
      terminatedReason: null,
      consecutiveCrashes: 0,
      queuedInputs: 0,
    };
    update(fs, { source: 'pty', live: true, pid, supervision: sup, status: 'waiting_for_input' });
    const pty = ptys.get(fs.session.sessionId) ?? makePty(fs);
    if (announce && old) pty.notice('Resuming session…');
    pty.welcome(resumed);
    event({ type: 'session_started', sessionId: fs.session.sessionId, at: nowIso() });
    if (announce && old) event({ type: 'session_resumed', sessionId: fs.session.sessionId, at: nowIso(), message: WORDING.resumedByUser });
  }

  function newPtySession(cwd: string): FakeSession {
    const t = Date.now();
    const r = rng(hash(cwd) + ++created);
    const id = [8, 4, 4, 4, 12].map((n) => Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(r() * 16)]).join('')).join('-');
    const projectId = cwd.replace(/[/.]/g, '-');
    const at = new Date(t).toISOString();
    const session: TrackedSession = {
      sessionId: id,
      projectId,
      cwd,
      repoRoot: cwd.startsWith('/home/dana/src/') ? cwd : null,
      branch: cwd.startsWith('/home/dana/src/') ? 'main' : null,
      goal: null,
      summary: null,
      title: null,
      status: 'waiting_for_input',
      hasPendingToolUse: false,
      pendingTool: null,
      lastActivityAt: at,
      createdAt: at,
      model: 'claude-opus-4-8',
      usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 },
      apiError: false,
      compactionCount: 0,
      superseded: false,
      supersededBy: null,
      supersededAt: null,
      workChainId: id,
      workChainName: null,
      source: 'pty',
      live: true,
      pid: null,
      transcriptPath: `${HOME_ROOT}/projects/${projectId}/${id}.jsonl`,
      permissionMode: 'default',
      malformedLines: 0,
      malformedFields: 0,
      chainLength: 1,
      supervision: null,
    };
    const fs: FakeSession = { session, total: 0, extra: new Map(), seed: hash(id) };
    add(fs);
    storeEvents([{ type: 'discovered', session }]);
    startPty(fs, false);
    return fs;
  }

  function terminate(fs: FakeSession, reason: string, message: string): void {
    const id = fs.session.sessionId;
    setSup(fs, { state: 'terminated', pid: null, processStartedAt: null, idleDeadline: null, durationDeadline: null, terminatedReason: reason }, { live: false, pid: null, status: 'idle' });
    ptys.get(id)?.notice(`■ ${message}`);
    metrics.terminationsTotal++;
    event({ type: 'session_terminated', sessionId: id, at: nowIso(), reason, message, resumeSessionId: id });
  }

  function restart(fs: FakeSession, reason: string, message: string): void {
    const id = fs.session.sessionId;
    setSup(fs, { state: 'restart_pending' });
    event({ type: 'session_restarting', sessionId: id, at: nowIso(), reason, message });
    later(() => {
      metrics.restartsTotal++;
      const sup = fs.session.supervision;
      if (!sup) return;
      setSup(fs, { restartCount: sup.restartCount + 1 });
      ptys.get(id)?.notice('Restarted with --resume.');
      startPty(fs, true, false);
      event({ type: 'session_ready', sessionId: id, at: nowIso(), status: 'resumed', message: WORDING.restored });
    }, 900);
  }

  function resumeSuspended(fs: FakeSession): void {
    const id = fs.session.sessionId;
    resuming.delete(id);
    const pty = ptys.get(id) ?? makePty(fs);
    const idleMin = Math.max(1, Math.round((Date.now() - (Date.parse(fs.session.lastActivityAt ?? '') || Date.now())) / 60_000));
    const message = fill(WORDING_TEMPLATES.resuming, { idleMin });
    pty.notice(message);
    startPty(fs, true, false);
    event({ type: 'session_resumed', sessionId: id, at: nowIso(), message });
    const q = queued.get(id);
    queued.delete(id);
    if (q) later(() => pty.input(q), 200);
  }

  /** C2: a /clear in `fs` starts a successor in the same terminal; `fs` is superseded by it. */
  function clearInto(fs: FakeSession): void {
    const t = Date.now();
    const succ = newPtyFollower(fs, t);
    linkChain(fs, succ, 'clear');
    fs.session = { ...fs.session, supervision: null, live: false, source: 'pty' };
    storeEvents([
      { type: 'discovered', session: succ.session },
      { type: 'updated', sessionId: fs.session.sessionId, changes: { superseded: true, supersededBy: succ.session.sessionId, supersededAt: fs.session.supersededAt, workChainId: succ.session.workChainId, chainLength: succ.session.chainLength, supervision: null, live: false } },
    ]);
    checkAttention();
  }

  function newPtyFollower(prev: FakeSession, t: number): FakeSession {
    const r = rng(hash(prev.session.sessionId) + 7);
    const id = [8, 4, 4, 4, 12].map((n) => Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(r() * 16)]).join('')).join('-');
    const at = new Date(t).toISOString();
    const session: TrackedSession = {
      ...prev.session,
      sessionId: id,
      goal: 'now add a regression test for the partial-line case',
      title: null,
      status: 'waiting_for_input',
      pendingTool: null,
      hasPendingToolUse: false,
      lastActivityAt: at,
      createdAt: at,
      transcriptPath: prev.session.transcriptPath.replace(prev.session.sessionId, id),
      workChainId: prev.session.workChainId,
      superseded: false,
      supersededBy: null,
      supersededAt: null,
      chainLength: prev.session.chainLength,
      compactionCount: 0,
    };
    // The same terminal carries on: the PTY moves to the successor.
    const pty = ptys.get(prev.session.sessionId);
    if (pty) {
      ptys.delete(prev.session.sessionId);
      ptys.set(id, pty);
      pty.print('/clear');
      pty.notice('(no content)');
      pty.prompt();
    }
    const base: FakeSession = { session: prev.session, total: prev.total, extra: prev.extra, seed: prev.seed, base: prev.base };
    const fs: FakeSession = { session, total: prev.total + 1, extra: new Map(), seed: hash(id), base };
    fs.session.supervision = prev.session.supervision ? { ...prev.session.supervision } : null;
    add(fs);
    fs.extra.set(prev.total, { kind: 'segment', uuid: `seg-${id.slice(0, 8)}`, timestamp: at, sessionId: id, previousSessionId: prev.session.sessionId, reason: 'clear' });
    fs.extra.set(prev.total + 1, { kind: 'prompt', uuid: `${id.slice(0, 8)}-p`, timestamp: at, text: session.goal ?? '' });
    fs.total = prev.total + 2;
    return fs;
  }

  function checkAttention(): void {
    const ids = [...sessions.values()]
      .filter((f) => !f.session.superseded)
      .filter((f) => needsYou(f.session.status) || f.session.supervision?.state === 'unhealthy' || (f.session.supervision?.state === 'terminated' && f.session.supervision.terminatedReason !== 'user'))
      .sort((a, b) => ((a.session.lastActivityAt ?? '') < (b.session.lastActivityAt ?? '') ? 1 : -1))
      .map((f) => f.session.sessionId);
    const key = ids.join(',');
    if (key === attention) return;
    attention = key;
    emit('attention:changed', { count: ids.length, sessionIds: ids, title: ids.length === 0 ? 'Mimesis' : `Mimesis — ${ids.length} need${ids.length === 1 ? 's' : ''} you` });
  }

  // ---- scripted supervision stories (URL switches) ----
  const stories = ['pty', 'flood', 'warning', 'terminated', 'crash', 'unhealthy', 'toasts', 'queued', 'chain'];
  const story = stories.find((k) => params.has(k));
  const first = [...sessions.values()].find((f) => f.session.supervision?.state === 'running');
  if (story && first) {
    const id = first.session.sessionId;
    if (story === 'queued') {
      setSupQuiet(first, { state: 'suspended', pid: null, processStartedAt: null, idleDeadline: null }, { live: false, pid: null, status: 'idle' });
    }
    setTimeout(() => emit('app:open-session', { sessionId: id }), 60);
    const at = () => nowIso();
    const script: Record<string, () => void> = {
      warning: () => {
        setSup(first, { durationDeadline: new Date(Date.now() + 1_440_000).toISOString() });
        warn();
      },
      terminated: () => {
        script.warning();
        later(() => terminate(first, 'duration_limit', fill(WORDING_TEMPLATES.durationEnded, { limit: '4-hour' })), 500);
      },
      crash: () => {
        setSup(first, { pendingCrashRecovery: true }, { status: 'working' });
        ptyOf(id).print('\r\n\x1b[31mRangeError: Maximum call stack size exceeded\x1b[0m\r\n    at Object.render (cli.js:1:402)\r\n');
        event({ type: 'crash_detected', sessionId: id, at: at(), deferred: true });
      },
      unhealthy: () => {
        ptyOf(id).print('\r\n\x1b[31mRangeError: Maximum call stack size exceeded\x1b[0m\r\n\x1b[2m[process exited with code 1]\x1b[0m\r\n');
        event({ type: 'error', sessionId: id, at: at(), exitCode: 1, message: fill(WORDING_TEMPLATES.abnormalExit, { exitCode: 1, lastLine: 'RangeError: Maximum call stack size exceeded' }) });
        later(() => event({ type: 'recovery_failed', sessionId: id, at: at(), message: fill(WORDING_TEMPLATES.recoveryFailed, { sessionId: id }) }), 150);
        later(() => {
          setSup(first, { state: 'unhealthy', mode: 'one_shot', pid: null, consecutiveCrashes: 3, lastExitCode: 1 }, { live: false, pid: null, status: 'idle', pendingTool: null });
          event({ type: 'session_unhealthy', sessionId: id, at: at(), message: fill(WORDING_TEMPLATES.unhealthy, { crashes: 3 }) });
        }, 300);
      },
      toasts: () => {
        restart(first, 'memory_limit', WORDING.restarting);
      },
      chain: () => later(() => clearInto(first), 1500),
    };
    const warn = () => event({ type: 'session_warning', sessionId: id, at: at(), reason: 'duration', remainingSeconds: 1440, message: fill(WORDING_TEMPLATES.durationWarning, { duration: '24 minutes' }) });
    setTimeout(() => script[story]?.(), 400);
  }

  /** Changes supervision before anyone listens (no event). */
  function setSupQuiet(fs: FakeSession, changes: Partial<Supervision>, more: Partial<TrackedSession>): void {
    if (fs.session.supervision) fs.session = { ...fs.session, ...more, supervision: { ...fs.session.supervision, ...changes } };
  }

  setTimeout(checkAttention, 30);

  // ---- the clock: live sessions move through the states of SPEC W ----
  function step(): void {
    // Sessions with a (fake) terminal change only through it.
    const live = [...sessions.values()].filter((f) => f.session.live && !ptys.has(f.session.sessionId));
    if (live.length === 0) return;
    // Mostly the first few (the ones on screen), sometimes any.
    const fs = random() < 0.7 ? live[Math.floor(random() * Math.min(live.length, 8))] : live[Math.floor(random() * live.length)];
    const s = fs.session;
    const at = new Date().toISOString();
    const changed: { index: number; item: TimelineItem }[] = [];
    const append = (item: TimelineItem) => {
      changed.push({ index: fs.total, item });
      fs.extra.set(fs.total, item);
      fs.total++;
    };
    const resolvePending = (isError = false) => {
      const last = fs.extra.get(fs.total - 1);
      if (last?.kind === 'tool_call' && !last.result) {
        const done: TimelineItem = { ...last, result: { content: isError ? 'error: exit status 101' : 'ok', isError, timestamp: at } };
        fs.extra.set(fs.total - 1, done);
        changed.push({ index: fs.total - 1, item: done });
      }
    };
    let status: Status = s.status;
    let pendingTool = s.pendingTool;
    const r = random();
    const uuid = () => `${s.sessionId.slice(0, 8)}-${fs.total}`;
    if (s.status === 'working') {
      resolvePending(r < 0.1);
      if (r < 0.2) {
        status = 'waiting_for_approval';
        pendingTool = { tool: 'Bash', target: 'git push origin HEAD' };
        append(pendingCall(fs, fs.total, 'Bash', 'git push origin HEAD'));
      } else if (r < 0.35) {
        status = 'waiting_for_input';
        pendingTool = null;
        append({ kind: 'assistant_text', uuid: uuid(), timestamp: at, text: 'Done — all tests pass. Want me to open a PR?', model: s.model });
      } else {
        const t = TOOLS[Math.floor(random() * 4)];
        const input = t.input(random, projectOf(fs));
        const target = String(input.command ?? input.file_path ?? input.pattern ?? '');
        pendingTool = { tool: t.tool, target };
        append({ kind: 'tool_call', uuid: uuid(), timestamp: at, toolUseId: `toolu_${uuid()}`, tool: t.tool, input, result: null });
      }
    } else if (s.status === 'waiting_for_approval') {
      if (r < 0.5) {
        resolvePending();
        status = 'working';
        pendingTool = null;
      } else return;
    } else if (s.status === 'waiting_for_input' || s.status === 'idle') {
      if (r < 0.4) {
        append({ kind: 'prompt', uuid: uuid(), timestamp: at, text: 'yes, go ahead' });
        status = 'working';
      } else if (s.status === 'waiting_for_input' && r > 0.9) {
        status = 'idle';
      } else return;
    }
    const usage = { ...s.usage, outputTokens: s.usage.outputTokens + Math.floor(random() * 900), cacheReadInputTokens: s.usage.cacheReadInputTokens + Math.floor(random() * 30_000) };
    const changes: Partial<TrackedSession> = { status, pendingTool, hasPendingToolUse: status === 'waiting_for_approval', lastActivityAt: at, usage };
    fs.session = { ...s, ...changes };
    storeEvents([{ type: 'updated', sessionId: s.sessionId, changes }]);
    checkAttention();
    if (openTimelines.has(s.sessionId) && changed.length) emit('timeline:update', { sessionId: s.sessionId, total: fs.total, reset: false, changed });
  }
  if (!params.has('still')) setInterval(step, 1400);

  return {
    fake: true,
    channel: (onmessage: (data: ArrayBuffer) => void): ByteChannel => ({ onmessage }),
    call: ((cmd: keyof Commands, args?: unknown) =>
      new Promise((resolve, reject) => {
        setTimeout(() => {
          try {
            resolve((commands[cmd] as (a: unknown) => never)(args));
          } catch (e) {
            reject(e instanceof Error ? e.message : String(e));
          }
        }, 15);
      })) as Backend['call'],
    on: <E extends keyof Events>(event: E, handler: (payload: Events[E]) => void): Promise<Unlisten> => {
      let set = handlers.get(event);
      if (!set) handlers.set(event, (set = new Set()));
      const h = handler as Handler;
      set.add(h);
      return Promise.resolve(() => set.delete(h));
    },
  };
}
