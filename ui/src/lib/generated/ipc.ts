// Generated from the Rust types (src-tauri/src/ipc_types.rs); do not edit.
// Refresh: MIMESIS_BLESS=1 cargo test -p mimesis-desktop ipc_types

/**
 * What the roster shows for a session.
 */
export type Status = "idle" | "working" | "waiting_for_approval" | "waiting_for_input";

/**
 * How Mimesis ended while the session ran.
 */
export type InterruptedBy = "quit" | "signal" | "crash";

/**
 * A supervised session that Mimesis's end interrupted: offered for resume until it is
 * resumed or the user dismisses it.
 */
export type Interrupted = { sessionId: string, cwd: string, at: string, by: InterruptedBy, };

/**
 * `app:quit-requested`: the window asks the user what to do with the running sessions.
 */
export type QuitRequest = { 
/**
 * Supervised sessions that a quit now would stop.
 */
running: number, 
/**
 * The installed Claude Code can continue them in its background service
 * (`claude --bg --resume`): the window offers to hand them over.
 */
handOver: boolean, };

/**
 * How a hand-over is going, for the window (`app:handover`).
 */
export type HandOverProgress = { 
/**
 * Sessions still working: each is handed over when its turn ends.
 */
waiting: number, 
/**
 * Continued by Claude Code's background service.
 */
handed: number, 
/**
 * Could not be handed over: stopped, and offered for resume at the next start.
 */
failed: number, 
/**
 * Ended by themselves meanwhile.
 */
ended: number, 
/**
 * Why the failed ones failed, one sentence each.
 */
errors: Array<string>, };

/**
 * Token usage, each API message counted once.
 */
export type Usage = { inputTokens: number, outputTokens: number, cacheCreationInputTokens: number, cacheReadInputTokens: number, };

/**
 * What Claude Code says it billed for a session (its last `cost-state` record).
 */
export type Billed = { costUsd: number, 
/**
 * Summed over its models; includes calls the transcript does not show (compaction).
 */
usage: Usage, };

/**
 * A session's cost (docs/ipc.md `cost`), worked out by `crate::pricing`.
 */
export type Cost = { 
/**
 * From the transcript's tokens and the price table; null when no model is priced.
 */
estimatedUsd: number | null, 
/**
 * Models the session used that the table does not price (their tokens are left out).
 */
unknownModels: Array<string>, pricesAsOf: string, 
/**
 * What Claude Code says it billed (2.1.330's `cost-state`), else null.
 */
billed: Billed | null, };

/**
 * The tool call a session is blocked on, and what it acts on.
 */
export type PendingTool = { tool: string, 
/**
 * The input's file_path, command, pattern or url ("" when it has none).
 */
target: string, };

/**
 * Where the engine learned about a session.
 */
export type Source = "watcher" | "pty";

/**
 * How a session runs, when known: in a terminal of its own (an interactive `claude`, or a
 * session Mimesis supervises in a PTY), or under Claude Code's background service.
 */
export type SessionKind = "interactive" | "background";

/**
 * What a row shows of a background session's job (docs/ipc.md `job`).
 */
export type Job = { 
/**
 * The service's short id (`claude agents --json`'s `id`): what `mimesis attach|logs|
 * stop|respawn` and `claude attach|…` take.
 */
id: string, 
/**
 * The job's state as `claude agents` shows it: `working`, `blocked` (a dialog waits
 * for the user), `done`, `failed`, … (the service's word, cleaned); null when unknown.
 */
state: string | null, 
/**
 * The service's one line about it ("starting…", the call under way, the question).
 */
detail: string | null, 
/**
 * The prompt it was dispatched with.
 */
intent: string | null, 
/**
 * The service's attempt: 1, one more at each restart after a crash (the last one seen
 * while it ran); null when never seen running.
 */
attempt: number | null, 
/**
 * What it waits for while blocked ("approve Bash: …", "answer: …", "approve plan").
 */
needs?: string | null, };

/**
 * The `status` values of a status file (seed 001).
 */
export type ReportedStatus = "working" | "waiting_for_approval" | "waiting_for_input" | "completed" | "error" | "blocked" | "idle";

/**
 * A status file's content (docs/ipc.md `statusFile`).
 */
export type StatusReport = { status: ReportedStatus, updated: string, task: string | null, summary: string | null, };

