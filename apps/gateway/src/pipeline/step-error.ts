import { MediagateError } from "@mediagate/io";

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A pipeline step threw (the way grammY's `BotError` wraps a failed middleware): which step,
 * and the error it threw as `cause`. `compose` makes it around the step that threw first; the
 * steps it passes through on the way out leave it as it is.
 */
export class PipelineStepError extends MediagateError {
  override readonly name = "PipelineStepError";
  readonly code = "MG_PIPELINE_STEP_FAILED";
  constructor(
    /** The step's function name (`runTurn`, `sendReply`, …). */
    readonly step: string,
    override readonly cause: unknown,
  ) {
    super(`pipeline step "${step}" failed: ${messageOf(cause)}`, { cause });
  }
}

/** The error a step threw, unwrapped from its {@link PipelineStepError}. */
export function stepCause(error: unknown): unknown {
  return error instanceof PipelineStepError ? error.cause : error;
}

/** The step that failed, when `error` came out of the pipeline. */
export function failedStep(error: unknown): string | undefined {
  return error instanceof PipelineStepError ? error.step : undefined;
}
