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
  /** Values that cannot be right (a token count of 1.5e300), counted and taken as absent. */
  malformedFields: number;
  /** Subagents working right now (SubagentStart/-Stop hooks), 0 without hooks. */
  subagents?: number;
  /** What the session cost (docs/ipc.md `cost`); absent from older engines. */
  cost?: Cost;
  /** From a first quick read while the initial index runs: usage may still grow (absent: final). */
  provisional?: boolean;
  /** The name Claude Code gave the session in its live registry (2.1.330: `proj-73`), or null. */
  name?: string | null;
  /** Sessions in the work chain (1 when alone). */
  chainLength: number;
  /**
   * The SSH destination of the machine it runs on, or null for this machine (issue 13). A row
   * of another machine has `sessionId` `host:id` in the window, so ids never collide.
   */
  host?: string | null;
  /** Non-null exactly when Mimesis runs this session in a PTY (`source: "pty"`). */
  supervision: Supervision | null;
}

export type SupervisionState = 'running' | 'restart_pending' | 'recovering' | 'suspended' | 'unhealthy' | 'terminated';
export type SupervisionMode = 'persistent' | 'one_shot';

export interface Supervision {
  state: SupervisionState;
  mode: SupervisionMode;
  agent: string;
  cwd: string;
  pid: number | null;
  processStartedAt: string | null;
  createdAt: string;
  recoveryCount: number;
  restartCount: number;
  consecutiveCrashes: number;
  pendingCrashRecovery: boolean;
  awaitingPermission: boolean;
  idleDeadline: string | null;
  durationDeadline: string | null;
  queuedInputs: number;
  lastExitCode: number | null;
  terminatedReason: string | null;
}

interface SupervisionEventBase {
  sessionId: string;
  at: string;
}

/** `supervision:event` payloads (docs/ipc.md); `message` is in the seeds' wording, written by the engine. */
export type SupervisionEvent = SupervisionEventBase &
  (
    | { type: 'session_started' }
    | { type: 'session_warning'; reason: string; remainingSeconds: number; message: string }
    | { type: 'session_terminated'; reason: string; message: string; resumeSessionId: string | null }
    | { type: 'session_restarting'; reason: string; message: string }
    | { type: 'session_ready'; status: 'resumed' | 'new'; message: string }
    | { type: 'crash_detected'; deferred: boolean }
    | { type: 'session_recovered'; message: string }
    | { type: 'recovery_failed'; message: string }
    | { type: 'session_unhealthy'; message: string }
    | { type: 'session_suspended'; message: string }
    | { type: 'session_resumed'; message: string }
    | { type: 'mode_change'; mode: SupervisionMode; message: string }
    | { type: 'error'; exitCode: number | null; message: string }
    | { type: 'session_exited'; exitCode: number | null }
  );

export type SupervisionEventType = SupervisionEvent['type'];

export interface ResourceRow {
  sessionId: string;
  cwd: string;
  pid: number | null;
  startedAt: string | null;
  uptimeSecs: number;
  rssBytes: number;
  cpuPercent: number;
  state: SupervisionState;
  idleRemainingSecs: number | null;
  recoveryCount: number;
}

export interface Metrics {
  rssBytes: Record<string, number>;
  zombieProcessesCleanedTotal: number;
  orphansKilledTotal: number;
  recoveriesTotal: number;
  suspensionsTotal: number;
  terminationsTotal: number;
  restartsTotal: number;
}

export interface Resources {
  rows: ResourceRow[];
  metrics: Metrics;
}

