import { formatBytes } from "@mediagate/media";
import type { ExecResult } from "@mediagate/sandbox";
import { Defaults } from "../defaults.js";
import { type OutputFile, outputFileLines, saveOutputFile } from "./shell-output-file.js";
import { isToolRefused } from "./tool-refused.js";
import { keepTail, omittedMarker } from "./tools-text.js";
import type { Agent, AgentTurnInput, AgentTurnResult, TurnAttachment } from "./types.js";

/** Options of {@link ShellAgent}. */
export interface ShellAgentOptions {
  /**
   * Cap on the command output shown, in chars; the tail is kept. Default:
   * `Defaults.shellAgent.maxReplyChars`.
   */
  readonly maxReplyChars?: number;
  /** Time limit of one command. Default: `Defaults.shellAgent.timeoutMs`. */
  readonly timeoutMs?: number;
}

/** Defaults of {@link ShellAgentOptions}. */
export const ShellAgentDefaults = Defaults.shellAgent satisfies Required<ShellAgentOptions>;

/** `MEDIA:` lines rescued from the dropped part of a long output, at most this many. */
const MaxRescuedMediaLines = 10;
const MaxMediaLineChars = 4_096;

/**
 * Set for a command sent with files: their container paths, one per line (the sanitized names
 * hold no newline). For that command only; the session's shell does not keep it.
 */
export const AttachmentsVariable = "MEDIAGATE_ATTACHMENTS";

/** The reply to files sent without a command: where each one is, its kind and size. */
export function listFiles(files: readonly TurnAttachment[]): string {
  return files.map((f) => `${f.containerPath} (${f.kind}, ${formatBytes(f.size)})`).join("\n");
}

const NoOutput = "(no output)";
const NothingToRun = "(nothing to run)";

/**
 * The lines of `text` that start with a `MEDIA:` tag (after indentation). They are the
 * files the command asked to send; cutting them away with the rest of a long output would
 * silently drop an attachment.
 */
function mediaLines(text: string): string[] {
  const found: string[] = [];
  for (const line of text.split("\n")) {
    const trimmed = line.trim();
    if (trimmed.startsWith("MEDIA:") && trimmed.length <= MaxMediaLineChars) {
      found.push(trimmed);
      if (found.length === MaxRescuedMediaLines) break;
    }
  }
  return found;
}

/** A command's output as the reply shows it: stdout, then stderr, each without its final newline. */
function shellOutput(result: ExecResult): string {
  return [result.stdout, result.stderr]
    .map((part) => part.replace(/\n$/, ""))
    .filter((part) => part.length > 0)
    .join("\n");
}

/**
 * Builds the shell agent's reply from a command result:
 * - stdout, then stderr (the exec API returns them separately, so their interleaving is
 *   lost), each without its final newline;
 * - longer than `maxReplyChars`: the tail is kept (a terminal shows the end, and that is
 *   where results and errors are), preceded by an omission marker and by any `MEDIA:` lines
 *   of the dropped part; when `file` says where the whole output was saved, its `MEDIA:` tag
 *   and a line naming it come first (or a line saying it could not be saved);
 * - `(no output)` when both are empty or only whitespace (blank lines, spaces);
 * - then one line of notes: `[exit code N]` when non-zero, `[timed out]`, `[aborted]`,
 *   `[output truncated by the sandbox]`.
 */
export function formatShellReply(
  result: ExecResult,
  maxReplyChars: number,
  file?: OutputFile,
): string {
  const output = shellOutput(result);
  const { text, omitted } = keepTail(output, maxReplyChars);
  let body = text;
  if (omitted > 0) {
    const rescued = mediaLines(output.slice(0, omitted));
    const saved = file === undefined ? [] : outputFileLines(file, result.truncated);
    body = [...saved, ...rescued, omittedMarker(omitted), text].join("\n");
  }
  // Blank text is no message on any chat (a blank reply is sent as nothing at all): say so.
  if (body.trim() === "") body = NoOutput;

  const notes: string[] = [];
  if (result.timedOut) notes.push("[timed out]");
  else if (result.aborted) notes.push("[aborted]");
  else if (result.exitCode !== 0) notes.push(`[exit code ${result.exitCode}]`);
  if (result.truncated) notes.push("[output truncated by the sandbox]");
  return notes.length > 0 ? `${body}\n${notes.join(" ")}` : body;
}

/**
 * The embedded default agent (docs/sessions.md, needs no API key): the message text is a command
 * line, run in the session's persistent shell in its sandbox (cwd starts at /workspace and
 * persists, like a terminal); the output is the final reply, so `MEDIA:` lines printed by
 * the command are delivered; an output cut to `maxReplyChars` is also saved whole in the
 * workspace and delivered as a file. Files sent with a command are named to it in
 * `$MEDIAGATE_ATTACHMENTS`; files sent without one run nothing and are listed
 * (docs/inbound-media.md). An abort during the command gives a reply noting it (the
 * output so far is still useful), not an error.
 */
export class ShellAgent implements Agent {
  readonly kind = "shell" as const;
  readonly #settings: Required<ShellAgentOptions>;

  constructor(options: ShellAgentOptions = {}) {
    this.#settings = { ...ShellAgentDefaults, ...options };
  }

  async runTurn(input: AgentTurnInput): Promise<AgentTurnResult> {
    const command = input.text.trim();
    if (command === "") {
      return { reply: input.attachments.length > 0 ? listFiles(input.attachments) : NothingToRun };
    }
    if (input.signal.aborted) return { reply: "[aborted]" };
    let result: ExecResult;
    try {
      result = await input.tools.run(command, {
        timeoutMs: this.#settings.timeoutMs,
        signal: input.signal,
        // The output shows as it comes (docs/streaming.md); the reply is the formatted result.
        ...(input.onText === undefined ? {} : { onOutput: input.onText }),
        ...(input.attachments.length > 0
          ? {
              env: {
                [AttachmentsVariable]: input.attachments.map((f) => f.containerPath).join("\n"),
              },
            }
          : {}),
      });
    } catch (error) {
      if (isToolRefused(error)) return { reply: `🚫 Not run: ${error.message}` };
      throw error;
    }
    const { maxReplyChars } = this.#settings;
    const output = shellOutput(result);
    // A cut output also goes whole as a file (docs/media.md, "Long command output").
    const file =
      output.length > maxReplyChars && !input.signal.aborted
        ? await saveOutputFile(input.tools, output)
        : undefined;
    return { reply: formatShellReply(result, maxReplyChars, file) };
  }
}
