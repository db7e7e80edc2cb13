export type { Classification, KindDirectives } from "./classify.js";
export { classify } from "./classify.js";
export { MediaConfigError } from "./errors.js";
export type { MediaExtraction, MediaTag } from "./extract.js";
export { extractMedia } from "./extract.js";
export type { DiscordLimitOptions, TelegramLimitOptions } from "./limits.js";
export { DiscordDefaults, discordLimits, TelegramDefaults, telegramLimits } from "./limits.js";
export { displayName, formatBytes, noticeFor } from "./notice.js";
export { ChunkRing, DescriptorFile } from "./open-file.js";
export { PlanDefaults, planMedia, recordPlan, resumePlan } from "./plan.js";
export { isPlanRecord } from "./plan-record.js";
export type { DeliveryPolicy, PolicyOptions } from "./policy.js";
export { createPolicy, HOME_SECRETS, SYSTEM_DIRS } from "./policy.js";
export type {
  CandidateResult,
  CandidateSource,
  CandidateTrace,
  ContainerFileSource,
  DeniedMedia,
  FileReader,
  MediaKind,
  MediaOutcome,
  MediaPlan,
  OpenedFile,
  PlannedItem,
  PlanRecord,
  ReadyMedia,
  ResumedPlan,
  ResumeOptions,
  TooLargeMedia,
  TranslateContext,
  UnreachableMedia,
  UploadLimits,
} from "./types.js";
