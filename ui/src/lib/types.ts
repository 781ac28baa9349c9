// Every shape that crosses between the engine and the page is generated from the Rust types
// (./generated/ipc.ts, written by src-tauri/src/ipc_types.rs): this file defines none. It
// re-exports them under the names the UI uses, and names parts of them (one timeline item
// kind, one event type). The only types defined here never cross IPC (marked below).

import type { Dialog, Envelope, Events, FieldError, IpcItem, Mode, StoreEvent, SupervisionEvent } from './generated/ipc';

export type {
  ByteChannel,
  Commands,
  Cost,
  DoctorReport,
  DoctorView,
  Events,
  HookStatus,
  HandOverProgress,
  HostFailure,
  HostInfo,
  InEffect,
  Interrupted,
  IndexProgress,
  Metrics,
  ResourceRow,
  Resources,
  RootInfo,
  RosterSnapshot,
  SearchAnswer,
  SearchHit,
  SearchKind,
  SearchProgress,
  SearchRequest,
  SearchResults,
  Settings,
  SpendSeries,
  SpendSession,
  SpendTotal,
  SpendView,
  Status,
  StoreEvent,
  Supervision,
  SupervisionEvent,
  SupervisionState,
  TerminatedReason,
  TimelinePage,
  TrackedSession,
  Usage,
  PendingTool,
  Pending as PermissionRequest,
  Detail as RequestDetail,
  Question as RequestQuestion,
} from './generated/ipc';

export type SupervisionMode = Mode;
export type SettingsError = FieldError;
/** A store event with its sequence number (`store:events`). */
export type SeqEvent = Envelope;
/** A store event of another machine: no `seq` (applied as it comes). */
export type RemoteEvent = StoreEvent;
/** The dialog on a supervised session's screen, as the engine reads it. */
export type ScreenDialog = Dialog;
export type SupervisionEventType = SupervisionEvent['type'];
/** A `timeline:update`: this machine's are numbered (`seq`, `prev`), another machine's are not. */
export type TimelineUpdate = Events['timeline:update'];

/** A timeline item as pages and updates carry it: long strings may be cut (`truncated`). */
export type TimelineItem = IpcItem;
export type ItemKind = TimelineItem['kind'];
type Kind<K extends ItemKind> = Extract<TimelineItem, { kind: K }>;
export type PromptItem = Kind<'prompt'>;
export type AssistantTextItem = Kind<'assistant_text'>;
export type ThinkingItem = Kind<'thinking'>;
export type ToolCallItem = Kind<'tool_call'>;
export type CompactionItem = Kind<'compaction'>;
export type ApiErrorItem = Kind<'api_error'>;
export type SystemItem = Kind<'system'>;
/** The boundary between two sessions of a work chain in a chain-wide timeline. */
export type SegmentItem = Kind<'segment'>;
/** An answer the user gave from Mimesis to this session's request or dialog. */
export type AnswerItem = Kind<'answer'>;

// ---- UI only: never crosses IPC ----

/** How the UI shows a tool call that has no result yet, from the session's status. */
export type PendingState = 'approval' | 'running' | 'none';
