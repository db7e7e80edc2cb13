export type { CallbackAnswer, FakeCallbackQuery, InlineButton } from "./callbacks.js";
export { type EditLimitOptions, EditLimits } from "./edit-limits.js";
export type { Fault } from "./faults.js";
export {
  type FileInput,
  PublicDownloadMaxBytes,
  type RecordedDownload,
  type StoredFile,
  type StoredKind,
} from "./files.js";
export type { MediaInput, SentMedia } from "./media-updates.js";
export { CommandMenus, type MenuEntry, type MenuScope } from "./menus.js";
export { TelegramLimits } from "./methods.js";
export { boundaryOf, MultipartError, type MultipartPart, parseMultipart } from "./multipart.js";
export type { ApiResponse, UploadedFile } from "./protocol.js";
export { AllowedReactionEmoji, type ReactionChange, ReactionStore } from "./reactions.js";
export {
  BlockedByUser,
  FakeTelegram,
  FakeTelegramDefaults,
  type FakeTelegramOptions,
  type GoneChat,
  type RecordedCall,
  type UploadProgress,
} from "./server.js";
export type {
  ChannelPostInput,
  GroupMigrationInput,
  GroupTextInput,
  PrivateTextInput,
  SenderInput,
  TopicTextInput,
  UpdateInput,
} from "./updates.js";
export {
  type WebhookAttempt,
  WebhookDelivery,
  type WebhookDeliveryOptions,
} from "./webhook-delivery.js";
