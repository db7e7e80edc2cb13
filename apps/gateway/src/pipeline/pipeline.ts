import { authorize } from "./authorize.js";
import { bindSession } from "./bind-session.js";
import { handleCommands } from "./commands.js";
import { deliver } from "./deliver.js";
import { enqueueTurn } from "./enqueue-turn.js";
import { sendNotices } from "./notices.js";
import { planReplyMedia } from "./plan-media.js";
import { runTurn } from "./run-turn.js";
import { compose, type Middleware } from "./types.js";

/**
 * The message pipeline, in order: authorize → bind session → admin command | enqueue turn →
 * agent turn → plan media → deliver → notices.
 */
export const PipelineSteps: readonly Middleware[] = [
  authorize,
  bindSession,
  handleCommands,
  enqueueTurn,
  runTurn,
  planReplyMedia,
  deliver,
  sendNotices,
];

/** The composed pipeline. */
export const handleMessage = compose(PipelineSteps);
