import type {
  ApprovalsView,
  ChangeKind,
  ContainerView,
  DeliveryView,
  LogQuery,
  LogView,
  OverviewView,
  ResetAnswer,
  SessionView,
  TaskActionName,
  TaskView,
  UsageView,
  WebActor,
} from "./types.js";

/** A preview's bytes. */
export interface PreviewFile {
  readonly mime: string;
  /**
   * The bytes `stream` gives: the answer's `Content-Length`. A stream that ends short of it
   * (the file shrank after it was opened) has the answer cut off, never ended as if whole.
   */
  readonly size: number;
  readonly stream: NodeJS.ReadableStream;
  /** Called once the answer was sent or failed (closes descriptors). */
  close(): Promise<void>;
}

/** Everything the console reads and does; the gateway implements it. */
export interface ConsoleSource {
  overview(): Promise<OverviewView>;
  sessions(): SessionView[];
  containers(): Promise<ContainerView[]>;
  deliveries(limit: number): Promise<DeliveryView[]>;
  logs(query: LogQuery): LogView[];
  /**
   * A delivered file of reply `replyId` (its `index` in the plan), checked by the same
   * credential policy as delivery; `undefined` when it is not a delivered file or no longer
   * passes. `maxBytes`: at most this many bytes are streamed.
   */
  preview(replyId: string, index: number, maxBytes: number): Promise<PreviewFile | undefined>;
  /**
   * Each profile's model usage per UTC day, the last `days` days (docs/web-console.md, "Usage").
   * Absent in a source without models: the page then says so.
   */
  usage?(days: number): Promise<UsageView>;
  /**
   * Each profile's newest approvals and their decisions, newest first (docs/web-console.md,
   * "Approvals"). Absent in a source without approvals: the page then lists none.
   */
  approvals?(): Promise<ApprovalsView>;
  /** Every task of every profile (docs/schedules.md); absent: the page says there are none. */
  tasks?(): Promise<TaskView[]>;
  /** Run now, pause or resume a task, as an admin would in the chat. Answers what was done. */
  taskAction?(profile: string, id: string, action: TaskActionName, by: WebActor): Promise<string>;
  /** `/stop` for the session. Answers the chat line it would have given. */
  stopTurn(sessionKey: string, by: WebActor): Promise<string>;
  /** `/reset` (`confirm`: `/reset confirm`) for the session. */
  resetSlot(sessionKey: string, confirm: boolean, by: WebActor): Promise<ResetAnswer>;
  /** `mediagate sandbox reap` for every profile. */
  reapOrphans(by: WebActor): Promise<string>;
  /**
   * Registers `listener` for "something changed" notices (a turn started or ended, a log line);
   * answers the function that removes it. The console only listens while a browser watches.
   */
  onChange(listener: (what: ChangeKind) => void): () => void;
}