export type TrackedSession = { sessionId: string, projectId: string, cwd: string | null, repoRoot: string | null, branch: string | null, goal: string | null, summary: string | null, title: string | null, status: Status, hasPendingToolUse: boolean, pendingTool: PendingTool | null, lastActivityAt: string, createdAt: string | null, model: string | null, usage: Usage, apiError: boolean, compactionCount: number, superseded: boolean, supersededBy: string | null, supersededAt: string | null, workChainId: string | null, workChainName: string | null, 
/**
 * Sessions in the work chain (1 when alone).
 */
chainLength: number, source: Source, 
/**
 * Present for a session Mimesis runs in a PTY (`source: pty`), else null.
 */
supervision: Supervision | null, live: boolean, pid: number | null, transcriptPath: string, permissionMode: string | null, malformedLines: number, 
/**
 * Values in well-formed lines that cannot be right (e.g. a token count of `1.5e300`
 * or `-3`), counted and taken as absent. (Absent in rows from older versions.)
 */
malformedFields: number, 
/**
 * The session's status file (`<cwd>/.claude/status.<id>.md`) while it is trusted
 * (SPEC W6), else null.
 */
statusFile: StatusReport | null, 
/**
 * The name Claude Code gave the session (2.1.330's registry: `proj-73`), else null.
 */
name: string | null, 
/**
 * What the session cost: estimated from its tokens and the price table, and what
 * Claude Code says it billed (docs/ipc.md `cost`).
 */
cost: Cost, 
/**
 * Subagents working for the session right now, as its SubagentStart/SubagentStop
 * hooks (2.1.330) tell; 0 without hooks or when the turn is over.
 */
subagents: number, 
/**
 * The row comes from a first quick read of its file's ends while the initial index
 * runs: its usage and cost may still grow and it shows no pending tool yet. Absent
 * (false) once the file was read in full, and in every row `mimesis ls` prints.
 */
provisional?: boolean, 
/**
 * The SSH destination of the machine the session runs on (issue 13), as the user
 * gave it; null for a session on this machine.
 */
host: string | null, 
/**
 * How it runs: `interactive` (a terminal of its own, or supervised here), `background`
 * (Claude Code's background service, 2.1.332), null when unknown (docs/ipc.md `kind`).
 */
kind: SessionKind | null, 
/**
 * A background session's job (docs/ipc.md `job`), else null.
 */
job: Job | null, };

/** What changed in a roster row: the changed fields only, null included. */
export type SessionPatch = Partial<TrackedSession>;

/**
 * What the store tells its consumers (SPEC W7).
 */
export type StoreEvent = { "type": "discovered", session: TrackedSession, } | { "type": "updated", sessionId: string, changes: SessionPatch, } | { "type": "removed", sessionId: string, };

/**
 * A store event with its sequence number (one more per event, from 1).
 */
export type Envelope = { seq: number, } & ({ "type": "discovered", session: TrackedSession, } | { "type": "updated", sessionId: string, changes: SessionPatch, } | { "type": "removed", sessionId: string, });

export type RootInfo = { path: string, exists: boolean, sessionCount: number, };

/**
 * How far the initial index has come (docs/ipc.md `store:progress`).
 */
export type IndexProgress = { 
/**
 * Still reading: rows may be provisional and more may come.
 */
indexing: boolean, 
/**
 * Transcripts read in full so far, of `total` found.
 */
done: number, total: number, };

export type RosterSnapshot = { demo: boolean, 
/**
 * The rows of other machines (issue 13), keyed `host:id`.
 */
remote: Array<TrackedSession>, 
/**
 * Every configured machine's state.
 */
hosts: Array<HostInfo>, seq: number, sessions: Array<TrackedSession>, roots: Array<RootInfo>, 
/**
 * The initial index is still running: more sessions will be discovered.
 */
indexing: boolean, progress: IndexProgress, };

export type ToolResult = { content: string, isError: boolean, timestamp: string | null, };

/**
 * One entry of a timeline. The JSON shape is the `mimesis show --json` contract.
 */
export type TimelineItem = { "kind": "prompt", uuid: string, timestamp: string | null, text: string, } | { "kind": "assistant_text", uuid: string, timestamp: string | null, text: string, model: string | null, } | { "kind": "thinking", uuid: string, timestamp: string | null, text: string, redacted: boolean, } | { "kind": "tool_call", uuid: string, timestamp: string | null, toolUseId: string, tool: string, input: unknown, result: ToolResult | null, } | { "kind": "compaction", uuid: string, timestamp: string | null, trigger: string | null, preTokens: number | null, summary: string | null, } | { "kind": "api_error", uuid: string, timestamp: string | null, text: string, status: number | null, retrying: boolean, } | { "kind": "system", uuid: string, timestamp: string | null, subtype: string, text: string, } | { "kind": "segment", uuid: string, timestamp: string | null, sessionId: string, previousSessionId: string, 
/**
 * clear | compact | rollover
 */
reason: string, } | { "kind": "answer", uuid: string, timestamp: string | null, tool: string | null, target: string | null, 
/**
 * allow | deny | choose
 */
behavior: string, 
/**
 * The option chosen, by its label (`choose`).
 */
choice: string | null, 
/**
 * The message to Claude with a denial.
 */
message: string | null, 
/**
 * AskUserQuestion's answers: question → answer.
 */
answers: { [key in string]: string } | null, 
/**
 * window | tray | notification | cli
 */
via: string, 
/**
 * The answer in a sentence ("Approved once from the window").
 */
text: string, };

/**
 * A timeline item as sent to the webview: possibly shortened.
 */
