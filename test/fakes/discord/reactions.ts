import { discordError } from "./requests.js";
import type { World } from "./world.js";

/** One reaction request of the bot the fake accepted. */
export interface ReactionChange {
  readonly op: "add" | "remove";
  readonly channelId: string;
  readonly messageId: string;
  /** The unicode emoji, decoded from the path. */
  readonly emoji: string;
}

const ReactionPath = /^\/channels\/(\d+)\/messages\/(\d+)\/reactions\/([^/]+)\/(?:@|%40)me$/;
/** A custom emoji (`name:id`) or anything that is not one emoji-ish character sequence. */
const NotUnicodeEmoji = /[A-Za-z0-9:\s]/;

/**
 * The bot's own reactions (`PUT`/`DELETE /channels/:id/messages/:id/reactions/:emoji/@me`), as
 * Discord answers them: 204; adding one it already has or removing one it has not is still
 * 204; 404 Unknown Message (10008) for a message the channel does not hold; 400 Unknown Emoji
 * (10014) for an emoji that is not a unicode one (custom emojis are not modelled).
 */
export class FakeReactions {
  readonly changes: ReactionChange[] = [];
  readonly #current = new Map<string, string[]>();

  constructor(private readonly world: World) {}

  /** The bot's reactions on the message now, in the order added. */
  on(channelId: string, messageId: string): readonly string[] {
    return this.#current.get(`${channelId}:${messageId}`) ?? [];
  }

  /** The answer to a reaction request, or `undefined` when `path` is not one. */
  route(
    method: string,
    path: string,
  ): { readonly status: number; readonly body?: unknown } | undefined {
    const match = ReactionPath.exec(path);
    if (match === null) return undefined;
    const [, channelId = "", messageId = "", encoded = ""] = match;
    if (method !== "PUT" && method !== "DELETE") {
      return { status: 405, body: discordError(0, "405: Method Not Allowed") };
    }
    if (!this.world.channelJson(channelId)) {
      return { status: 404, body: discordError(10003, "Unknown Channel") };
    }
    const known =
      this.world.history(channelId).some((m) => m.id === messageId) ||
      this.world.messages.some((m) => m.id === messageId && m.channelId === channelId);
    if (!known) return { status: 404, body: discordError(10008, "Unknown Message") };
    let emoji: string;
    try {
      emoji = decodeURIComponent(encoded);
    } catch {
      return { status: 400, body: discordError(10014, "Unknown Emoji") };
    }
    if (emoji === "" || NotUnicodeEmoji.test(emoji)) {
      return { status: 400, body: discordError(10014, "Unknown Emoji") };
    }
    const key = `${channelId}:${messageId}`;
    const shown = this.#current.get(key) ?? [];
    const op = method === "PUT" ? "add" : "remove";
    const next =
      op === "add"
        ? [...shown.filter((e) => e !== emoji), emoji]
        : shown.filter((e) => e !== emoji);
    this.#current.set(key, next);
    this.changes.push({ op, channelId, messageId, emoji });
    return { status: 204 };
  }
}
