import type { ExecResult } from "@mediagate/sandbox";
import type { AttachmentSentAs } from "../channels/types.js";
import type { TokenUsage } from "./models.js";

/**
 * Tool access for one turn, already bound to the turn's slot and session shell.
 * Paths are container paths; relative ones resolve against the session's cwd.
 */
export interface ToolRunner {
  /**
   * Run a shell command in the session's persistent shell (cwd and env persist). `env` is set
   * for this command only (not kept in the session's state). `onOutput` is told the output's
   * text as it arrives (stdout and stderr interleaved, each decoded on its own; what the
   * result keeps), for the chat's preview (docs/streaming.md).
   */
  run(
    command: string,
    options?: {
      timeoutMs?: number;
      signal?: AbortSignal;
      env?: Readonly<Record<string, string>>;
      onOutput?: (text: string) => void;
    },
  ): Promise<ExecResult>;
  /**
   * Read a file of the container, at most `maxBytes` (default `Defaults.toolRunner.readMaxBytes`).
   */
  readFile(path: string, maxBytes?: number): Promise<string>;
  /** Create or replace a file in the container, creating parent directories. */
  writeFile(path: string, content: string): Promise<void>;
}

/** Identity of the turn, passed explicitly (the ALS context is also bound around the call). */
export interface AgentTurnInput {
  readonly text: string;
  readonly profile: string;
  readonly sessionKey: string;
  /** `<platform>:<id>` of the message's sender: usage is recorded per user. */
  readonly user?: string | undefined;
  /** Changes on /reset and /new; conversation history is keyed by it. */
  readonly sessionId: string;
  readonly tools: ToolRunner;
  readonly signal: AbortSignal;
  /** Files the user sent with the message, saved in the session's inbox (may be empty). */
  readonly attachments: readonly TurnAttachment[];
  /**
   * Reads a file of the session's running container as bytes, without running a command in
   * the session's shell (`Sandbox#readFile`, as the session's user): for an attachment with
   * no `hostPath`. Absent where there is no sandbox (tests).
   */
  readonly readContainerFile?: ContainerFileReader | undefined;
  /**
   * Told each piece of the reply's text as the agent produces it, in order, for the chat's
   * preview (docs/streaming.md). Pieces only append: the text of a later model answer of the
   * same turn comes after a blank line. A preview only: the turn's result is the reply. Absent:
   * nothing is streamed.
   */
  readonly onText?: ((piece: string) => void) | undefined;
}

/**
 * Opens `containerPath` of the session's container: `undefined` when it is missing, not a
 * regular file or reached through a link. Over `maxBytes`, `size` tells the real size and the
 * stream fails on read (give it up with the iterator's `return`).
 */
export type ContainerFileReader = (
  containerPath: string,
  maxBytes: number,
) => Promise<{ readonly size: number; readonly stream: AsyncIterable<Uint8Array> } | undefined>;

/** A file the user sent, saved in the sandbox (docs/inbound-media.md). */
export interface TurnAttachment {
  /** The name it was sent with (untrusted: show it, never use it as a path). */
  readonly name: string;
  /** Where the agent finds it: `/workspace/inbox/<sanitized name>`. */
  readonly containerPath: string;
  /** The same file on the gateway's host, when the slot is a local bind mount. */
  readonly hostPath: string | undefined;
  /** Recognized from its bytes: image, video, audio, voice, document. */
  readonly kind: string;
  readonly mime: string;
  readonly size: number;
  /** How the platform labelled it (a Telegram voice note is `voice`). */
  readonly sentAs: AttachmentSentAs;
}

export interface AgentTurnResult {
  /** The agent's final reply text; MEDIA tags are extracted from this only. */
  readonly reply: string;
  /**
   * Lines for the chat, sent before the reply: what went wrong with the user's files that the
   * user should know (a voice note that could not be transcribed).
   */
  readonly notices?: readonly string[] | undefined;
  /**
   * What the turn's model calls used, summed over them (the endpoint's own counts, as recorded
   * per call: docs/models-and-usage.md), when the agent calls a model that said.
   */
  readonly usage?: TokenUsage | undefined;
}

/** `/compact [focus]` for one session. */
export interface CompactRequest {
  readonly sessionId: string;
  /** The session's key: its `/model` pick is the model that summarizes. */
  readonly sessionKey: string;
  /** `<platform>:<id>` of who asked: the summary's usage is recorded for them. */
  readonly user?: string | undefined;
  /** What the summary should keep, as the person typed it. */
  readonly focus?: string | undefined;
  readonly signal: AbortSignal;
}

/** What `/compact` did. */
export interface CompactResult {
  /** Messages folded into the summary; 0 when there was nothing old enough. */
  readonly summarizedMessages: number;
  /** The conversation's estimated tokens before and after. */
  readonly beforeTokens: number;
  readonly afterTokens: number;
  /**
   * Why no summary was asked for, as the answer: the daily budget is used up, or another
   * `/compact` of the session is running.
   */
  readonly stopped?: string | undefined;
}

export interface Agent {
  readonly kind: "shell" | "openai";
  runTurn(input: AgentTurnInput): Promise<AgentTurnResult>;
  /**
   * Summarizes the session's older turns now (docs/sessions.md, "/compact"); absent for an
   * agent that keeps no conversation.
   */
  compact?(request: CompactRequest): Promise<CompactResult>;
}