export type IpcItem = { truncated?: boolean, } & ({ "kind": "prompt", uuid: string, timestamp: string | null, text: string, } | { "kind": "assistant_text", uuid: string, timestamp: string | null, text: string, model: string | null, } | { "kind": "thinking", uuid: string, timestamp: string | null, text: string, redacted: boolean, } | { "kind": "tool_call", uuid: string, timestamp: string | null, toolUseId: string, tool: string, input: unknown, result: ToolResult | null, } | { "kind": "compaction", uuid: string, timestamp: string | null, trigger: string | null, preTokens: number | null, summary: string | null, } | { "kind": "api_error", uuid: string, timestamp: string | null, text: string, status: number | null, retrying: boolean, } | { "kind": "system", uuid: string, timestamp: string | null, subtype: string, text: string, } | { "kind": "segment", uuid: string, timestamp: string | null, sessionId: string, previousSessionId: string, 
/**
 * clear | compact | rollover
 */
reason: string, } | { "kind": "answer", uuid: string, timestamp: string | null, tool: string | null, target: string | null, 
/**
 * allow | deny | choose
 */
behavior: string, 
/**
 * The option chosen, by its label (`choose`).
 */
choice: string | null, 
/**
 * The message to Claude with a denial.
 */
message: string | null, 
/**
 * AskUserQuestion's answers: question → answer.
 */
answers: { [key in string]: string } | null, 
/**
 * window | tray | notification | cli
 */
via: string, 
/**
 * The answer in a sentence ("Approved once from the window").
 */
text: string, });

export type TimelinePage = { sessionId: string, total: number, start: number, items: Array<IpcItem>, waiting: boolean, seq: number, };

export type IpcIndexed = { index: number, item: IpcItem, };

export type TimelineUpdate = { sessionId: string, total: number, reset: boolean, changed: Array<IpcIndexed>, seq: number, prev: number, };

/**
 * A session's supervision state, as the roster shows it.
 */
export type SupervisionState = "running" | "restart_pending" | "recovering" | "suspended" | "unhealthy" | "terminated";

/**
 * Persistent process, or the P5 fallback where each message is its own process.
 */
export type Mode = "persistent" | "one_shot";

/**
 * Why a session is `terminated`.
 */
export type TerminatedReason = "duration_limit" | "user" | "deleted" | "exited" | "failed_to_start" | "shutdown" | "signal";

/**
 * Why automatic restarts stopped for a session (R2): shown until the user acts (a
 * restart, a resume) or changes the limits.
 */
export type RestartHold = "memory_baseline" | "rate_limit";

/**
 * Why a session is suspended.
 */
export type SuspendedReason = "idle" | "cap" | "budget";

/**
 * `TrackedSession.supervision`.
 */
export type Supervision = { state: SupervisionState, mode: Mode, agent: string, cwd: string, pid: number | null, processStartedAt: string | null, createdAt: string, recoveryCount: number, restartCount: number, consecutiveCrashes: number, pendingCrashRecovery: boolean, awaitingPermission: boolean, idleDeadline: string | null, durationDeadline: string | null, queuedInputs: number, lastExitCode: number | null, terminatedReason: TerminatedReason | null, 
/**
 * Automatic restarts are stopped, and why (`memory_baseline`: the memory limit is
 * below what the agent needs at rest; `rate_limit`: too many within the window).
 */
restartsHeld: RestartHold | null, 
/**
 * Issue 36: the budget in force for this session in US dollars (its own, else the
 * settings' `budgetUsd`), or null.
 */
budgetUsd: number | null, 
/**
 * What the session has spent so far (its transcript's estimated cost), when known.
 */
spentUsd: number | null, 
/**
 * When state is suspended: why (`idle`, `cap`: the live-session cap, `budget`).
 */
suspendedReason: SuspendedReason | null, };

/**
 * Whether a respawned session continues its conversation or starts over (EC-007).
 */
export type ReadyStatus = "resumed" | "new";

/**
 * What happened. Serialized with its fields beside `type`, `sessionId` and `at`.
 */
export type EventKind = { "type": "session_started", } | { "type": "session_warning", reason: string, remainingSeconds: number | null, message: string, } | { "type": "session_terminated", reason: string, message: string, resumeSessionId: string, } | { "type": "session_restarting", reason: string, message: string, } | { "type": "session_ready", status: ReadyStatus, message: string, } | { "type": "crash_detected", deferred: boolean, } | { "type": "session_recovered", message: string, } | { "type": "recovery_failed", message: string, } | { "type": "session_unhealthy", message: string, } | { "type": "session_suspended", message: string, reason: string, } | { "type": "session_resumed", message: string, } | { "type": "mode_change", mode: string, message: string, } | { "type": "error", exitCode: number, message: string, } | { "type": "session_exited", exitCode: number, };

/**
 * One supervision event. (Read back from another machine's Mimesis: untrusted there.)
 */
export type SupervisionEvent = { sessionId: string, at: string, } & ({ "type": "session_started", } | { "type": "session_warning", reason: string, remainingSeconds: number | null, message: string, } | { "type": "session_terminated", reason: string, message: string, resumeSessionId: string, } | { "type": "session_restarting", reason: string, message: string, } | { "type": "session_ready", status: ReadyStatus, message: string, } | { "type": "crash_detected", deferred: boolean, } | { "type": "session_recovered", message: string, } | { "type": "recovery_failed", message: string, } | { "type": "session_unhealthy", message: string, } | { "type": "session_suspended", message: string, reason: string, } | { "type": "session_resumed", message: string, } | { "type": "mode_change", mode: string, message: string, } | { "type": "error", exitCode: number, message: string, } | { "type": "session_exited", exitCode: number, });

