import { MediagateError } from "@mediagate/io";

/**
 * A {@link ToolRunner} did not carry out an action because it was not allowed to
 * (docs/approvals.md): an approver denied it, nobody answered in time, or too many approvals
 * were waiting. Nothing ran. The `openai` agent gives the model `message` as the tool result
 * (it can choose another way); the `shell` agent replies with it.
 */
export class ToolRefusedError extends MediagateError {
  override readonly name = "ToolRefusedError";
  readonly code = "MG_TOOL_REFUSED";
  constructor(
    message: string,
    /** How it was refused: `denied`, `expired` or `busy` (too many approvals waiting). */
    readonly reason: "denied" | "expired" | "busy",
  ) {
    super(message);
  }
}

/** Whether `error` is a {@link ToolRefusedError} (by name: it may cross module copies). */
export function isToolRefused(error: unknown): error is ToolRefusedError {
  return error instanceof Error && error.name === "ToolRefusedError";
}
