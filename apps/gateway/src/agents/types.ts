import type { ExecResult } from "@mediagate/sandbox";

/**
 * Tool access for one turn, already bound to the turn's slot and session shell.
 * Paths are container paths; relative ones resolve against the session's cwd.
 */
export interface ToolRunner {
  /** Run a shell command in the session's persistent shell (cwd and env persist). */
  run(command: string, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<ExecResult>;
  /** Read a file of the container, at most `maxBytes` (default 256 KiB). */
  readFile(path: string, maxBytes?: number): Promise<string>;
  /** Create or replace a file in the container, creating parent directories. */
  writeFile(path: string, content: string): Promise<void>;
}

/** Identity of the turn, passed explicitly (the ALS context is also bound around the call). */
export interface AgentTurnInput {
  readonly text: string;
  readonly profile: string;
  readonly sessionKey: string;
  /** Changes on /reset; conversation history is keyed by it. */
  readonly sessionId: string;
  readonly tools: ToolRunner;
  readonly signal: AbortSignal;
}

export interface AgentTurnResult {
  /** The agent's final reply text; MEDIA tags are extracted from this only. */
  readonly reply: string;
}

export interface Agent {
  readonly kind: "shell" | "openai";
  runTurn(input: AgentTurnInput): Promise<AgentTurnResult>;
}