/**
 * One live supervised session in the resource view (P7).
 */
export type ResourceRow = { sessionId: string, cwd: string, pid: number | null, startedAt: string | null, uptimeSecs: number, rssBytes: number, cpuPercent: number, state: SupervisionState, idleRemainingSecs: number | null, recoveryCount: number, };

/**
 * P14 counters and gauges.
 */
export type Metrics = { rssBytes: { [key in string]: number }, zombieProcessesCleanedTotal: number, orphansKilledTotal: number, recoveriesTotal: number, suspensionsTotal: number, terminationsTotal: number, restartsTotal: number, };

/**
 * The `resources` command's answer.
 */
export type Resources = { rows: Array<ResourceRow>, metrics: Metrics, };

/**
 * One stack of the chart: a project's or a model's cost on each day of the view.
 */
export type SpendSeries = { 
/**
 * A project's folder (its working directory), a model, or "Other".
 */
name: string, 
/**
 * Dollars on each day of [`SpendView::days`], in the same order.
 */
usd: Array<number>, };

/**
 * A sum over some days: dollars (estimated) and tokens.
 */
export type SpendTotal = { usd: number, tokens: number, };

/**
 * One of the costliest sessions of the days shown.
 */
export type SpendSession = { sessionId: string, project: string, 
/**
 * Estimated over the days shown.
 */
usd: number, tokens: number, 
/**
 * Its last request's time (ms since the epoch).
 */
lastAt: number, };

/**
 * What the Spend view shows (docs/ipc.md `spend_view`).
 */
export type SpendView = { 
/**
 * The days shown, oldest first, the last one today (`2026-11-28`, local time).
 */
days: Array<string>, 
/**
 * The chart stacked by project: the costliest first, then "Other".
 */
byProject: Array<SpendSeries>, 
/**
 * The chart stacked by model: the costliest first, then "Other".
 */
byModel: Array<SpendSeries>, 
/**
 * All the days shown.
 */
shown: SpendTotal, today: SpendTotal, 
/**
 * Monday to today.
 */
week: SpendTotal, 
/**
 * The 1st of the month to today.
 */
month: SpendTotal, 
/**
 * The costliest sessions of the days shown, the costliest first.
 */
topSessions: Array<SpendSession>, 
/**
 * "LiteLLM 1.110.2 (2026-11-28)".
 */
prices: string, 
/**
 * Models used in the days shown that the table does not price (their tokens are
 * counted, not priced).
 */
unknownModels: Array<string>, 
/**
 * What a reader must know about these figures (a price file that could not be used,
 * transcripts that could not be read), one sentence each.
 */
warnings: Array<string>, };

/**
 * What a piece of text was.
 */
export type SearchKind = "prompt" | "reply" | "tool_call" | "tool_result" | "thinking";

/**
 * One search (the CLI's flags, the window's field, a `search` request to another
 * machine). The JSON is camelCase (docs/ipc.md).
 */
export type SearchRequest = { 
/**
 * The query as typed ([`query::parse`]).
 */
query: string, 
/**
 * Only these kinds of text (none: all).
 */
kinds: Array<SearchKind>, 
/**
 * Only sessions whose project folder or working directory contains this.
 */
project: string | null, 
/**
 * Only what happened at or after this instant.
 */
since: string | null, 
/**
 * Only tool calls that read, edited or wrote this file (a path, or the end of one).
 */
file: string | null, 
/**
 * At most this many hits ([`DEFAULT_LIMIT`] when absent, at most [`MAX_LIMIT`]).
 */
limit: number | null, };

/**
 * One place the query was found.
 */
export type SearchHit = { sessionId: string, 
/**
 * The machine (an SSH destination); null on this one.
 */
host: string | null, 
/**
 * The timeline item: what `open` scrolls to and highlights.
 */
uuid: string, 
/**
 * A tool result whose call the index could not place: the call's `toolUseId`, which
 * finds it in the timeline instead.
 */
toolUseId?: string | null, at: string, kind: SearchKind, 
/**
 * One line of the text around the first match, as plain text.
 */
snippet: string, 
/**
 * Where the matches are in `snippet`: `[start, end)` in characters (Unicode code
 * points, not bytes or UTF-16 units), in order, not overlapping.
 */
marks: Array<[number, number]>, 
/**
 * The session's project folder (`projectId`).
 */
project: string, 
/**
 * The session's work chain, when it is part of one.
 */
workChainId: string | null, workChainName: string | null, 
/**
 * The session is an earlier segment of its chain (a `/clear` or compaction went on in
 * another one): the hit is in the chain's history.
 */
superseded: boolean, 
/**
 * For a hit in an earlier segment: the chain's newest session (where its work went on),
 * what the window opens to show the chain.
 */
chainHead: string | null, };

export type HostFailure = { host: string, message: string, };

/**
 * What a search found, most recent first.
 */
