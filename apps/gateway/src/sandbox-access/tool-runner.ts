import { StringDecoder } from "node:string_decoder";
import { MediagateError } from "@mediagate/io";
import {
  type ExecOptions,
  type ExecResult,
  type OutputListener,
  shellQuote,
} from "@mediagate/sandbox";
import type { ToolRunner } from "../agents/types.js";
import { Defaults } from "../defaults.js";
import { type SandboxProblem, sandboxProblemOf } from "./sandbox-errors.js";

/** The part of `Sandbox` a turn's tools need. */
export interface SessionShell {
  run(slot: string, sessionKey: string, command: string, opts?: ExecOptions): Promise<ExecResult>;
}

/** Defaults of {@link createToolRunner}. */
export const ToolRunnerDefaults = Defaults.toolRunner;

/** A file operation of a tool failed inside the container. */
export class ToolFileError extends MediagateError {
  override readonly name = "ToolFileError";
  readonly code = "MG_TOOL_FILE_FAILED";
  constructor(
    readonly operation: "readFile" | "writeFile",
    readonly path: string,
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`${operation} ${path} failed (exit ${exitCode}): ${stderr.trim() || "no output"}`);
  }
}

/** A turn's tools, remembering whether the sandbox itself failed (even if the agent coped). */
export interface TurnToolRunner extends ToolRunner {
  readonly sandboxProblem: SandboxProblem | undefined;
}

/** Options of {@link createToolRunner}. */
export interface ToolRunnerOptions {
  readonly sandbox: SessionShell;
  readonly slot: string;
  readonly sessionKey: string;
  /** The turn's signal (`/stop`): every call is cancelled with it. */
  readonly signal: AbortSignal;
  /**
   * Awaited once, when the turn's first command is about to run in the ready container (the
   * journal marks the turn started there: docs/durability.md).
   */
  readonly beforeFirstCommand?: (() => Promise<void>) | undefined;
  readonly timeoutMs?: number;
}

function combine(turn: AbortSignal, call: AbortSignal | undefined): AbortSignal {
  return call === undefined ? turn : AbortSignal.any([turn, call]);
}

/**
 * The {@link ToolRunner} of one turn, bound to its slot and session shell. File access goes
 * through the same shell (busybox `head`, `base64`), so relative paths follow the session's cwd.
 */
export function createToolRunner(options: ToolRunnerOptions): TurnToolRunner {
  const { sandbox, slot, sessionKey, signal } = options;
  const defaultTimeout = options.timeoutMs ?? ToolRunnerDefaults.timeoutMs;
  let problem: SandboxProblem | undefined;
  let firstCommand: Promise<void> | undefined;
  const beforeCommand = () => {
    firstCommand ??= options.beforeFirstCommand?.() ?? Promise.resolve();
    return firstCommand;
  };
  const exec = async (
    command: string,
    timeoutMs = defaultTimeout,
    callSignal?: AbortSignal,
    env?: Readonly<Record<string, string>>,
    onOutput?: (text: string) => void,
  ) => {
    try {
      return await sandbox.run(slot, sessionKey, command, {
        timeoutMs,
        signal: combine(signal, callSignal),
        beforeCommand,
        ...(env === undefined ? {} : { env }),
        ...(onOutput === undefined ? {} : { onOutput: outputText(onOutput) }),
      });
    } catch (error) {
      problem ??= sandboxProblemOf(error);
      throw error;
    }
  };

  return {
    get sandboxProblem() {
      return problem;
    },

    run(command, opts) {
      return exec(command, opts?.timeoutMs, opts?.signal, opts?.env, opts?.onOutput);
    },

    async readFile(path, maxBytes = ToolRunnerDefaults.readMaxBytes) {
      const p = shellQuote(path);
      const cap = Math.max(0, Math.trunc(maxBytes));
      const result = await exec(
        `if [ ! -f ${p} ]; then echo "not a regular file: "${p} >&2; exit 1; fi; head -c ${cap} ${p} | base64`,
      );
      if (result.exitCode !== 0 || result.aborted || result.timedOut) {
        throw new ToolFileError("readFile", path, result.exitCode, result.stderr);
      }
      return Buffer.from(result.stdout.replace(/\s+/g, ""), "base64").toString("utf8");
    },

    async writeFile(path, content) {
      const p = shellQuote(path);
      const encoded = Buffer.from(content, "utf8").toString("base64");
      const step = ToolRunnerDefaults.writeChunkChars;
      let first = true;
      for (let at = 0; first || at < encoded.length; at += step) {
        const chunk = encoded.slice(at, at + step);
        const redirect = first ? ">" : ">>";
        const prefix = first ? `mkdir -p -- "$(dirname -- ${p})" && ` : "";
        const result = await exec(`${prefix}printf '%s' '${chunk}' | base64 -d ${redirect} ${p}`);
        if (result.exitCode !== 0 || result.aborted || result.timedOut) {
          throw new ToolFileError("writeFile", path, result.exitCode, result.stderr);
        }
        first = false;
      }
    },
  };
}

/**
 * The sandbox's output bytes as text for `onOutput`: one decoder per stream, so a character
 * split across chunks (or by a chunk of the other stream between its halves) arrives whole.
 */
function outputText(onOutput: (text: string) => void): OutputListener {
  const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
  return (chunk, stream) => {
    const text = decoders[stream].write(chunk);
    if (text !== "") onOutput(text);
  };
}
