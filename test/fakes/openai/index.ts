export { LocalToolRunner, OutsideWorkspaceError } from "./local-tool-runner.js";
export type {
  ErrorReply,
  FakeReply,
  FakeToolCall,
  HangReply,
  RawReply,
  TextReply,
  ToolCallsReply,
} from "./replies.js";
export { reply } from "./replies.js";
export type {
  ChatRequestBody,
  FakeOpenAIOptions,
  ModelListing,
  RecordedRequest,
  ReplyHandler,
  RequestMessage,
} from "./server.js";
export { FakeOpenAIServer } from "./server.js";
