import type { TaskScheduler } from "./scheduler.js";

/** What the task commands need of the gateway (`PipelineServices.schedules`, docs/schedules.md). */
export interface TaskServices {
  schedulerOf(profile: string): TaskScheduler | undefined;
  /** The wall clock tasks are timed by. */
  now(): number;
}
