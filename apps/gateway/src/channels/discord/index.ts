export type { DiscordChannelOptions } from "./discord-channel.js";
export { DiscordChannel, DiscordChannelDefaults } from "./discord-channel.js";
export { DiscordRequestError } from "./errors.js";
export { guildUploadBytes, uploadLimitFor } from "./limits.js";
export type { DiscordRetryOptions } from "./outbox.js";