export type SearchResults = { hits: Array<SearchHit>, 
/**
 * How many matches there are in all (at most [`TOTAL_CAP`] counted per machine).
 */
total: number, 
/**
 * There are more than `total` (the count stopped at [`TOTAL_CAP`]).
 */
totalCapped: boolean, 
/**
 * Machines that could not be searched, each with why (in a sentence).
 */
failed?: Array<HostFailure>, };

/**
 * How far the index of this machine is (the window's progress while it is first built).
 */
export type SearchProgress = { 
/**
 * Still reading transcripts it has not read before.
 */
indexing: boolean, 
/**
 * Transcripts read so far, of `total` to read.
 */
done: number, total: number, };

/**
 * What `search_history` answers: the hits, and how far the index's first build is (its
 * hits are those of the transcripts read so far).
 */
export type SearchAnswer = { results: SearchResults, progress: SearchProgress, };

export type WatchSettings = { approvalTimeoutSecs: number, staleTimeoutSecs: number, idleTimeoutSecs: number, statusFileTtlSecs: number, 
/**
 * How long a permission request from an external session waits for an answer from
 * Mimesis (Claude Code's own dialog stays usable all along).
 */
answerWaitSecs: number, };

/**
 * How an idle session is suspended (P6).
 */
export type SuspendMode = "terminate" | "stop";

/**
 * The `limits` settings. Durations are written as seconds (fractions allowed).
 */
export type Limits = { 
/**
 * P7: at most this many sessions have a live process; over it the least recently
 * used idle one is suspended.
 */
maxLiveSessions: number, 
/**
 * P6: idle time after a finished turn before the session is suspended.
 */
idleTimeoutSecs: number, suspendMode: SuspendMode, 
/**
 * P8: the longest a supervised session runs (MAX_SESSION_DURATION_SECONDS).
 */
maxDurationSecs: number, durationCheckSecs: number, 
/**
 * The warning is sent at this share of `max_duration`.
 */
durationWarnPercent: number, 
/**
 * P8/P9: how long an in-flight turn may finish before it is interrupted.
 */
turnGraceSecs: number, 
/**
 * P9: RSS of the session's process tree above which it is restarted (MAX_SESSION_RSS_MB).
 */
maxRssMb: number, rssCheckSecs: number, 
/**
 * SIGTERM (or `/exit`) to SIGKILL.
 */
killAfterSecs: number, 
/**
 * P10: disk usage of the config root's filesystem.
 */
diskCheckSecs: number, diskWarnPercent: number, diskCleanupPercent: number, 
/**
 * P13: liveness check of each session's process.
 */
healthCheckSecs: number, 
/**
 * P11: scan for orphaned processes and zombies.
 */
orphanCheckSecs: number, 
/**
 * P5: resume attempts after an abnormal exit before one-shot mode.
 */
recoveryRetries: number, recoveryRetryDelaySecs: number, 
/**
 * P4: crash detections are ignored this long after a successful recovery…
 */
crashDebounceSuccessSecs: number, 
/**
 * …and this long after a failed one.
 */
crashDebounceFailureSecs: number, 
/**
 * P3: regular expressions that mean the harness crashed.
 */
crashPatterns: Array<string>, 
/**
 * R2, like systemd's start limit: at most this many automatic restarts (memory,
 * disk, crash recovery) within `restart_limit_window`; past it they stop, and say why.
 */
restartLimitBurst: number, restartLimitWindowSecs: number, 
/**
 * Apply the memory and duration limits to Claude Code's background sessions too
 * (issue 33): a memory restart is `claude respawn`, the end of the duration limit
 * `claude stop`; off by default.
 */
backgroundSessions: boolean, 
/**
 * Issue 36: the budget of each supervised session in US dollars (null: none); at 80 %
 * a warning, at 100 % the session is suspended at its next idle moment.
 */
budgetUsd: number | null, 
/**
 * Issue 36: the budget of the whole fleet for a local day, in US dollars (null: none).
 */
dailyBudgetUsd: number | null, };

export type AgentSettings = { command: string, args: Array<string>, };

/**
 * Which desktop notifications are shown (SPEC U5).
 */
export type NotificationSettings = { enabled: boolean, waitingForApproval: boolean, waitingForInput: boolean, crashed: boolean, recovered: boolean, terminated: boolean, };

/**
 * Other machines whose sessions join the roster (issue 13).
 */
export type MachineSettings = { 
/**
 * SSH destinations (`crate::remote::Destination`), in the order the user added them.
 */
hosts: Array<string>, };

/**
 * The desktop app's own choices (the CLI has no use for them).
 */
export type DesktopSettings = { 
/**
 * Start Mimesis, hidden to the tray, when the user logs in (an XDG autostart entry,
 * written and removed by the app). Off until the user turns it on.
 */
startAtLogin: boolean, };

export type Settings = { watch: WatchSettings, limits: Limits, agent: AgentSettings, notifications: NotificationSettings, machines: MachineSettings, desktop: DesktopSettings, };

/**
 * One invalid setting: `field` is its path in the settings document
 * (`limits.idleTimeoutSecs`), or the environment variable / flag it came from.
 */
export type FieldError = { field: string, message: string, };

