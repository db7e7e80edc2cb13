import { isRecord } from "./requests.js";

/** The mention fields of a message object, as Discord fills them from its content. */
export interface MentionFields {
  readonly mention_everyone: boolean;
  /** User ids mentioned (the message object carries user objects; see `World`). */
  readonly mentionedUserIds: readonly string[];
  readonly mention_roles: readonly string[];
}

/**
 * What Discord makes of the mentions in a bot's content, on a create and on every edit alike
 * (an interaction's UPDATE_MESSAGE too): with no `allowed_mentions` in the request, every
 * kind is parsed (`@everyone` / `@here`, `<@id>` / `<@!id>`, `<@&id>`); with it, only the kinds
 * its `parse` names and the ids its `users` / `roles` list. An edit is parsed anew, "without
 * regard to whether or not an allowed_mentions was present in the request that originally
 * created the message" (Discord's Edit Message docs). The bot is taken to hold Mention
 * Everyone.
 */
export function mentionsOf(content: string, allowedMentions: unknown): MentionFields {
  const allowed = isRecord(allowedMentions) ? allowedMentions : undefined;
  const parse = allowed === undefined ? ["everyone", "users", "roles"] : listOf(allowed.parse);
  const users = allowed === undefined ? [] : listOf(allowed.users);
  const roles = allowed === undefined ? [] : listOf(allowed.roles);
  const found = (pattern: RegExp) => [...content.matchAll(pattern)].map((match) => match[1]!);
  return {
    mention_everyone: parse.includes("everyone") && /@(everyone|here)\b/.test(content),
    mentionedUserIds: unique(found(/<@!?(\d+)>/g)).filter(
      (id) => parse.includes("users") || users.includes(id),
    ),
    mention_roles: unique(found(/<@&(\d+)>/g)).filter(
      (id) => parse.includes("roles") || roles.includes(id),
    ),
  };
}

function listOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item) => typeof item === "string") : [];
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids)];
}