export interface Settings {
  watch: {
    approvalTimeoutSecs: number;
    staleTimeoutSecs: number;
    idleTimeoutSecs: number;
    statusFileTtlSecs: number;
    answerWaitSecs: number;
  };
  limits: {
    maxLiveSessions: number;
    idleTimeoutSecs: number;
    suspendMode: 'terminate' | 'stop';
    maxDurationSecs: number;
    durationCheckSecs: number;
    durationWarnPercent: number;
    turnGraceSecs: number;
    maxRssMb: number;
    rssCheckSecs: number;
    killAfterSecs: number;
    diskCheckSecs: number;
    diskWarnPercent: number;
    diskCleanupPercent: number;
    healthCheckSecs: number;
    orphanCheckSecs: number;
    recoveryRetries: number;
    recoveryRetryDelaySecs: number;
    crashDebounceSuccessSecs: number;
    crashDebounceFailureSecs: number;
    restartLimitBurst: number;
    restartLimitWindowSecs: number;
    crashPatterns: string[];
  };
  agent: { command: string; args: string[] };
  notifications: {
    enabled: boolean;
    waitingForApproval: boolean;
    waitingForInput: boolean;
    crashed: boolean;
    recovered: boolean;
    terminated: boolean;
  };
}

export interface SettingsError {
  field: string;
  message: string;
}

export interface HookStatus {
  root: string;
  settingsPath: string;
  installed: boolean;
  partial: boolean;
  error: string | null;
}

/** Where `pty_attach` streams terminal bytes: a Tauri `Channel<ArrayBuffer>` inside the app. */
export interface ByteChannel {
  onmessage: (data: ArrayBuffer) => void;
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
  /** How far the initial index has come (absent from older backends: done). */
  progress?: IndexProgress;
  /** The rows of other machines (keyed `host:id`), and every configured machine's state. */
  remote?: TrackedSession[];
  hosts?: HostInfo[];
}

/** A machine of Settings › Machines and its connection (docs/ipc.md `HostInfo`). */
export interface HostInfo {
  host: string;
  state: 'connecting' | 'live' | 'stale' | 'unreachable' | 'helper_missing';
  /** Why it is not live, in a sentence (untrusted text from ssh: shown as text). */
  message: string | null;
  lastSeen: string | null;
  sessions: number;
  version: string | null;
  retryInSecs: number | null;
}

/** A store event of another machine: no `seq` (applied as it comes). */
export type RemoteEvent = StoreEvent;

export interface IndexProgress {
  indexing: boolean;
  done: number;
  total: number;
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

/** The boundary between two sessions of a work chain in a chain-wide timeline. */
export interface SegmentItem extends ItemBase {
  kind: 'segment';
  sessionId: string;
  previousSessionId: string;
  reason: 'clear' | 'compact' | 'rollover' | (string & {});
}

/** An answer the user gave from Mimesis to this session's request or dialog. */
export interface AnswerItem extends ItemBase {
  kind: 'answer';
  tool: string | null;
  target: string | null;
  behavior: 'allow' | 'deny' | 'choose' | (string & {});
  choice: string | null;
  message: string | null;
  answers: Record<string, string> | null;
  via: 'window' | 'tray' | 'notification' | 'cli' | (string & {});
  /** The answer in a sentence, worded by the engine. */
  text: string;
}

export type TimelineItem =
  | SegmentItem
  | AnswerItem
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
  /** The transcript does not exist yet (it comes with the first prompt); followed from its first byte. */
  waiting?: boolean;
  /** The timeline's last update so far: the next one has `prev` equal to it. */
  seq?: number;
}

