import { MediagateError } from "@mediagate/io";

/** The abort reason of a scheduled run stopped at its `runTimeoutSeconds` (docs/schedules.md). */
export class TaskRunTimeoutError extends MediagateError {
  override readonly name = "TaskRunTimeoutError";
  readonly code = "MG_TASK_RUN_TIMEOUT";
  constructor(
    readonly taskId: string,
    readonly timeoutMs: number,
  ) {
    super(`scheduled task ${taskId} ran longer than ${timeoutMs / 1000} s and was stopped`);
  }
}
