export { factsIn, factsModel, isSummaryRequest } from "./facts-model.js";
export { LocalToolRunner, OutsideWorkspaceError } from "./local-tool-runner.js";
export type {
  ErrorReply,
  FakeReply,
  FakeToolCall,
  HangReply,
  RawReply,
  StreamShape,
  TextReply,
  ToolCallsReply,
} from "./replies.js";
export { reply } from "./replies.js";
export type {
  ChatRequestBody,
  FakeOpenAIOptions,
  ModelListing,
  RecordedRequest,
  RecordedTranscription,
  ReplyHandler,
  RequestContentPart,
  RequestMessage,
  TranscriptionReply,
} from "./server.js";
export { contentText, derivedTranscript, FakeOpenAIServer } from "./server.js";
export { completionTokens, contextLengthErrorBody, promptTokens } from "./tokens.js";
export type { FakeProvider, FakeUsage } from "./usage.js";
export { derivedUsage, sumUsage } from "./usage.js";
