import type { ExecResult } from "@mediagate/sandbox";
import type { ChatCompletionFunctionTool } from "openai/resources/chat/completions";
import { z } from "zod";
import type { ChatToolCall } from "../state/types.js";
import { isToolRefused } from "./tool-refused.js";
import { truncateMiddle } from "./tools-text.js";
import type { ToolRunner } from "./types.js";

/** Names of the tools the `openai` agent offers the model (docs/sessions.md). */
export const TOOL_NAMES = ["terminal", "read_file", "write_file"] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** The tools as the chat-completions API expects them. */
export const TOOL_DEFINITIONS: readonly ChatCompletionFunctionTool[] = [
  {
    type: "function",
    function: {
      name: "terminal",
      description:
        "Run a shell command (/bin/sh) in the Linux sandbox. The working directory starts at " +
        "/workspace and persists between calls, as do exported variables. Returns the exit " +
        "code, stdout and stderr; long output is truncated in the middle.",
      parameters: {
        type: "object",
        properties: { command: { type: "string", description: "The command line to run." } },
        required: ["command"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a UTF-8 text file of the sandbox. Relative paths start at the cwd.",
      parameters: {
        type: "object",
        properties: { path: { type: "string", description: "Path of the file." } },
        required: ["path"],
        additionalProperties: false,
      },
    },
  },
  {
    type: "function",
    function: {
      name: "write_file",
      description:
        "Create or replace a text file in the sandbox, creating parent directories. " +
        "Relative paths start at the cwd.",
      parameters: {
        type: "object",
        properties: {
          path: { type: "string", description: "Path of the file." },
          content: { type: "string", description: "The complete new content." },
        },
        required: ["path", "content"],
        additionalProperties: false,
      },
    },
  },
];

const ArgumentSchemas = {
  terminal: z.object({ command: z.string().min(1) }),
  read_file: z.object({ path: z.string().min(1) }),
  write_file: z.object({ path: z.string().min(1), content: z.string() }),
} as const satisfies Record<ToolName, z.ZodType>;

/** Limits for one tool call. */
export interface ToolCallOptions {
  readonly signal: AbortSignal;
  /** Time limit of a `terminal` command. */
  readonly timeoutMs: number;
  /** Cap on the text sent back to the model; the middle of longer output is dropped. */
  readonly maxOutputChars: number;
  /** Cap on the bytes `read_file` reads. */
  readonly readMaxBytes: number;
}

/** What a tool call produced, for the tool message and the log. */
export interface ToolCallOutcome {
  /** The tool message content (already truncated). */
  readonly content: string;
  /** False when the call could not be carried out (bad arguments, unknown tool, I/O error). */
  readonly ok: boolean;
}

function isToolName(name: string): name is ToolName {
  return (TOOL_NAMES as readonly string[]).includes(name);
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The sandbox itself is gone: no point telling the model, the turn fails and the gateway
 * tells the chat (docs/sandbox.md). Matched by name so this module needs no runtime import of the
 * sandbox package.
 */
function isInfrastructureError(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error.name === "DockerUnavailableError" || error.name === "ImageMissingError")
  );
}

/** Renders a command result for the model: exit code, notes, then stdout and stderr. */
export function formatExecResult(result: ExecResult): string {
  const lines = [`exit_code: ${result.exitCode}`];
  if (result.timedOut) lines.push("note: the command hit its time limit and was killed");
  if (result.aborted) lines.push("note: the command was cancelled");
  if (result.truncated) lines.push("note: the sandbox dropped output beyond its cap");
  if (result.stdout.length > 0) lines.push("stdout:", result.stdout.replace(/\n$/, ""));
  if (result.stderr.length > 0) lines.push("stderr:", result.stderr.replace(/\n$/, ""));
  if (result.stdout.length === 0 && result.stderr.length === 0) lines.push("(no output)");
  return lines.join("\n");
}

function parseArguments(raw: string): unknown {
  try {
    return JSON.parse(raw.trim() === "" ? "{}" : raw);
  } catch {
    return undefined;
  }
}

function invalid(name: ToolName, error: z.ZodError): ToolCallOutcome {
  const problems = error.issues
    .map((issue) => `${issue.path.join(".") || "arguments"}: ${issue.message}`)
    .join("; ");
  return { ok: false, content: `error: invalid arguments for ${name}: ${problems}` };
}

async function dispatch(
  name: ToolName,
  args: unknown,
  tools: ToolRunner,
  options: ToolCallOptions,
): Promise<ToolCallOutcome> {
  switch (name) {
    case "terminal": {
      const parsed = ArgumentSchemas.terminal.safeParse(args);
      if (!parsed.success) return invalid(name, parsed.error);
      const result = await tools.run(parsed.data.command, {
        timeoutMs: options.timeoutMs,
        signal: options.signal,
      });
      return { ok: true, content: formatExecResult(result) };
    }
    case "read_file": {
      const parsed = ArgumentSchemas.read_file.safeParse(args);
      if (!parsed.success) return invalid(name, parsed.error);
      const { path } = parsed.data;
      try {
        return { ok: true, content: await tools.readFile(path, options.readMaxBytes) };
      } catch (error) {
        if (isInfrastructureError(error)) throw error;
        return { ok: false, content: `error: cannot read ${path}: ${describe(error)}` };
      }
    }
    case "write_file": {
      const parsed = ArgumentSchemas.write_file.safeParse(args);
      if (!parsed.success) return invalid(name, parsed.error);
      const { path, content } = parsed.data;
      try {
        await tools.writeFile(path, content);
        return { ok: true, content: `wrote ${content.length} chars to ${path}` };
      } catch (error) {
        if (isInfrastructureError(error) || isToolRefused(error)) throw error;
        return { ok: false, content: `error: cannot write ${path}: ${describe(error)}` };
      }
    }
  }
}

/**
 * Executes one tool call through the turn's {@link ToolRunner}. Problems the model can act
 * on (unknown tool, arguments that are not the documented JSON, a file that cannot be
 * read or written) come back as an `error: …` tool message, an action the runner refused
 * (approvals) as `not run: …`; a failing `terminal` run, a
 * missing Docker daemon or image, and anything else that means the sandbox itself failed
 * are thrown and end the turn.
 */
export async function executeToolCall(
  call: ChatToolCall,
  tools: ToolRunner,
  options: ToolCallOptions,
): Promise<ToolCallOutcome> {
  const { name, arguments: raw } = call.function;
  let outcome: ToolCallOutcome;
  if (!isToolName(name)) {
    outcome = {
      ok: false,
      content: `error: unknown tool ${JSON.stringify(name)}; available: ${TOOL_NAMES.join(", ")}`,
    };
  } else {
    const args = parseArguments(raw);
    try {
      outcome =
        args === undefined
          ? { ok: false, content: `error: the arguments of ${name} are not valid JSON` }
          : await dispatch(name, args, tools, options);
    } catch (error) {
      // Not allowed (docs/approvals.md): nothing ran; the model reads why and may try another way.
      if (!isToolRefused(error)) throw error;
      outcome = { ok: false, content: `not run: ${error.message}` };
    }
  }
  return { ok: outcome.ok, content: truncateMiddle(outcome.content, options.maxOutputChars) };
}