export interface TimelineUpdate {
  sessionId: string;
  total: number;
  reset: boolean;
  changed: { index: number; item: TimelineItem }[];
  /** Numbered in one sequence for all timelines; `prev`: the previous update of this one. */
  seq?: number;
  prev?: number;
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
  /** Whether the machine has a GPU (a DRM render node): else the terminal draws with the DOM, not WebGL in software. */
  gpu_available: { args: undefined; ret: boolean };
  /** The system's folder picker; the chosen folder or null (cancelled). */
  pick_folder: { args: { start: string | null }; ret: string | null };
  pty_create: { args: { cwd: string; resume: string | null; cols: number | null; rows: number | null }; ret: { sessionId: string } };
  pty_attach: { args: { sessionId: string; onData: ByteChannel }; ret: { cols: number; rows: number; attachment: number } };
  pty_ack: { args: { sessionId: string; attachment: number; parsed: number }; ret: null };
  pty_detach: { args: { sessionId: string }; ret: null };
  pty_input: { args: { sessionId: string; data: string }; ret: { queued: boolean } };
  pty_resize: { args: { sessionId: string; cols: number; rows: number }; ret: null };
  pty_stop: { args: { sessionId: string }; ret: null };
  pty_resume: { args: { sessionId: string }; ret: null };
  pty_restart: { args: { sessionId: string }; ret: null };
  pty_delete: { args: { sessionId: string }; ret: null };
  resources: { args: undefined; ret: Resources };
  settings_get: { args: undefined; ret: Settings };
  settings_set: { args: { settings: Settings }; ret: { settings: Settings; errors: SettingsError[] } };
  hooks_status: { args: undefined; ret: HookStatus[] };
  hooks_install: { args: undefined; ret: HookStatus[] };
  hooks_uninstall: { args: undefined; ret: HookStatus[] };
  doctor: { args: undefined; ret: DoctorView };
  settings_in_effect: { args: undefined; ret: InEffect };
  approvals_pending: { args: undefined; ret: PermissionRequest[] };
  approval_decide: {
    args: { id: string; allow: boolean; message: string | null; answers?: Record<string, string> | null };
    ret: PermissionRequest;
  };
  pty_answer: { args: { sessionId: string; answer: string }; ret: string };
  pty_dialog: { args: { sessionId: string }; ret: ScreenDialog | null };
  focus_terminal: { args: { sessionId: string }; ret: string };
  set_viewing: { args: { sessionId: string | null }; ret: null };
  folder_check: { args: { path: string }; ret: string | null };
  hosts_list: { args: undefined; ret: HostInfo[] };
  host_retry: { args: { host: string }; ret: null };
  host_install: { args: { host: string }; ret: null };
  host_add: { args: { host: string }; ret: null };
  host_remove: { args: { host: string }; ret: null };
  /** Opens a plain web address in the system's browser (anything else is refused). */
  open_link: { args: { url: string }; ret: null };
}

/** The dialog on a supervised session's screen, as the engine reads it (options by label). */
export interface ScreenDialog {
  question: string;
  context: string[];
  options: { number: number | null; label: string; selected: boolean }[];
}

/** A permission dialog waiting for an answer from Mimesis (docs/ipc.md, `mimesis pending --json`). */
/** `doctor`: what it found in words, the problems to act on, and the whole report. */
export interface DoctorView {
  lines: string[];
  problems: string[];
  report: unknown;
}

/** Settings whose value in force is not the stored one, and why. */
export interface InEffect {
  overrides: { field: string; value: unknown; source: string }[];
  notApplied: string[];
}

export interface PermissionRequest {
  id: string;
  sessionId: string;
  tool: string;
  target: string | null;
  cwd: string | null;
  since: string;
  /** What to read before answering (untrusted text, shown as text). */
  detail?: RequestDetail | null;
}

export type RequestDetail =
  | { kind: 'edit'; file: string; edits: { old: string; new: string }[] }
  | { kind: 'write'; file: string; content: string }
  | { kind: 'plan'; plan: string }
  | { kind: 'questions'; questions: RequestQuestion[] };

export interface RequestQuestion {
  question: string;
  header?: string | null;
  options: { label: string; description?: string | null }[];
  multiSelect: boolean;
}

/** The events of docs/ipc.md and their payloads. */
export interface Events {
  'store:events': { events: SeqEvent[] };
  'store:resync': Record<string, never>;
  'timeline:update': TimelineUpdate;
  'supervision:event': SupervisionEvent;
  'app:open-session': { sessionId: string };
  'attention:changed': { count: number; sessionIds: string[]; title?: string };
  'approvals:changed': PermissionRequest[];
  'store:progress': IndexProgress;
  'remote:events': { events: RemoteEvent[] };
  'hosts:changed': { hosts: HostInfo[] };
}

/** How the UI shows a tool call that has no result yet, from the session's status. */
export type PendingState = 'approval' | 'running' | 'none';

/** A session's cost: estimated from its tokens and a dated price table, and billed as Claude Code says. */
export interface Cost {
  estimatedUsd: number | null;
  unknownModels: string[];
  pricesAsOf: string;
  billed: { costUsd: number; usage: Usage } | null;
}
