// The data shapes of docs/ipc.md. That document is the contract; keep this file in step with it.

export type Status = 'working' | 'waiting_for_approval' | 'waiting_for_input' | 'idle';

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
}

export interface PendingTool {
  tool: string;
  target: string;
}

export interface TrackedSession {
  sessionId: string;
  projectId: string;
  cwd: string | null;
  repoRoot: string | null;
  branch: string | null;
  goal: string | null;
  summary: string | null;
  title: string | null;
  status: Status;
  hasPendingToolUse: boolean;
  pendingTool: PendingTool | null;
  lastActivityAt: string | null;
  createdAt: string | null;
  model: string | null;
  usage: Usage;
  apiError: boolean;
  compactionCount: number;
  superseded: boolean;
  supersededBy: string | null;
  supersededAt: string | null;
  workChainId: string;
  workChainName: string | null;
  source: 'watcher' | 'pty';
  live: boolean;
  pid: number | null;
  transcriptPath: string;
  permissionMode: string | null;
  malformedLines: number;
}

export type StoreEvent =
  | { type: 'discovered'; session: TrackedSession }
  | { type: 'updated'; sessionId: string; changes: Partial<TrackedSession> }
  | { type: 'removed'; sessionId: string };

export type SeqEvent = StoreEvent & { seq: number };

export interface RootInfo {
  path: string;
  exists: boolean;
  sessionCount: number;
}

export interface RosterSnapshot {
  seq: number;
  sessions: TrackedSession[];
  roots: RootInfo[];
  demo: boolean;
}

interface ItemBase {
  uuid: string;
  timestamp: string | null;
  /** Long strings were cut; `timeline_item` returns the whole item. */
  truncated?: boolean;
}

export interface PromptItem extends ItemBase {
  kind: 'prompt';
  text: string;
}
export interface AssistantTextItem extends ItemBase {
  kind: 'assistant_text';
  text: string;
  model: string | null;
}
export interface ThinkingItem extends ItemBase {
  kind: 'thinking';
  text: string;
  redacted: boolean;
}
export interface ToolResult {
  content: string;
  isError: boolean;
  timestamp: string | null;
}
export interface ToolCallItem extends ItemBase {
  kind: 'tool_call';
  toolUseId: string;
  tool: string;
  input: unknown;
  result: ToolResult | null;
}
export interface CompactionItem extends ItemBase {
  kind: 'compaction';
  trigger: string;
  preTokens: number | null;
  summary: string | null;
}
export interface ApiErrorItem extends ItemBase {
  kind: 'api_error';
  text: string;
  status: number | null;
  retrying: boolean;
}
export interface SystemItem extends ItemBase {
  kind: 'system';
  subtype: string;
  text: string;
}

export type TimelineItem =
  | PromptItem
  | AssistantTextItem
  | ThinkingItem
  | ToolCallItem
  | CompactionItem
  | ApiErrorItem
  | SystemItem;

export type ItemKind = TimelineItem['kind'];

export interface TimelinePage {
  sessionId: string;
  total: number;
  start: number;
  items: TimelineItem[];
}

export interface TimelineUpdate {
  sessionId: string;
  total: number;
  reset: boolean;
  changed: { index: number; item: TimelineItem }[];
}

/** The commands of docs/ipc.md, with their argument and return types. */
export interface Commands {
  roster_snapshot: { args: undefined; ret: RosterSnapshot };
  open_timeline: { args: { sessionId: string; tail: number }; ret: TimelinePage };
  timeline_range: { args: { sessionId: string; start: number; end: number }; ret: TimelinePage };
  timeline_item: { args: { sessionId: string; index: number }; ret: TimelineItem };
  close_timeline: { args: { sessionId: string }; ret: null };
  start_demo: { args: undefined; ret: null };
  stop_demo: { args: undefined; ret: null };
}

/** The events of docs/ipc.md and their payloads. */
export interface Events {
  'store:events': { events: SeqEvent[] };
  'store:resync': Record<string, never>;
  'timeline:update': TimelineUpdate;
}

/** How the UI shows a tool call that has no result yet, from the session's status. */
export type PendingState = 'approval' | 'running' | 'none';