/**
 * What `settings_set` answers: the stored document, and the errors (empty on success).
 */
export type SetOutcome = { settings: Settings, errors: Array<FieldError>, };

export type Override = { 
/**
 * The settings path (`limits.maxDurationSecs`).
 */
field: string, value: unknown, 
/**
 * Where it comes from, in words.
 */
source: string, };

/**
 * Settings whose value in force is not the stored one ([`Mimesis::settings_in_effect`]).
 */
export type InEffect = { overrides: Array<Override>, 
/**
 * Overrides that were given but could not be applied, in words.
 */
notApplied: Array<string>, };

/**
 * One config root's hook state (docs/ipc.md `HookStatus`).
 */
export type HookStatus = { root: string, settingsPath: string, 
/**
 * Every hook of [`WANTED`] is there, as this version installs it.
 */
installed: boolean, 
/**
 * Some, not all, are there, or one is outdated (installing again fixes either).
 */
partial: boolean, 
/**
 * Why the file could not be read, if it could not.
 */
error: string | null, 
/**
 * The program our hooks run, when it is not there any more (Mimesis was removed or
 * moved): Claude Code then fails to run them until they are uninstalled or reinstalled.
 */
missingProgram: string | null, };

export type RootReport = { path: string, exists: boolean, sessionCount: number, hooks: HookStatus, };

export type ClaudeCodeReport = { 
/**
 * The `claude` Mimesis runs: on PATH, else where its installers put it
 * (`mimesis_os::programs`).
 */
path: string | null, 
/**
 * Whether `path` is on the PATH Mimesis was started with.
 */
onPath: boolean, 
/**
 * What `claude --version` printed.
 */
version: string | null, 
/**
 * The version the newest session was written by (registry or transcript).
 */
seenVersion: string | null, error: string | null, };

export type WatcherReport = { ok: boolean, 
/**
 * `/proc/sys/fs/inotify/max_user_watches`.
 */
maxUserWatches: number | null, error: string | null, };

/**
 * The state of the database, for `doctor` and the logs.
 */
export type DbHealth = { "state": "ok" } | { "state": "rebuilt", reason: string, movedTo: string | null, } | { "state": "in_memory", reason: string, } | { "state": "broken", reason: string, } | { "state": "missing" } | { "state": "read_only", reason: string, };

/**
 * Counts for `doctor`.
 */
export type DbStats = { path: string | null, health: DbHealth, sizeBytes: number, sessions: number, chainLinks: number, supervisedProcesses: number, schemaVersion: number, };

export type SpoolReport = { path: string, files: number, events: number, lastEventAt: string | null, };

/**
 * One Mimesis process with supervised processes on record.
 */
export type SupervisorReport = { pid: number, 
/**
 * Still running; else the next start of a supervisor cleans up after it (P11).
 */
alive: boolean, processes: number, sessions: Array<string>, };

/**
 * A supervisor that published metrics.
 */
export type Publisher = { pid: number, startTicks: number, updatedAt: string, sessions: number, path: string, };

/**
 * Supervised sessions: what the ledger records and who publishes metrics.
 */
export type SupervisionReport = { 
/**
 * Agent processes recorded, over every supervisor (database and fallback files).
 */
recordedProcesses: number, 
/**
 * Distinct sessions those processes run.
 */
recordedSessions: number, supervisors: Array<SupervisorReport>, 
/**
 * Running supervisors publishing metrics (`mimesis metrics` adds them up).
 */
metricsPublishers: Array<Publisher>, 
/**
 * Snapshots left by supervisors that are gone (removed by `mimesis metrics`).
 */
staleMetrics: number, error: string | null, };

/**
 * The whole report (`mimesis doctor --json`).
 */
export type DoctorReport = { mimesisVersion: string, roots: Array<RootReport>, claudeCode: ClaudeCodeReport, watcher: WatcherReport, dataDir: string, 
/**
 * The data dir's mode in octal (`"0700"`), `None` when it does not exist yet.
 */
dataDirMode: string | null, 
/**
 * Why other users can read the data dir ("… is readable by other users (mode 0755);
 * run chmod 700 …"), or `None`. Mimesis makes its own files 0600 and folders 0700,
 * but never changes the mode of a data dir it did not make.
 */
dataDirOpen: string | null, database: DbStats, 
/**
 * A running process that still has the database file open after it was deleted.
 */
databaseDeletedUnder: number | null, hookSpool: SpoolReport, supervision: SupervisionReport, };

/**
 * The doctor's report for the window: in words (the lines `mimesis doctor` prints, and
 * the problems to act on), and whole.
 */
export type DoctorView = { lines: Array<string>, problems: Array<string>, report: DoctorReport, };

export type Replacement = { old: string, new: string, };

export type QuestionOption = { label: string, description?: string | null, };

export type Question = { question: string, header?: string | null, options: Array<QuestionOption>, multiSelect: boolean, };

/**
 * The part of a tool's input a user reads before answering (cleaned text, each at most
 * [`DETAIL_CHARS`] characters).
 */
export type Detail = { "kind": "edit", file: string, edits: Array<Replacement>, } | { "kind": "write", file: string, content: string, } | { "kind": "plan", plan: string, } | { "kind": "questions", questions: Array<Question>, };

