export type {
  AttachmentInput,
  AttachmentObject,
  DownloadFailure,
  RecordedDownload,
} from "./cdn.js";
export { FakeCdn, IsVoiceMessage } from "./cdn.js";
export { type DiscordEditLimitOptions, DiscordEditLimits } from "./edit-limits.js";
export type { ChannelFixture, GuildFixture, ThreadFixture, UserObject } from "./fixtures.js";
export {
  botRoleId,
  defaultGuild,
  snowflake,
  uploadLimitForTier,
  userObject,
} from "./fixtures.js";
export { Intent, Op } from "./gateway.js";
export type {
  ApplicationCommand,
  FakeInteraction,
  InteractionMessage,
} from "./interactions.js";
export { FakeInteractions } from "./interactions.js";
export { asShown } from "./markdown.js";
export type { ReactionChange } from "./reactions.js";
export { FakeReactions } from "./reactions.js";
export type { FailureInjection, FailureKind, RecordedCall, RecordedFile } from "./requests.js";
export type { RequestGate } from "./rest.js";
export type {
  DispatchedMessage,
  FakeDiscordOptions,
  MessageInput,
  SlashCommandInput,
  SlashCommandOption,
} from "./server.js";
export { FakeDiscord } from "./server.js";
export type { StoredMessage } from "./world.js";
