import { authorize } from "./authorize.js";
import { bindSession } from "./bind-session.js";
import { withErrorBoundary } from "./boundary.js";
import { handleCommands } from "./commands.js";
import { enqueueTurn } from "./enqueue-turn.js";
import { reactToMessage, showWorking } from "./react.js";
import { recheckAccess } from "./recheck-access.js";
import { runTurn } from "./run-turn.js";
import { saveAttachments } from "./save-attachments.js";
import { sendReply } from "./send-reply.js";
import { compose, type Middleware } from "./types.js";

/**
 * The message pipeline, in order: authorize → bind session → admin command | status reaction
 * (`seen`, then the turn's outcome) → enqueue turn → (the turn starts) access checked again
 * for a paired user → `working` → save the message's files in
 * the inbox → agent turn → send reply (outbox: record, plan media, deliver, notices).
 */
export const PipelineSteps: readonly Middleware[] = [
  authorize,
  bindSession,
  handleCommands,
  reactToMessage,
  enqueueTurn,
  recheckAccess,
  showWorking,
  saveAttachments,
  runTurn,
  sendReply,
];

/**
 * The composed pipeline inside its error boundary: it never rejects; a step that throws is
 * logged by name (`pipeline step "runTurn" failed`) and the chat gets the generic notice.
 */
export const handleMessage = withErrorBoundary(compose(PipelineSteps));
