import { randomBytes } from "node:crypto";
import { formatBytes } from "@mediagate/media";
import { Defaults } from "../defaults.js";
import type { ToolRunner } from "./types.js";

/** Where a cut command output was saved whole, or why it could not be. */
export type OutputFile =
  | { readonly path: string; readonly bytes: number }
  | { readonly error: string };

/**
 * A fresh name for a saved output: the UTC time and 4 random bytes, so two turns never share
 * one and nothing a command printed before can have made it (a link in its place) in advance.
 */
export function outputFileName(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/\.\d+Z$/, "")
    .replace(/[-:]/g, "")
    .replace("T", "-");
  return `output-${stamp}-${randomBytes(4).toString("hex")}.txt`;
}

/**
 * Writes a command's whole output into the session's workspace (`dir`, default
 * `Defaults.shellAgent.outputFileDir`) through the turn's own tools, as the session's user:
 * the reply then names it with a `MEDIA:` tag and the outbox delivers it like any file the
 * command made (docs/media.md, "Long command output"). Its size is what the sandbox kept of the
 * output (at most its per-stream cap), never more. A failure is answered, not thrown: the
 * reply says the output could not be saved.
 */
export async function saveOutputFile(
  tools: ToolRunner,
  output: string,
  dir: string = Defaults.shellAgent.outputFileDir,
): Promise<OutputFile> {
  const path = `${dir}/${outputFileName()}`;
  try {
    await tools.writeFile(path, output);
    return { path, bytes: Buffer.byteLength(output, "utf8") };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * The reply's lines about the saved output: its `MEDIA:` tag (first, so no fence the output
 * opened can hide it) and a line saying what the file holds; or why there is no file.
 */
export function outputFileLines(file: OutputFile, truncatedBySandbox: boolean): string[] {
  if ("error" in file) return ["[the whole output could not be saved as a file]"];
  const name = file.path.slice(file.path.lastIndexOf("/") + 1);
  const what = truncatedBySandbox ? "what the sandbox kept of the output" : "the whole output";
  return [`MEDIA:${file.path}`, `[${what} (${formatBytes(file.bytes)}) is attached as ${name}]`];
}
