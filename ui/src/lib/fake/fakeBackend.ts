// An in-browser stand-in for the engine, speaking the docs/ipc.md contract, so the UI runs
// (and can be screenshotted) in a plain browser. URL switches:
//   ?empty     start with no sessions (the X2 empty state)
//   ?n=2000    how many sessions to generate
//   ?still     no timer: nothing changes by itself (stable screenshots)

import type { Backend, Unlisten } from '../backend';
import type { Commands, Events, RootInfo, SeqEvent, Status, StoreEvent, TimelineItem, TimelinePage, TrackedSession } from '../types';
import { TOOLS, itemAt, makeSessions, projectOf, rng, type FakeSession } from './fixtures';

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
    roster_snapshot: () => ({ seq, sessions: [...sessions.values()].map((f) => f.session), roots: roots(), demo }),
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
  };

  // ---- the clock: live sessions move through the states of SPEC W ----
  function step(): void {
    const live = [...sessions.values()].filter((f) => f.session.live);
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
    if (openTimelines.has(s.sessionId) && changed.length) emit('timeline:update', { sessionId: s.sessionId, total: fs.total, reset: false, changed });
  }
  if (!params.has('still')) setInterval(step, 1400);

  return {
    fake: true,
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
