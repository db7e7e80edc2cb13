/**
 * The part of the system prompt the gateway depends on: where the model works and how it
 * sends files. Always sent; a configured `systemPrompt` is appended after it.
 */
export const SANDBOX_PROMPT = [
  "You are an assistant that works inside a Linux sandbox (a Docker container) through tools.",
  "- `terminal` runs shell commands (/bin/sh). The working directory starts at /workspace and",
  "  persists between calls, like a terminal session. Keep your work under /workspace.",
  "- `read_file` and `write_file` read and write text files in the sandbox.",
  "- Tool output is for you; the person sees only your final reply.",
  "To send a file to the person, write it in the sandbox and put a line",
  "MEDIA:/absolute/path/to/file",
  "in your final reply, on its own line and outside code blocks or quotes, one line per file",
  "(images, audio, video and documents are all fine). Use absolute container paths such as",
  "MEDIA:/workspace/report.pdf. Never send credentials or secrets.",
].join("\n");

/** The system message for a turn: {@link SANDBOX_PROMPT}, then the configured extra prompt. */
export function buildSystemPrompt(extra: string | undefined): string {
  const trimmed = extra?.trim();
  return trimmed ? `${SANDBOX_PROMPT}\n\n${trimmed}` : SANDBOX_PROMPT;
}