/**
 * How an open request is answered (`channel` in `mimesis pending --json`).
 */
export type Channel = "hook" | "pty" | "attach" | "tmux" | "kitty" | "wezterm" | "terminal";

/**
 * What a button does: its label and, in a sentence, exactly what follows.
 */
export type Action = { label: string, means: string, };

/**
 * What kind of dialog it is.
 */
export type DialogKind = "permission" | "autoMode" | "question" | "plan" | "other";

/**
 * A key an option is chosen with, when the dialog names keys instead of listing options
 * (auto mode's dialog).
 */
export type DialogKey = "enter" | "escape" | "shiftTab";

/**
 * An open request as faces and `mimesis pending --json` show it: a `PermissionRequest`
 * hook's request, or a dialog on a session's screen that no hook asked about
 * ([`crate::answering`]).
 */
export type Pending = { 
/**
 * `req_` and 32 hex digits ([`ID_PREFIX`]): unguessable and single-use.
 */
id: string, since: string, 
/**
 * Whether the session is one the face follows (in its roster). A request for a
 * session in no roster came from something Mimesis does not know: said plainly.
 */
knownSession: boolean, 
/**
 * How the face calls the session (its folder and title), when it knows it.
 */
sessionName?: string | null, 
/**
 * How it is answered: `hook`, or typed into the session's screen (`pty`, `attach`,
 * `tmux`, `kitty`, `wezterm`), or `terminal`: not from here.
 */
channel: Channel, 
/**
 * The dialog on screen it stands for, when no hook asked.
 */
dialog?: DialogKind | null, 
/**
 * What approving does, and denying: the faces' words for their buttons.
 */
approve?: Action | null, deny?: Action | null, 
/**
 * With `channel: terminal`: where to answer it, in a sentence.
 */
answerIn?: string | null, sessionId: string, tool: string, 
/**
 * The command, the file, the URL… (cleaned, at most 300 characters).
 */
target: string | null, cwd: string | null, 
/**
 * What to read before answering: the edit, the file, the plan, the questions.
 */
detail?: Detail | null, };

export type DialogOption = { 
/**
 * Its number when the options are numbered ("4. No").
 */
number: number | null, label: string, 
/**
 * Marked `❯`: what Enter would choose.
 */
selected: boolean, 
/**
 * The key that chooses it, when the dialog names keys ("Enter to stay in auto mode").
 */
key: DialogKey | null, 
/**
 * Choosing it changes the user's settings or the session's mode for them ("always
 * allow", "don't ask again", "switch to auto mode", leaving auto mode): never what
 * approve means; offered in the terminal, or when the user names it.
 */
changesSettings: boolean, };

/**
 * A dialog as the screen shows it.
 */
export type Dialog = { kind: DialogKind, 
/**
 * Its question row ("Do you want to proceed?"), or its title for a dialog that asks
 * none (auto mode's).
 */
question: string, 
/**
 * The rows of its box above the question (the tool, its target, why it asks), at most six.
 */
context: Array<string>, options: Array<DialogOption>, };

/**
 * The tray's view: sessions that need the user (docs/ipc.md `attention:changed`).
 */
export type AttentionSet = { count: number, sessionIds: Array<string>, 
/**
 * The window's title for this count ("Mimesis — 2 need you").
 */
title: string, };

/**
 * The attention set as the window shows it: this machine's sessions and other machines'
 * (`host:id`), one count, one title.
 */
export type WindowAttention = { count: number, sessionIds: Array<string>, title: string, };

/**
 * What the user sees of a host (docs/ipc.md `hosts`).
 */
export type HostState = "connecting" | "live" | "stale" | "unreachable" | "helper_missing";

/**
 * A host as the user sees it (`mimesis hosts --json`, Settings › Machines).
 */
export type HostInfo = { host: string, state: HostState, 
/**
 * Why it is not live, in a sentence.
 */
message: string | null, lastSeen: string | null, sessions: number, 
/**
 * Mimesis's version on the host, once it said hello.
 */
version: string | null, 
/**
 * Seconds until the next attempt, when one is planned.
 */
retryInSecs: number | null, };

/**
 * `hosts:changed`: every configured machine's state, in the configured order.
 */
export type HostsPayload = { hosts: Array<HostInfo>, };

export type EventsPayload = { events: Array<StoreEvent>, };

export type Changed = { index: number, item: IpcItem, };

/**
 * A `timeline:update` for another machine's session: no `seq` (the page applies it as it
 * comes); `changed` holds what differs from what was last read.
 */
export type RemoteTimelineUpdate = { sessionId: string, total: number, reset: boolean, changed: Array<Changed>, };

export type StoreBatch = { events: Array<Envelope>, };

/**
 * `app:open-session`: the page shows this session.
 */
export type OpenSession = { sessionId: string, };

export type Created = { 
/**
 * The window key: the session's id, or `host:id` on another machine.
 */
sessionId: string, };

export type Attached = { cols: number, rows: number, 
/**
 * Names this attachment in `pty_ack`.
 */
attachment: number, };

