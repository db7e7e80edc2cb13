import { type ApiAnswer, fail, ok } from "./protocol.js";

/** One entry of a command menu, as `setMyCommands` takes it. */
export interface MenuEntry {
  readonly command: string;
  readonly description: string;
}

/** Where a menu shows (`BotCommandScope`), as the bot sent it. */
export interface MenuScope {
  readonly type: string;
  readonly chat_id?: number | string;
  readonly user_id?: number;
}

const ScopeTypes = new Set([
  "default",
  "all_private_chats",
  "all_group_chats",
  "all_chat_administrators",
  "chat",
  "chat_administrators",
  "chat_member",
]);

/**
 * The bot's command menus by scope and language, as `setMyCommands`, `getMyCommands` and
 * `deleteMyCommands` keep them on the Bot API: a menu is stored for exactly the scope (and
 * `language_code`) it was set for; `getMyCommands` answers that one (an empty list when none);
 * setting an empty list, or deleting, removes it. Checks as Telegram does: at most 100
 * commands, names of 1–32 characters of `a-z`, `0-9`, `_`, descriptions of 1–256 characters,
 * and a known scope type with the chat id its type needs (of a chat the bot has met).
 */
export class CommandMenus {
  readonly #menus = new Map<string, MenuEntry[]>();

  /**
   * @param knownChat whether the bot has met a chat; a `chat`-scoped menu of any other chat is
   *   refused with 400 "chat not found", as Telegram refuses one for a user who never opened
   *   the bot. Default: every chat is known.
   */
  constructor(private readonly knownChat: (chatId: string) => boolean = () => true) {}

  /** The menu set for `scope` (default: the `default` scope) and language, if any. */
  get(scope: MenuScope = { type: "default" }, languageCode = ""): MenuEntry[] | undefined {
    return this.#menus.get(menuKey(scope, languageCode));
  }

  /** Every menu set now, keyed `type[:chat_id][:user_id][/language]`. */
  all(): ReadonlyMap<string, readonly MenuEntry[]> {
    return this.#menus;
  }

  call(method: string, params: Record<string, unknown>): ApiAnswer {
    const scope = parseScope(params.scope);
    if (typeof scope === "string") return fail(400, `Bad Request: ${scope}`);
    const language = params.language_code === undefined ? "" : String(params.language_code);
    const key = menuKey(scope, language);
    if (scope.chat_id !== undefined && !this.knownChat(String(scope.chat_id))) {
      return fail(400, "Bad Request: chat not found");
    }
    if (method === "getMyCommands") return ok(this.#menus.get(key) ?? []);
    if (method === "deleteMyCommands") {
      this.#menus.delete(key);
      return ok(true);
    }
    const commands = parseJson(params.commands);
    if (!Array.isArray(commands)) return fail(400, 'Bad Request: parameter "commands" is required');
    if (commands.length > 100) return fail(400, "Bad Request: too many commands specified");
    const entries: MenuEntry[] = [];
    for (const raw of commands) {
      if (typeof raw !== "object" || raw === null)
        return fail(400, "Bad Request: BOT_COMMAND_INVALID");
      const { command, description } = raw as Record<string, unknown>;
      if (typeof command !== "string" || !/^[a-z0-9_]{1,32}$/.test(command)) {
        return fail(400, "Bad Request: BOT_COMMAND_INVALID");
      }
      if (typeof description !== "string" || description.length < 1 || description.length > 256) {
        return fail(400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID");
      }
      entries.push({ command, description });
    }
    if (entries.length === 0) this.#menus.delete(key);
    else this.#menus.set(key, entries);
    return ok(true);
  }
}

function parseJson(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

/** The scope of a call (absent: `default`), or what is wrong with it. */
function parseScope(value: unknown): MenuScope | string {
  const parsed = parseJson(value);
  if (parsed === undefined) return { type: "default" };
  if (typeof parsed !== "object" || parsed === null) return "can't parse BotCommandScope";
  const scope = parsed as Record<string, unknown>;
  if (typeof scope.type !== "string" || !ScopeTypes.has(scope.type)) {
    return "wrong BotCommandScope type specified";
  }
  const needsChat = ["chat", "chat_administrators", "chat_member"].includes(scope.type);
  if (needsChat && (scope.chat_id === undefined || scope.chat_id === "")) {
    return "chat_id is empty";
  }
  if (scope.type === "chat_member" && typeof scope.user_id !== "number") {
    return "user_id is empty";
  }
  return {
    type: scope.type,
    ...(needsChat ? { chat_id: scope.chat_id as number | string } : {}),
    ...(scope.type === "chat_member" ? { user_id: scope.user_id as number } : {}),
  };
}

function menuKey(scope: MenuScope, languageCode: string): string {
  const chat = scope.chat_id === undefined ? "" : `:${scope.chat_id}`;
  const user = scope.user_id === undefined ? "" : `:${scope.user_id}`;
  return `${scope.type}${chat}${user}${languageCode === "" ? "" : `/${languageCode}`}`;
}
