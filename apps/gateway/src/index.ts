export { ChatStreams } from "./agents/chat-stream.js";
export { knownContextTokens } from "./agents/model-context.js";
export type { TokenUsage } from "./agents/models.js";
export { contextTokensOf, costOf, usageOf } from "./agents/models.js";
export { OpenAIAgent } from "./agents/openai.js";
export type { AbortPhase, OpenAIFailureKind } from "./agents/openai-errors.js";
export {
  OpenAIAgentOptionsError,
  OpenAIEndpointError,
  OpenAITurnAbortedError,
} from "./agents/openai-errors.js";
export type { OpenAIAgentLimits, OpenAIAgentOptions } from "./agents/openai-options.js";
export { OpenAIAgentDefaults } from "./agents/openai-options.js";
export type { ShellAgentOptions } from "./agents/shell.js";
export { formatShellReply, ShellAgent, ShellAgentDefaults } from "./agents/shell.js";
export type {
  Agent,
  AgentTurnInput,
  AgentTurnResult,
  CompactRequest,
  CompactResult,
  ContainerFileReader,
  ToolRunner,
  TurnAttachment,
} from "./agents/types.js";
export type { ConsoleChannelOptions } from "./channels/console.js";
export { ConsoleChannel, ConsoleDefaults } from "./channels/console.js";
export type { DiscordChannelOptions, DiscordRetryOptions } from "./channels/discord/index.js";
export {
  DiscordChannel,
  DiscordChannelDefaults,
  DiscordRequestError,
} from "./channels/discord/index.js";
export type { AmbiguousSends } from "./channels/telegram/errors.js";
export { classifyTelegramError, TelegramDeliveryError } from "./channels/telegram/errors.js";
export { TelegramPollingError } from "./channels/telegram/polling.js";
export type { GrammyFetch } from "./channels/telegram/request-tracking.js";
export { trackingFetch } from "./channels/telegram/request-tracking.js";
export type { TelegramChannelOptions } from "./channels/telegram/telegram-channel.js";
export {
  TelegramChannel,
  TelegramChannelDefaults,
  TelegramStartError,
} from "./channels/telegram/telegram-channel.js";
export type {
  ChannelAdapter,
  ChannelHealth,
  ChannelStartOptions,
  ChannelState,
  ChatCursor,
  ChatTarget,
  ChatType,
  DeliverOptions,
  DeliveryOutcome,
  DeliveryProgress,
  DeliveryReport,
  InboundHandler,
  InboundMessage,
  InboundOptions,
  OutboundReply,
  Platform,
  StatusMessages,
  StepResult,
} from "./channels/types.js";
export { StatusCallError } from "./channels/types.js";
export type { GatewayEnv } from "./config/env.js";
export { emptyEnv, readEnv } from "./config/env.js";
export type { ConfigIssue } from "./config/errors.js";
export { ConfigError } from "./config/errors.js";
export { loadConfig, resolveConfig } from "./config/load.js";
export type {
  AgentSettings,
  BudgetSettings,
  BusyMode,
  DiscordSettings,
  GatewayConfig,
  ModelPrices,
  ModelSettings,
  ProfileConfig,
  ProgressSettings,
  TelegramSettings,
} from "./config/types.js";
export type { ReplyPart, ReplyPartsOptions } from "./delivery/reply-parts.js";
export { ReplyFileName, replyParts } from "./delivery/reply-parts.js";
export type {
  ResolvedRetryOptions,
  RetryClassifier,
  RetryEvent,
  RetryOptions,
  RetryVerdict,
} from "./delivery/retry.js";
export { RateLimitedError, RetryDefaults, withRetry } from "./delivery/retry.js";
export type { SplitTextOptions } from "./delivery/split-text.js";
export { codePointLength, splitText, utf16Length } from "./delivery/split-text.js";
export type { StorageErrorInit } from "./durable/errors.js";
export { StorageError } from "./durable/errors.js";
export type { JournalOptions } from "./durable/journal.js";
export { journalDbPath, SqliteJournal } from "./durable/journal.js";
export type { PostgresJournalOptions } from "./durable/postgres-journal.js";
export { PostgresJournal, PostgresJournalDefaults } from "./durable/postgres-journal.js";
export { OwnerTakenError } from "./durable/postgres-owner.js";
export type {
  Journal,
  JournalEntry,
  JournalOutcome,
  JournalState,
  LeftoverStatus,
  OutboxRecord,
  OutboxReply,
  OutboxState,
  RecordResult,
  StatusRecord,
} from "./durable/types.js";
export type { GatewayOptions } from "./gateway.js";
export {
  Gateway,
  GatewayDefaults,
  interruptedText,
  NotRecordedDamagedText,
  NotRecordedText,
  NotRecordedUnreachableText,
} from "./gateway.js";
export type { LineSink, LogFormat, Logger, LoggerOptions, LogLevel } from "./log.js";
export {
  createLogger,
  LogDefaults,
  LogLevelError,
  LogLevels,
  resolveLogLevel,
  silentLogger,
} from "./log.js";
export { StoreDownText } from "./pipeline/boundary.js";
export {
  collectedText,
  InterruptedByMessageError,
  InterruptedTurnText,
  queuedText,
  queueFullText,
} from "./pipeline/enqueue-turn.js";
export { RevokedWhileQueuedText } from "./pipeline/recheck-access.js";
export { PipelineStepError } from "./pipeline/step-error.js";
export type { TurnExit } from "./pipeline/turn-report.js";
export { ProfileRuntime } from "./profiles/profile-runtime.js";
export { Redacted, Redactor, redactText } from "./redact.js";
export type { SessionContext } from "./session/context.js";
export type { ParsedSessionKey, SessionKeyParts, SessionKeyPolicy } from "./session/key.js";
export { buildSessionKey, parseSessionKey } from "./session/key.js";
export { TurnQueue } from "./session/queue.js";
export type {
  Conversation,
  ConversationSummary,
  StoredMessage,
  SummaryWrite,
} from "./state/conversation.js";
export { StateSchemaError, StateStoreError } from "./state/errors.js";
export type { CurrentSession, StateStore } from "./state/state-store.js";
export type { StateStoreOptions } from "./state/store.js";
export { SqliteStateStore, stateDbPath } from "./state/store.js";
export type { ChatMessage, ChatToolCall } from "./state/types.js";
export { isChatMessage } from "./state/types.js";
export type {
  DailyUsage,
  UsagePeriods,
  UsageRecord,
  UsageScope,
  UsageTotals,
  UserUsage,
} from "./state/usage.js";
export { usageDays } from "./state/usage.js";
export type { ProgressClock, ProgressOptions, StatusLedger } from "./turn-progress/progress.js";
export {
  formatElapsed,
  ProgressDefaults,
  RealProgressClock,
  statusText,
  TurnProgress,
} from "./turn-progress/progress.js";
export { LogRing } from "./web/log-ring.js";