export type InputResult = { queued: boolean, };

/** Where `pty_attach` streams terminal bytes: a Tauri `Channel` on the page's side. */
export interface ByteChannel {
  onmessage: (data: ArrayBuffer) => void;
}

/** The commands of docs/ipc.md: their arguments (none: `undefined`) and replies. */
export interface Commands {
  roster_snapshot: { args: undefined; ret: RosterSnapshot };
  roster_snapshot_held: { args: undefined; ret: null };
  roster_listening: { args: undefined; ret: null };
  open_timeline: { args: { sessionId: string; tail: number }; ret: TimelinePage };
  timeline_range: { args: { sessionId: string; start: number; end: number }; ret: TimelinePage };
  timeline_item: { args: { sessionId: string; index: number }; ret: TimelineItem };
  close_timeline: { args: { sessionId: string }; ret: null };
  start_demo: { args: undefined; ret: null };
  stop_demo: { args: undefined; ret: null };
  hooks_status: { args: undefined; ret: Array<HookStatus> };
  hooks_install: { args: undefined; ret: Array<HookStatus> };
  hooks_uninstall: { args: undefined; ret: Array<HookStatus> };
  doctor: { args: undefined; ret: DoctorView };
  settings_get: { args: undefined; ret: Settings };
  settings_set: { args: { settings: Settings }; ret: SetOutcome };
  settings_in_effect: { args: undefined; ret: InEffect };
  approvals_pending: { args: undefined; ret: Array<Pending> };
  approval_decide: { args: { id: string; allow: boolean; message?: string | null; answers?: { [key in string]: string } | null }; ret: Pending };
  focus_terminal: { args: { sessionId: string }; ret: string };
  set_viewing: { args: { sessionId?: string | null }; ret: null };
  open_link: { args: { url: string }; ret: null };
  folder_check: { args: { path: string }; ret: string | null };
  pick_folder: { args: { start?: string | null }; ret: string | null };
  gpu_available: { args: undefined; ret: boolean };
  pty_create: { args: { cwd: string; resume?: string | null; cols?: number | null; rows?: number | null; host?: string | null }; ret: Created };
  pty_attach: { args: { sessionId: string; onData: ByteChannel }; ret: Attached };
  pty_ack: { args: { sessionId: string; attachment: number; parsed: number }; ret: null };
  pty_detach: { args: { sessionId: string }; ret: null };
  pty_input: { args: { sessionId: string; data: string; binary?: boolean | null }; ret: InputResult };
  pty_resize: { args: { sessionId: string; cols: number; rows: number }; ret: null };
  pty_stop: { args: { sessionId: string }; ret: null };
  pty_resume: { args: { sessionId: string }; ret: null };
  pty_raise_budget: { args: { sessionId: string; budgetUsd: number; daily: boolean }; ret: null };
  pty_restart: { args: { sessionId: string }; ret: null };
  pty_delete: { args: { sessionId: string }; ret: null };
  pty_dialog: { args: { sessionId: string }; ret: Dialog | null };
  pty_answer: { args: { sessionId: string; answer: string }; ret: string };
  resources: { args: undefined; ret: Resources };
  bg_create: { args: { cwd: string; prompt: string; permissionMode?: string | null }; ret: Created };
  bg_attach: { args: { sessionId: string; cols?: number | null; rows?: number | null }; ret: null };
  bg_detach: { args: { sessionId: string }; ret: null };
  bg_stop: { args: { sessionId: string }; ret: string };
  bg_respawn: { args: { sessionId: string }; ret: string };
  bg_remove: { args: { sessionId: string }; ret: string };
  spend_view: { args: { days: number }; ret: SpendView };
  search_history: { args: { request: SearchRequest }; ret: SearchAnswer };
  search_host: { args: { host: string; request: SearchRequest }; ret: SearchResults };
  search_progress: { args: undefined; ret: SearchProgress };
  roster_shown: { args: undefined; ret: null };
  timeline_find: { args: { sessionId: string; uuid: string; toolUseId?: string | null }; ret: number | null };
  hosts_list: { args: undefined; ret: Array<HostInfo> };
  host_retry: { args: { host: string }; ret: null };
  host_install: { args: { host: string }; ret: null };
  host_add: { args: { host: string }; ret: null };
  host_remove: { args: { host: string }; ret: null };
  app_quit: { args: { choice: string }; ret: null };
  sessions_interrupted: { args: undefined; ret: Array<Interrupted> };
  interrupted_dismiss: { args: { sessionIds: Array<string> }; ret: null };
}

/** The events of docs/ipc.md and their payloads. */
export interface Events {
  "store:events": StoreBatch;
  "store:resync": Record<string, never>;
  "store:progress": IndexProgress;
  "timeline:update": TimelineUpdate | RemoteTimelineUpdate;
  "supervision:event": SupervisionEvent;
  "attention:changed": WindowAttention;
  "approvals:changed": Array<Pending>;
  "app:open-session": OpenSession;
  "remote:events": EventsPayload;
  "hosts:changed": HostsPayload;
  "app:quit-requested": QuitRequest;
  "app:handover": HandOverProgress;
}
